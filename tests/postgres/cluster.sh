#!/usr/bin/env bash
# A throwaway PostgreSQL for the tests of label `postgres` (docs/architecture.md, "Tests"):
#
#   bash tests/postgres/cluster.sh start DIR   # a cluster in DIR, on a free
#                                              # loopback port
#   bash tests/postgres/cluster.sh stop DIR    # stops it, removes DIR
#
# start runs Debian's postgresql-15 (initdb, pg_ctl) as an unprivileged user
# (`postgres` when run as root: PostgreSQL refuses root), listening on
# 127.0.0.1 only (no Unix socket outside DIR), with a role `rung` whose
# password is made here and required (scram-sha-256), and a database
# `rung`. It writes DIR/conninfo, the libpq connection string the tests
# read (the password is in the file, never on a command line), and
# DIR/port. Idempotent: a cluster already running in DIR is stopped and
# made again.
set -euo pipefail

cmd=${1:-}
dir=${2:-}
if [[ -z $cmd || -z $dir ]]; then
    echo "usage: $0 start|stop DIR" >&2
    exit 2
fi
bin=${PG_BIN:-/usr/lib/postgresql/15/bin}
if [[ ! -x $bin/initdb ]]; then
    echo "no PostgreSQL in $bin (Debian's postgresql-15: bash scripts/deps.sh --tests)" >&2
    exit 1
fi

# As the unprivileged user: `postgres` under root, else ourselves.
as_owner() {
    if [[ $(id -u) == 0 ]]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

stop() {
    if [[ -f $dir/data/postmaster.pid ]]; then
        as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w -t 20 stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
}

case $cmd in
stop)
    stop
    ;;
start)
    stop
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    # A free port: the kernel picks one for a socket we close at once.
    port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    password=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
    umask 077
    printf '%s\n' "$password" >"$dir/pwfile"
    if [[ $(id -u) == 0 ]]; then
        chown -R postgres: "$dir"
        chmod 700 "$dir"
    fi
    # The superuser `rung`, so that the tests may create and drop
    # databases; host connections need the password.
    as_owner "$bin/initdb" -D "$dir/data" -U rung --pwfile="$dir/pwfile" -A scram-sha-256 \
        -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 || {
        cat "$dir/initdb.log" >&2
        exit 1
    }
    # Loopback only; the Unix socket in DIR; small and quick (fsync is
    # kept: the durability tests rely on what a commit means).
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
        -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir -c max_connections=50 -c shared_buffers=64MB" \
        start >/dev/null || {
        cat "$dir/server.log" >&2
        exit 1
    }
    conninfo="host=127.0.0.1 port=$port user=rung password=$password dbname=postgres connect_timeout=5"
    # The tests' database.
    PGPASSWORD=$password "$bin/psql" -X -q -h 127.0.0.1 -p "$port" -U rung -d postgres \
        -c "CREATE DATABASE rung" >/dev/null
    printf '%s\n' "${conninfo/dbname=postgres/dbname=rung}" >"$dir/conninfo"
    printf '%s\n' "$port" >"$dir/port"
    echo "PostgreSQL on 127.0.0.1:$port (cluster in $dir)"
    ;;
*)
    echo "usage: $0 start|stop DIR" >&2
    exit 2
    ;;
esac
