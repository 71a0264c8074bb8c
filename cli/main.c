/* rung: the command line client of the Rung daemon.
 *
 *   rung [--server URL] [--token T] COMMAND [ARGS]
 *
 * One table below names every command with its arguments and a line of
 * help, so the usage text and the dispatch cannot disagree. Global options
 * may stand before or after the command (people type `rung ls --server X`
 * as often as `rung --server X ls`); RUNG_SERVER and RUNG_TOKEN stand in for
 * them (docs/api.md, "Command lines"). Exit status: 0 done, 1 the request failed,
 * 2 bad arguments. */
#include <curl/curl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "rest.h"
#include "secret.h"
#include "version.h"

/* Where rungd listens when started without --port (docs/api.md). */
#define DEFAULT_SERVER "http://127.0.0.1:8080"
/* Arguments we keep after taking the global options out; more than any
 * command takes, so a longer line is simply wrong. */
#define ARGS_MAX 64

typedef struct {
    const char *name;
    const char *args; /* its arguments, as the usage shows them */
    const char *help; /* one line */
    int (*run)(CliRest *h, int argc, char **argv);
} Command;

static const Command commands[] = {
    {"submit",
     "SPEC.json|SPEC.yaml|SWEEP.yaml|- [--yaml] [-q] [--working-dir DIR] [--num-samples N] "
     "[--name NAME]",
     "submit an experiment, JSON or YAML, or a W&B sweep file, converted (-q: print only its "
     "id; --working-dir: DIR, minus .rungignore, goes to the workers as the trials' folder; "
     "--num-samples, --name: a sweep's size and name)",
     cli_cmd_submit},
    {"ls", "[--tag T] [--json]",
     "list experiments, newest first (--tag: those tagged T; --json: the API's objects)",
     cli_cmd_ls},
    {"show", "ID [--json]",
     "an experiment: settings, tags, notes, state, error, best trial, its best 20 trials",
     cli_cmd_show},
    {"watch", "ID [--interval S] [--rows N]", "follow an experiment live until it ends",
     cli_cmd_watch},
    {"cancel", "ID", "cancel an experiment (pending trials are dropped)", cli_cmd_cancel},
    {"pause", "ID [--running]",
     "lease nothing more (--running: pause running trials too, to resume later)", cli_cmd_pause},
    {"resume", "ID", "resume a paused experiment", cli_cmd_resume},
    {"extend", "ID NUM_SAMPLES", "raise num_samples (a completed experiment runs again)",
     cli_cmd_extend},
    {"set", "ID [--priority P] [--share S] [--max-concurrent N] [--num-samples N]",
     "change a submitted experiment's settings", cli_cmd_set},
    {"tag", "[--trial] ID [+T|-T ...]",
     "add (+T, or T) and remove (-T) tags of an experiment (--trial: of a trial); none: print "
     "them",
     cli_cmd_tag},
    {"note", "[--trial] ID [TEXT|-]",
     "set the notes of an experiment (--trial: of a trial) to TEXT ('-': read from stdin, '': "
     "clear); none: print them",
     cli_cmd_note},
    {"stop-trial", "TRIAL_ID", "stop one trial (stopped_by user)", cli_cmd_stop_trial},
    {"retry", "ID", "put the failed trials back in line (the experiment runs again)",
     cli_cmd_retry},
    {"delete", "ID", "delete an ended experiment with its trials and reports", cli_cmd_delete},
    {"importance", "ID [--metric NAME] [--json]",
     "which parameters matter: fANOVA over the completed trials", cli_cmd_importance},
    {"logs", "TRIAL_ID [--follow] [--interval S]",
     "a trial's log tail (--follow: until the trial ends; exit 3 if it failed)", cli_cmd_logs},
    {"export", "ID [-o FILE]", "write the experiment's trials as CSV", cli_cmd_export},
    {"fetch", "TRIAL_ID [DIR]",
     "a completed trial's kept artifacts, hash checked, unpacked into DIR (default trial-ID)",
     cli_cmd_fetch},
    {"launch",
     "slurm|k8s [--max-jobs N] [--interval-s S] [--exit-idle-s S] [--name PREFIX] [--once] "
     "[--dry-run]; slurm: [--partition P] [--account A] [--time T] [--worker PATH] "
     "[--worker-token-file F] [--dir DIR] [--sbatch-arg ARG]...; k8s: --image I "
     "[--namespace NS] [--token-secret NAME] [--grace-s S]",
     "start workers as Slurm jobs or Kubernetes Jobs while trials wait (docs/workers.md)",
     cli_cmd_launch},
    {"workers", "[--all] [--json]",
     "list workers, their GPUs, running trials (--all: gone ones too)", cli_cmd_workers},
    {"events", "[--follow] [--experiment ID] [--kind K] [--actor NAME] [--json]",
     "the event log: who did what, when (--follow: wait for new ones)", cli_cmd_events},
    {"token", "create [NAME] [--expires-days N] | list [--all] [--json] | revoke ID",
     "your own tokens (a new one is printed alone on the last line)", cli_cmd_token},
    {"admin",
     "user add NAME --role admin|member|viewer|worker [--pool K=V] [--expires-days N]"
     " | user list [--json] | user remove ID",
     "users and roles (admin only; add prints the user's first token on its last line)",
     cli_cmd_admin},
    {"help", "", "show this help", NULL},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *out)
{
    fputs("usage: rung [--server URL] [--token T] COMMAND [ARGS]\n\ncommands:\n", out);
    for (size_t i = 0; i < N_COMMANDS; i++) {
        char head[96];
        snprintf(head, sizeof head, "%s %s", commands[i].name, commands[i].args);
        if (strlen(head) > 24)
            fprintf(out, "  %s\n  %-24s  %s\n", head, "", commands[i].help);
        else
            fprintf(out, "  %-24s  %s\n", head, commands[i].help);
    }
    fputs("\noptions:\n"
          "  --server URL   the daemon, or several comma-separated: a leader and its\n"
          "                 standbys (default $RUNG_SERVER, else " DEFAULT_SERVER ")\n"
          "  --token T      your token (default $RUNG_TOKEN)\n"
          "  --token-file FILE  read the token from FILE instead (not shown by ps)\n"
          "  --ca FILE      the CA that verifies an https:// daemon (default $RUNG_CA, else the "
          "system's)\n"
          "  --insecure     do not verify the https:// daemon's certificate ($RUNG_INSECURE=1)\n"
          "  --allow-plain-http  send the token over http:// to another machine "
          "($RUNG_ALLOW_PLAIN_HTTP=1)\n"
          "  -h, --help     show this help\n"
          "  --version      print the version and exit\n"
          "\nexperiment spec fields (docs/api.md, \"The experiment spec\"):\n"
          "  name metric mode (or metrics) constraints search_space searcher scheduler\n"
          "  num_samples max_concurrent_trials max_failures max_failed_trials best_scope\n"
          "  priority share worker_selector points_to_evaluate warm_start stop\n"
          "  resources_per_trial trainable keep_artifacts notify tags notes\n"
          "experiment states: running paused completed failed canceled (with ended_reason)\n"
          "\nexit status: 0 done, 1 the request failed, 2 bad arguments\n",
          out);
}

static int usage_error(const Command *c)
{
    if (c != NULL)
        fprintf(stderr, "usage: rung [--server URL] [--token T] %s %s\n", c->name, c->args);
    fputs("run 'rung --help' for every command\n", stderr);
    return CLI_EXIT_USAGE;
}

/* Takes the value of a global option: "--server URL" or "--server=URL".
 * Returns 1 when argv[*i] was that option (and advances *i past its value),
 * 0 when it was not, -1 when its value is missing. */
static int take_option(const char *name, int argc, char **argv, int *i, const char **value)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0)
        return 0;
    if (a[n] == '=') {
        *value = a + n + 1;
        return 1;
    }
    if (a[n] != '\0')
        return 0;
    if (*i + 1 >= argc)
        return -1;
    *value = argv[++*i];
    return 1;
}

int main(int argc, char **argv)
{
    const char *server = getenv("RUNG_SERVER");
    const char *token = getenv("RUNG_TOKEN");
    RungTransport transport = rung_transport_from_env();
    const char *token_file = NULL;
    char *rest[ARGS_MAX];
    int n_rest = 0;
    bool help = false;
    for (int i = 1; i < argc; i++) {
        int r;
        if (strcmp(argv[i], "--") == 0) {
            /* Everything after "--" is an argument, even "--token". */
            for (i++; i < argc && n_rest < ARGS_MAX; i++)
                rest[n_rest++] = argv[i];
            break;
        }
        if (strcmp(argv[i], "--insecure") == 0 || strcmp(argv[i], "--allow-plain-http") == 0) {
            *(argv[i][2] == 'i' ? &transport.insecure : &transport.allow_plain) = true;
            continue;
        }
        if ((r = take_option("--server", argc, argv, &i, &server)) != 0 ||
            (r = take_option("--token", argc, argv, &i, &token)) != 0 ||
            (r = take_option("--token-file", argc, argv, &i, &token_file)) != 0 ||
            (r = take_option("--ca", argc, argv, &i, &transport.ca_file)) != 0) {
            if (r < 0) {
                fprintf(stderr, "rung: %s needs a value\n", argv[i]);
                return usage_error(NULL);
            }
            continue;
        }
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            help = true;
            continue;
        }
        if (strcmp(argv[i], "--version") == 0) {
            printf("rung %s\n", rung_version);
            return CLI_EXIT_OK;
        }
        if (n_rest == ARGS_MAX) {
            fputs("rung: too many arguments\n", stderr);
            return usage_error(NULL);
        }
        rest[n_rest++] = argv[i];
    }
    if (help || (n_rest > 0 && strcmp(rest[0], "help") == 0)) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (n_rest == 0) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const Command *cmd = NULL;
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (commands[i].run != NULL && strcmp(commands[i].name, rest[0]) == 0)
            cmd = &commands[i];
    if (cmd == NULL) {
        fprintf(stderr, "rung: unknown command '%s'\n\n", rest[0]);
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (server == NULL || server[0] == '\0')
        server = DEFAULT_SERVER;
    /* A token from a file never shows on a command line (`ps`). */
    static SecretToken file_token[1];
    if (token_file != NULL) {
        int n;
        if (secret_load_tokens("rung", token_file, file_token, 1, &n) != 0)
            return CLI_EXIT_USAGE;
        token = file_token[0];
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fputs("rung: cannot initialize libcurl\n", stderr);
        return CLI_EXIT_ERROR;
    }
    CliError err;
    CliRest *h = cli_rest_new(server, token, &err);
    int rc;
    const char *why;
    if (h == NULL) {
        cli_error_print(&err, NULL);
        rc = CLI_EXIT_USAGE;
    } else if ((why = rung_plain_token_refusal(cli_rest_server(h), token && token[0],
                                               &transport)) != NULL) {
        fprintf(stderr, "rung: %s\n", why);
        rc = CLI_EXIT_USAGE;
    } else {
        cli_rest_set_transport(h, &transport);
        rc = cmd->run(h, n_rest - 1, rest + 1);
        if (rc == CLI_EXIT_USAGE)
            usage_error(cmd);
    }
    cli_rest_free(h);
    curl_global_cleanup();
    return rc;
}
