#!/usr/bin/env bash
# A throwaway Slurm for tests/integration/test_slurm.py (docs/architecture.md, "Tests"):
#
#   bash tests/slurm/cluster.sh start DIR [NODES]  # a cluster in DIR
#   bash tests/slurm/cluster.sh stop DIR           # stops it, removes DIR
#
# start runs Debian's slurmctld, slurmd and munged (CPUs only) from DIR:
# DIR/slurm.conf (SLURM_CONF for sbatch, squeue and scancel), a munge key
# and socket of its own, state and logs, every daemon on 127.0.0.1 on
# ports found free, and NODES node names (default 1), all on this machine:
# one slurmd each, with a port of its own. It needs root (slurmd starts the
# jobs as their users) and exits 3 with the reason when it cannot run
# here, which the test reports as a skip. It waits until every node is
# idle. Idempotent: a cluster already in DIR is stopped first.
set -euo pipefail

cmd=${1:-}
dir=${2:-}
nodes=${3:-1}
if [[ -z $cmd || -z $dir ]]; then
    echo "usage: $0 start|stop DIR [NODES]" >&2
    exit 2
fi

stop() {
    [[ -d $dir ]] || return 0
    if [[ -f $dir/slurm.conf ]]; then
        SLURM_CONF=$dir/slurm.conf timeout 10 scancel --quiet --full --signal=KILL \
            "$(SLURM_CONF=$dir/slurm.conf timeout 10 squeue -h -o %i 2>/dev/null | tr '\n' ' ')" \
            >/dev/null 2>&1 || true
    fi
    for pidfile in "$dir"/run/*.pid; do
        [[ -f $pidfile ]] || continue
        pid=$(cat "$pidfile")
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
    done
    rm -rf "$dir"
}

case $cmd in
stop)
    stop
    ;;
start)
    if [[ $(id -u) != 0 ]]; then
        echo "Slurm's slurmd needs root to start jobs; this runs as $(id -un)" >&2
        exit 3
    fi
    for prog in slurmctld slurmd munged sbatch squeue scancel; do
        if ! command -v "$prog" >/dev/null; then
            echo "no $prog (Debian's slurmctld, slurmd, slurm-client, munge: bash scripts/deps.sh --tests)" >&2
            exit 3
        fi
    done
    stop
    mkdir -p "$dir"/{state,log,run,munge,spool}
    dir=$(cd "$dir" && pwd)
    free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
    host=$(hostname)
    cpus=$(nproc)
    {
        echo "ClusterName=rungtest"
        echo "SlurmctldHost=$host(127.0.0.1)"
        echo "SlurmctldPort=$(free_port)"
        echo "SlurmUser=root"
        echo "SlurmdUser=root"
        echo "AuthType=auth/munge"
        echo "AuthInfo=socket=$dir/munge/munge.socket"
        echo "CredType=cred/munge"
        echo "StateSaveLocation=$dir/state"
        echo "SlurmdSpoolDir=$dir/spool/%n"
        echo "SlurmctldPidFile=$dir/run/slurmctld.pid"
        echo "SlurmdPidFile=$dir/run/slurmd-%n.pid"
        echo "SlurmctldLogFile=$dir/log/slurmctld.log"
        echo "SlurmdLogFile=$dir/log/slurmd-%n.log"
        echo "ProctrackType=proctrack/linuxproc"
        echo "TaskPlugin=task/none"
        echo "SelectType=select/cons_tres"
        echo "SelectTypeParameters=CR_Core"
        echo "MpiDefault=none"
        echo "ReturnToService=2"
        echo "JobCompType=jobcomp/none"
        echo "AccountingStorageType=accounting_storage/none"
        echo "SchedulerType=sched/builtin"
        echo "KillWait=10"
        echo "MinJobAge=2"
        names=()
        for i in $(seq "$nodes"); do
            name=node$i
            [[ $nodes == 1 ]] && name=$host
            names+=("$name")
            echo "NodeName=$name NodeHostname=$host NodeAddr=127.0.0.1 Port=$(free_port) CPUs=$cpus State=UNKNOWN"
        done
        echo "PartitionName=debug Nodes=$(IFS=,; echo "${names[*]}") Default=YES MaxTime=INFINITE State=UP"
    } >"$dir/slurm.conf"
    export SLURM_CONF=$dir/slurm.conf
    umask 077
    head -c 1024 /dev/urandom >"$dir/munge/munge.key"
    umask 022
    munged --force --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
        --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" \
        --seed-file="$dir/munge/seed" >/dev/null 2>&1 || {
        echo "munged did not start: $(tail -n 3 "$dir/log/munged.log" 2>/dev/null)" >&2
        exit 3
    }
    slurmctld >/dev/null 2>&1 || {
        echo "slurmctld did not start: $(tail -n 3 "$dir/log/slurmctld.log" 2>/dev/null)" >&2
        exit 3
    }
    while read -r name; do
        if [[ $nodes == 1 ]]; then slurmd; else slurmd -N "$name"; fi >/dev/null 2>&1 || {
            echo "slurmd did not start: $(tail -n 3 "$dir"/log/slurmd-*.log 2>/dev/null)" >&2
            exit 3
        }
    done < <(grep -o '^NodeName=[^ ]*' "$dir/slurm.conf" | cut -d= -f2)
    for _ in $(seq 100); do
        states=$(sinfo -h -N -o %T 2>/dev/null | sort -u | tr '\n' ' ')
        [[ $states == "idle " ]] && break
        sleep 0.2
    done
    if [[ $states != "idle " ]]; then
        echo "the nodes are not idle after 20 s (${states:-no answer}): $(tail -n 3 "$dir"/log/slurmctld.log)" >&2
        exit 3
    fi
    echo "Slurm with $nodes node(s) of $cpus CPUs (SLURM_CONF=$dir/slurm.conf)"
    ;;
*)
    echo "usage: $0 start|stop DIR [NODES]" >&2
    exit 2
    ;;
esac
