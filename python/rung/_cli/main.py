"""`python3 -m rung [--server URL] [--token T] COMMAND [ARGS]` (cli/main.c):
one table names every command with its arguments, a line of help, the
function that runs it and how to add its arguments, so that --help and
the dispatch cannot disagree. main() turns what a command raises into the
C client's lines on stderr and its exit statuses.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Callable, Optional, Sequence

from ..client import ApiError, Client, RungError, UnreachableError
from .commands import (EXIT_ERROR, EXIT_OK, EXIT_USAGE, CliError, UsageError, interval,
                       positive_int)
from .analysis import cmd_importance
from .control import (cmd_delete, cmd_extend, cmd_logs, cmd_pause, cmd_resume, cmd_retry,
                      cmd_set, cmd_stop_trial)
from .experiments import cmd_best, cmd_cancel, cmd_export, cmd_ls, cmd_show, cmd_submit
from .fetch import cmd_fetch
from .launch import cmd_launch
from .meta import cmd_note, cmd_tag
from .fmt import clean
from .rest import print_api_error
from .watch import cmd_watch
from .users import cmd_admin, cmd_events, cmd_token
from .workers import cmd_workers


def cmd_run_function(client: Optional[Client], args: argparse.Namespace) -> int:
    from ..trial import run_function, run_pickled

    if args.pickled:
        run_pickled(args.file)
    elif args.function is None:
        raise SystemExit("rung: run-function: FUNC is required (or --pickled FILE)")
    else:
        run_function(args.file, args.function)
    return EXIT_OK


def cmd_help(client: Optional[Client], args: argparse.Namespace) -> int:
    """Stands for `help` in main(), which prints the parser's help."""
    return EXIT_OK


class _Parser(argparse.ArgumentParser):
    """argparse with `rung: ...` usage errors and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"rung: {message}", file=sys.stderr)
        print("run 'python3 -m rung --help' for every command", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


# (name, arguments, help, function, how to add its arguments), in the
# order of --help: the C client's table (cli/main.c), then best and
# run-function.
_COMMANDS: list[tuple[str, str, str, Callable, Callable[[argparse.ArgumentParser], Any]]] = []


def _command(name: str, arguments: str, help_text: str, run: Callable,
             add: Callable[[argparse.ArgumentParser], Any] = lambda p: None) -> None:
    _COMMANDS.append((name, arguments, help_text, run, add))


def _id(p: argparse.ArgumentParser, name: str = "id", what: str = "the experiment's id") -> None:
    p.add_argument(name, type=positive_int, metavar=name.upper(), help=what)


def _trial_id(p: argparse.ArgumentParser) -> None:
    _id(p, "trial_id", "the trial's id")


def _add_json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the API's objects")


def _add_submit(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", metavar="SPEC", help="a spec as JSON, or YAML (.yaml, .yml); - "
                   "reads stdin")
    p.add_argument("-q", "--quiet", action="store_true", help="print only the id")
    p.add_argument("--yaml", action="store_true", help="read SPEC (or stdin) as YAML")
    p.add_argument("--wandb", action="store_true",
                   help="SPEC is a W&B sweep file (rung.convert says how it maps)")
    p.add_argument("--num-samples", type=positive_int, metavar="N",
                   help="set num_samples (a W&B sweep's random or bayes search needs it "
                   "when it has no run_cap)")
    p.add_argument("--working-dir", metavar="DIR",
                   help="pack DIR (minus .rungignore) and send it to the workers as the "
                   "trials' folder")


def _add_watch(p: argparse.ArgumentParser) -> None:
    _id(p)
    p.add_argument("--interval", type=interval, default=1.0, metavar="S",
                   help="seconds between polls (default 1)")


def _add_pause(p: argparse.ArgumentParser) -> None:
    _id(p)
    p.add_argument("--running", action="store_true", help="pause the running trials too")


def _add_extend(p: argparse.ArgumentParser) -> None:
    _id(p)
    p.add_argument("num_samples", type=positive_int, metavar="NUM_SAMPLES")


def _add_set(p: argparse.ArgumentParser) -> None:
    _id(p)
    p.add_argument("--priority", type=int, metavar="P")
    p.add_argument("--share", type=float, metavar="S")
    p.add_argument("--max-concurrent", type=int, metavar="N")
    p.add_argument("--num-samples", type=positive_int, metavar="N")


def _add_logs(p: argparse.ArgumentParser) -> None:
    _trial_id(p)
    p.add_argument("-f", "--follow", action="store_true",
                   help="print what is new until the trial ends")
    p.add_argument("--interval", type=interval, default=1.0, metavar="S",
                   help="seconds between polls with --follow (default 1)")


def _add_export(p: argparse.ArgumentParser) -> None:
    _id(p)
    p.add_argument("-o", "--output", metavar="FILE", help="the file (default: stdout)")


def _add_fetch(p: argparse.ArgumentParser) -> None:
    _trial_id(p)
    p.add_argument("dir", nargs="?", metavar="DIR", help="where to unpack (default trial-ID)")


def _add_launch(p: argparse.ArgumentParser) -> None:
    p.add_argument("launcher", choices=["slurm", "k8s"])
    p.add_argument("--max-jobs", type=positive_int, default=8, metavar="N")
    p.add_argument("--interval-s", type=positive_int, default=10, metavar="S")
    p.add_argument("--exit-idle-s", type=positive_int, default=120, metavar="S")
    p.add_argument("--name", default="rung", metavar="PREFIX")
    p.add_argument("--once", action="store_true", help="one pass, then exit")
    p.add_argument("--dry-run", action="store_true", help="print what one pass would start")
    p.add_argument("--partition", metavar="P")
    p.add_argument("--account", metavar="A")
    p.add_argument("--time", metavar="T")
    p.add_argument("--worker", metavar="PATH")
    p.add_argument("--worker-token-file", metavar="F")
    p.add_argument("--dir", metavar="DIR")
    p.add_argument("--sbatch-arg", action="append", metavar="ARG")
    p.add_argument("--image", metavar="I")
    p.add_argument("--namespace", default="default", metavar="NS")
    p.add_argument("--token-secret", metavar="NAME")
    p.add_argument("--grace-s", type=positive_int, default=60, metavar="S")


def _add_workers(p: argparse.ArgumentParser) -> None:
    p.add_argument("--all", action="store_true", help="also the forgotten ones")
    _add_json(p)


def _add_events(p: argparse.ArgumentParser) -> None:
    p.add_argument("--follow", action="store_true", help="wait for new events")
    p.add_argument("--experiment", type=positive_int, metavar="ID")
    p.add_argument("--kind", metavar="K", help="a kind (trial.failed) or a family (trial)")
    p.add_argument("--actor", metavar="NAME")
    _add_json(p)


def _add_importance(p: argparse.ArgumentParser) -> None:
    _id(p)
    p.add_argument("--metric", metavar="NAME",
                   help="one metric instead of every objective and constraint")
    _add_json(p)


def _add_token(p: argparse.ArgumentParser) -> None:
    p.add_argument("words", nargs="+", metavar="create [NAME] | list | revoke ID")
    p.add_argument("--expires-days", type=positive_int, metavar="N")
    p.add_argument("--all", action="store_true", help="list: everyone's (admin)")
    _add_json(p)


def _add_admin(p: argparse.ArgumentParser) -> None:
    p.add_argument("words", nargs="+", metavar="user add NAME | user list | user remove ID")
    p.add_argument("--role", choices=("admin", "member", "viewer", "worker"))
    p.add_argument("--pool", metavar="K=V", help="bind a worker user's token to a pool")
    p.add_argument("--expires-days", type=positive_int, metavar="N")
    _add_json(p)


def _add_tag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--trial", action="store_true", help="ID is a trial's")
    _id(p, "id", "the experiment's (or with --trial the trial's) id")
    # REMAINDER: "-T" is a change, not an option.
    p.add_argument("changes", nargs=argparse.REMAINDER, metavar="+T|-T")


def _add_note(p: argparse.ArgumentParser) -> None:
    p.add_argument("--trial", action="store_true", help="ID is a trial's")
    _id(p, "id", "the experiment's (or with --trial the trial's) id")
    p.add_argument("text", nargs="?", metavar="TEXT|-")


def _add_best(p: argparse.ArgumentParser) -> None:
    _id(p)
    p.add_argument("--scope", choices=("all", "last"),
                   help="all: a trial's best value at any step; last: its last value "
                   "(default: the experiment's best_scope)")
    _add_json(p)


def _add_run_function(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE")
    p.add_argument("function", metavar="FUNC", nargs="?")
    p.add_argument("--pickled", action="store_true",
                   help="FILE holds the function itself, pickled by value (cloudpickle)")


_command("submit", "SPEC|- [--yaml] [-q] [--wandb] [--num-samples N]",
         "submit an experiment, JSON or YAML, or a W&B sweep (-q: print only its id)",
         cmd_submit, _add_submit)
_command("ls", "[--tag T] [--json]", "list experiments, newest first (--tag: those tagged T)",
         cmd_ls, lambda p: (p.add_argument("--tag", metavar="T"), _add_json(p)))
_command("show", "ID [--json]",
         "an experiment: settings, tags, notes, state, error, best trial, its best 20 trials",
         cmd_show,
         lambda p: (_id(p), _add_json(p)))
_command("watch", "ID [--interval S]", "follow an experiment until it ends", cmd_watch,
         _add_watch)
_command("cancel", "ID", "cancel an experiment (pending trials are dropped)", cmd_cancel, _id)
_command("pause", "ID [--running]",
         "lease nothing more (--running: pause running trials too, to resume later)",
         cmd_pause, _add_pause)
_command("resume", "ID", "resume a paused experiment", cmd_resume, _id)
_command("extend", "ID NUM_SAMPLES", "raise num_samples (a completed experiment runs again)",
         cmd_extend, _add_extend)
_command("set", "ID [--priority P] [--share S] [--max-concurrent N] [--num-samples N]",
         "change a submitted experiment's settings", cmd_set, _add_set)
_command("stop-trial", "TRIAL_ID", "stop one trial (stopped_by user)", cmd_stop_trial,
         _trial_id)
_command("tag", "[--trial] ID [+T|-T ...]",
         "add (+T, or T) and remove (-T) tags of an experiment (--trial: of a trial); none: "
         "print them", cmd_tag, _add_tag)
_command("note", "[--trial] ID [TEXT|-]",
         "set the notes of an experiment (--trial: of a trial) to TEXT ('-': read from stdin, "
         "'': clear); none: print them", cmd_note, _add_note)
_command("retry", "ID", "put the failed trials back in line (the experiment runs again)",
         cmd_retry, _id)
_command("delete", "ID", "delete an ended experiment with its trials and reports", cmd_delete,
         _id)
_command("importance", "ID [--metric NAME] [--json]",
         "which parameters matter: fANOVA over the completed trials", cmd_importance,
         _add_importance)
_command("logs", "TRIAL_ID [--follow] [--interval S]",
         "a trial's log tail (--follow: until the trial ends; exit 3 if it failed)", cmd_logs,
         _add_logs)
_command("export", "ID [-o FILE]", "write the experiment's trials as CSV", cmd_export,
         _add_export)
_command("fetch", "TRIAL_ID [DIR]",
         "a completed trial's kept artifacts, hash checked, unpacked into DIR (default trial-ID)",
         cmd_fetch, _add_fetch)
_command("launch", "slurm|k8s [--max-jobs N] [--interval-s S] [--exit-idle-s S] [--name PREFIX] "
         "[--once] [--dry-run]; slurm: [--partition P] [--account A] [--time T] [--worker PATH] "
         "[--worker-token-file F] [--dir DIR] [--sbatch-arg ARG]...; k8s: --image I "
         "[--namespace NS] [--token-secret NAME] [--grace-s S]",
         "start workers as Slurm jobs or Kubernetes Jobs while trials wait (docs/workers.md)",
         cmd_launch, _add_launch)
_command("workers", "[--all] [--json]",
         "list workers, their GPUs, running trials (--all: gone ones too)", cmd_workers,
         _add_workers)
_command("events", "[--follow] [--experiment ID] [--kind K] [--actor NAME] [--json]",
         "the event log: who did what, when (--follow: wait for new ones)", cmd_events,
         _add_events)
_command("token", "create [NAME] [--expires-days N] | list [--all] [--json] | revoke ID",
         "your own tokens (a new one is printed alone on the last line)", cmd_token,
         _add_token)
_command("admin", "user add NAME --role admin|member|viewer|worker [--pool K=V] "
         "[--expires-days N] | user list [--json] | user remove ID",
         "users and roles (admin only; add prints the user's first token on its last line)",
         cmd_admin, _add_admin)
_command("best", "ID [--scope all|last] [--json]",
         "the best trial: its value, step and config", cmd_best, _add_best)
_command("run-function", "FILE FUNC | FILE --pickled",
         "(for workers) run FUNC(rung.config()) from the Python file FILE",
         cmd_run_function, _add_run_function)
_command("help", "", "show this help", cmd_help)


def _commands_text() -> str:
    """The command table of --help, laid out as the C client's."""
    lines = ["commands:"]
    for name, arguments, help_text, _, _ in _COMMANDS:
        head = f"{name} {arguments}".rstrip()
        if len(head) > 34:
            lines.append(f"  {head}")
            lines.append(f"  {'':<34}  {help_text}")
        else:
            lines.append(f"  {head:<34}  {help_text}")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """The parser of `python3 -m rung`, with one subcommand per verb."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--server", metavar="URL", default=argparse.SUPPRESS,
                        help="rungd's address (default $RUNG_SERVER, else "
                        "http://127.0.0.1:8080)")
    common.add_argument("--token", metavar="T", default=argparse.SUPPRESS,
                        help="the bearer token (default $RUNG_TOKEN)")
    common.add_argument("--token-file", metavar="FILE", default=argparse.SUPPRESS,
                        help="read the token from FILE instead (not shown by ps)")
    common.add_argument("--ca", metavar="FILE", default=argparse.SUPPRESS,
                        help="the CA that verifies an https:// daemon (default $RUNG_CA)")
    common.add_argument("--insecure", action="store_true", default=argparse.SUPPRESS,
                        help="do not verify the https:// daemon's certificate")
    common.add_argument("--allow-plain-http", action="store_true", default=argparse.SUPPRESS,
                        help="send the token over http:// to another machine")
    parser = _Parser(prog="python3 -m rung", parents=[common],
                     usage="python3 -m rung [--server URL] [--token T] COMMAND [ARGS]",
                     formatter_class=argparse.RawDescriptionHelpFormatter,
                     description="Rung's command line client in Python: the verbs of the C "
                     "client `rung`\n(docs/api.md, Command lines), and best.\n\n"
                     + _commands_text(),
                     epilog="Exit status: 0 done, 1 the request failed, 2 bad arguments.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser,
                                help=argparse.SUPPRESS)
    for name, _, help_text, run, add in _COMMANDS:
        p = sub.add_parser(name, prog=f"python3 -m rung {name}", description=help_text,
                           parents=[common])
        add(p)
        p.set_defaults(run=run)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs one command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "run", None) is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    if args.run is cmd_help:
        parser.print_help(sys.stdout)
        return EXIT_OK
    if args.run is cmd_run_function:
        return cmd_run_function(None, args)
    token = getattr(args, "token", None)
    if getattr(args, "token_file", None):
        try:
            with open(args.token_file, encoding="utf-8") as f:
                lines = [line.strip() for line in f if line.strip()]
        except OSError as err:
            print(f"rung: --token-file {clean(args.token_file)}: {clean(err.strerror or str(err))}",
                  file=sys.stderr)
            return EXIT_USAGE
        if len(lines) != 1:
            print(f"rung: --token-file {clean(args.token_file)}: one token on one line",
                  file=sys.stderr)
            return EXIT_USAGE
        token = lines[0]
    try:
        client = Client(server=getattr(args, "server", None), token=token,
                        ca=getattr(args, "ca", None), insecure=getattr(args, "insecure", None),
                        allow_plain_http=getattr(args, "allow_plain_http", None))
    except RungError as err:
        print(f"rung: {clean(str(err))}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return args.run(client, args)
    except UsageError as err:
        print(f"rung: {err}", file=sys.stderr)
        return EXIT_USAGE
    except ApiError as err:
        print_api_error(err)
        return EXIT_ERROR
    except UnreachableError as err:
        print(f"rung: {clean(str(err))}", file=sys.stderr)
        return EXIT_ERROR
    except (CliError, RungError) as err:
        print(f"rung: {clean(str(err))}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `python3 -m rung ls | head`: the reader left; nothing to report.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return EXIT_OK
