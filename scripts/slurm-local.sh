#!/usr/bin/env bash
# Runs examples/slurm/sweep-array.sh for real on a one-node Slurm on this machine (issue 16):
# installs Debian's slurm-wlm (slurmctld, slurmd, munge), configures controller and node on
# localhost, submits the job array and its merge job, waits for them, and checks that the
# merged sweep equals the unsharded one byte for byte.
#
#   sudo scripts/slurm-local.sh            # needs root (apt-get, daemons)
#
# Settings (environment): SHARDS [3], SWEEP_BASE [E1's scenario at -D 5s so the check is
# quick; the example's own default is E1's 30 s], OUT_DIR [a new temporary directory],
# TICKLAB [target/release/ticklab, built if missing]. The daemons are left running for a
# second run; `scripts/slurm-local.sh stop` stops the ones this script started.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
state=/var/lib/ticklab-slurm

stop() {
    for p in slurmd slurmctld munged; do
        if [ -s "$state/$p.pid" ]; then
            kill "$(cat "$state/$p.pid")" 2>/dev/null || true
            rm -f "$state/$p.pid"
        fi
    done
    echo "stopped the Slurm daemons this script started"
}
if [ "${1:-}" = stop ]; then stop; exit 0; fi

[ "$(id -u)" = 0 ] || { echo "slurm-local.sh: run as root (it installs and starts daemons)" >&2; exit 2; }

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y slurm-wlm
fi

mkdir -p "$state" /var/lib/slurm/slurmctld /var/lib/slurm/slurmd /var/log/slurm /run/munge
node=$(hostname -s)
cpus=$(nproc)

# munge: the key the package made (create one if it did not), daemon as the munge user.
if [ ! -s /etc/munge/munge.key ]; then
    dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null
fi
chown munge:munge /etc/munge/munge.key /run/munge /var/lib/munge /var/log/munge 2>/dev/null || true
chmod 400 /etc/munge/munge.key
if ! munge -n >/dev/null 2>&1; then
    runuser -u munge -- /usr/sbin/munged
    sleep 1
    pgrep -u munge -n munged > "$state/munged.pid"
fi
munge -n | unmunge >/dev/null && echo "munge: ok"

# One node, one partition, no cgroups (a VM or container may not delegate them), no
# accounting database.
cat > /etc/slurm/slurm.conf <<CONF
# Written by ticklab scripts/slurm-local.sh: a one-node cluster on localhost.
ClusterName=ticklab-local
SlurmctldHost=$node(127.0.0.1)
AuthType=auth/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=local Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF

if ! scontrol ping 2>/dev/null | grep -q UP; then
    slurmctld
    sleep 2
fi
if ! pgrep -x slurmd >/dev/null; then
    slurmd
    sleep 2
fi
for _ in $(seq 30); do
    sinfo -h -o %T | grep -qE '^(idle|mixed|allocated)' && break
    scontrol update nodename="$node" state=resume 2>/dev/null || true
    sleep 1
done
echo "sinfo:"; sinfo

: "${TICKLAB:=$root/target/release/ticklab}"
[ -x "$TICKLAB" ] || cargo build --release
: "${SHARDS:=3}"
: "${SWEEP_BASE:=--kernel-version 6.3 -D 5s --warmup 2s}"
: "${OUT_DIR:=$(mktemp -d /tmp/ticklab-slurm.XXXXXX)}"
export TICKLAB SHARDS SWEEP_BASE OUT_DIR

examples/slurm/sweep-array.sh
read -r array merge < "$OUT_DIR/jobs"
echo "waiting for array job $array and merge job $merge ..."
for _ in $(seq 1800); do
    [ -z "$(squeue -h -j "$array,$merge" 2>/dev/null)" ] && break
    sleep 2
done
echo "sacct is off (no database); the jobs' own logs:"
cat "$OUT_DIR"/shard-*.log "$OUT_DIR/merge.log"
[ -s "$OUT_DIR/sweep.csv" ] || { echo "no merged sweep.csv: see the logs above" >&2; exit 1; }

# The same sweep in one process must give the same bytes.
# shellcheck disable=SC2086 # SWEEP_BASE is a list of flags
"$TICKLAB" sweep $SWEEP_BASE --file examples/sweeps/e1-grid.toml -q --format csv -o "$OUT_DIR/single.csv"
if cmp "$OUT_DIR/sweep.csv" "$OUT_DIR/single.csv"; then
    echo "merged Slurm output == unsharded sweep, byte for byte ($(($(wc -l < "$OUT_DIR/sweep.csv") - 1)) rows)"
else
    echo "merged Slurm output differs from the unsharded sweep" >&2
    exit 1
fi
echo "summary ($OUT_DIR/summary.csv, first columns):"
cut -d, -f1-8 "$OUT_DIR/summary.csv"
