"""`python3 -m rung admin user ...`, `token ...` and `events` (cli/users.c):
users and their tokens, and the log of who did what (docs/api.md, "Users,
roles and tokens" and "Events"). A new token is printed alone on the last
line, so that a script takes it with `tail -n 1`.
"""

from __future__ import annotations

import argparse
import json

from ..client import Client
from .commands import EXIT_OK, UsageError, print_json
from .fmt import clean
from .table import table


def _print_new_token(r: dict, user: str) -> None:
    expires = r.get("expires_at")
    print(f"token {r.get('token_id')} of {user}"
          + (f", expires {expires}" if expires else "") + " (shown once: keep it now)")
    print(r.get("token", ""))


def cmd_admin(client: Client, args: argparse.Namespace) -> int:
    words = list(args.words)
    if len(words) < 2 or words[0] != "user" or words[1] not in ("add", "list", "remove"):
        raise UsageError("admin: user add NAME --role ROLE | user list | user remove ID")
    what, rest = words[1], words[2:]
    if what == "add":
        if len(rest) != 1 or not args.role:
            raise UsageError("admin user add NAME --role admin|member|viewer|worker")
        labels = None
        if args.pool:
            key, eq, value = args.pool.partition("=")
            if not eq or not key:
                raise UsageError(f"--pool: KEY=VALUE, not '{args.pool}'")
            labels = {key: value}
        r = client.create_user(rest[0], args.role, labels=labels,
                               expires_in_days=args.expires_days)
        print(f"user {r['id']} {r['name']} added, role {r['role']}")
        _print_new_token(r, r["name"])
        return EXIT_OK
    if what == "list":
        users = client.list_users()
        if args.json:
            print_json({"items": users, "total": len(users)})
            return EXIT_OK
        rows = [[str(u["id"]), clean(u["name"]), u["role"],
                 ",".join(f"{k}={v}" for k, v in (u.get("labels") or {}).items()) or "-",
                 str(u["active_tokens"]), "removed" if u.get("removed_at") else "active"]
                for u in users]
        print(table(["ID", "NAME", "ROLE", "POOL", "TOKENS", "STATE"], rows, right=(0, 4)))
        return EXIT_OK
    if len(rest) != 1 or not rest[0].isdigit() or int(rest[0]) < 1:
        raise UsageError("admin user remove ID")
    r = client.remove_user(int(rest[0]))
    print(f"user {rest[0]} {r['name']} removed; every token of theirs is revoked")
    return EXIT_OK


def cmd_token(client: Client, args: argparse.Namespace) -> int:
    words = list(args.words)
    if not words or words[0] not in ("create", "list", "revoke"):
        raise UsageError("token: create [NAME] | list | revoke ID")
    if words[0] == "create":
        if len(words) > 2:
            raise UsageError("token create [NAME] [--expires-days N]")
        r = client.create_token(words[1] if len(words) == 2 else "token",
                                expires_in_days=args.expires_days)
        _print_new_token(r, r.get("user", "?"))
        return EXIT_OK
    if words[0] == "list":
        tokens = client.list_tokens(all=args.all)
        if args.json:
            print_json({"items": tokens, "total": len(tokens)})
            return EXIT_OK
        rows = [[str(t["id"]), clean(t["user"]), clean(t["name"]), t["created_at"],
                 t.get("expires_at") or "never",
                 "revoked" if t.get("revoked_at") else "active"] for t in tokens]
        print(table(["ID", "USER", "NAME", "CREATED", "EXPIRES", "STATE"], rows, right=(0,)))
        return EXIT_OK
    if len(words) != 2 or not words[1].isdigit() or int(words[1]) < 1:
        raise UsageError("token revoke ID")
    client.revoke_token(int(words[1]))
    print(f"token {words[1]} revoked")
    return EXIT_OK


def _event_line(e: dict) -> str:
    """As cli/users.c prints one: time, id, actor, kind, ids, detail."""
    parts = [e.get("at", "?"), f"#{e.get('id')}", (e.get("actor") or {}).get("name", "?"),
             e.get("kind", "?")]
    for key, name in (("experiment_id", "experiment"), ("trial_id", "trial"),
                      ("worker_id", "worker")):
        if e.get(key):
            parts.append(f"{name}={e[key]}")
    if e.get("detail"):
        parts.append(clean(json.dumps(e["detail"], sort_keys=True, separators=(",", ":"),
                                      ensure_ascii=False)))
    return " ".join(parts)


def cmd_events(client: Client, args: argparse.Namespace) -> int:
    for e in client.iter_events(follow=args.follow, kind=args.kind,
                                experiment=args.experiment, actor=args.actor):
        print(json.dumps(e, separators=(",", ":")) if args.json else _event_line(e),
              flush=True)
    return EXIT_OK
