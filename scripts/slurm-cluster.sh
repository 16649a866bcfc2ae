#!/usr/bin/env bash
# A real two-node Slurm cluster on this one machine, for the tests of `replay --slurm`:
# Debian's slurm-wlm and munge, no systemd; two slurmd with different node names and ports on
# localhost, one slurmctld, one munged, every file under one state folder.
#
#   bash scripts/slurm-cluster.sh start   # installs the packages when missing, starts, waits
#   bash scripts/slurm-cluster.sh env     # prints `export SLURM_CONF=...` for a client
#   bash scripts/slurm-cluster.sh stop    # cancels every job, then stops the daemons by PID
#
# The state folder is $RIGAUDIT_SLURM_DIR (default /tmp/rigaudit-slurm). Process tracking is
# $RIGAUDIT_SLURM_PROCTRACK: `cgroup` (proctrack/cgroup on the cgroup v1 freezer, each node under
# /sys/fs/cgroup/freezer/slurm_<node>; what takes a rank's detached children with the job),
# `linuxproc` (by parent pid: a detached child escapes it), or `auto` (the default: cgroup when
# the freezer hierarchy is mounted and writable here, else linuxproc; a cgroup v2-only machine
# needs systemd for Slurm 22.05's cgroup/v2, which this script does not start). Facts this relies on:
# the controller's host name must be the machine's short name; per-node paths need %n (the
# temp folder too); clients without SLURM_CONF look the configuration up in DNS and fail; jobs
# are cancelled before slurmd stops, since steps outlive it.
set -euo pipefail

dir=${RIGAUDIT_SLURM_DIR:-/tmp/rigaudit-slurm}
port=${RIGAUDIT_SLURM_PORT:-16817}
conf="$dir/slurm.conf"
host=$(hostname -s)
proctrack=${RIGAUDIT_SLURM_PROCTRACK:-auto}

install_packages() {
    command -v slurmctld >/dev/null && command -v munged >/dev/null && return 0
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    local pkgs="slurm-wlm munge libpmix-dev"
    # A fresh machine's package lists may be stale or empty: update once when the install fails.
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q $pkgs >/dev/null 2>&1 ||
        { $sudo apt-get update -qq >/dev/null &&
            DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q $pkgs >/dev/null; }
}

# The tracking to configure: cgroup only where the cgroup v1 freezer can be written.
pick_proctrack() {
    local freezer=/sys/fs/cgroup/freezer
    case "$proctrack" in
    cgroup | linuxproc) echo "$proctrack" ;;
    auto)
        if [ -w "$freezer" ] && grep -qs " $freezer cgroup " /proc/mounts; then
            echo cgroup
        else
            echo linuxproc
        fi
        ;;
    *)
        echo "slurm-cluster: RIGAUDIT_SLURM_PROCTRACK=$proctrack: expected cgroup, linuxproc or auto" >&2
        return 2
        ;;
    esac
}

# cgroup.conf for proctrack/cgroup: v1, the freezer only (nothing constrained), mounted already.
write_cgroup_conf() {
    cat >"$dir/cgroup.conf" <<EOF
CgroupPlugin=cgroup/v1
CgroupMountpoint=/sys/fs/cgroup
CgroupAutomount=no
ConstrainCores=no
ConstrainRAMSpace=no
ConstrainDevices=no
EOF
}

write_conf() {
    local user cpus tracking
    user=$(id -un)
    cpus=$(nproc)
    tracking=$(pick_proctrack)
    rm -f "$dir/cgroup.conf"
    if [ "$tracking" = cgroup ]; then write_cgroup_conf; fi
    cat >"$conf" <<EOF
ClusterName=rigaudit
FirstJobId=$(((port % 1000) * 10000 + 1))
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
AuthInfo=socket=$dir/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/%n/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/%n/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/%n/slurmd.log
TmpFS=$dir/%n/tmp
ProctrackType=proctrack/$tracking
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
KillWait=2
MinJobAge=2
InactiveLimit=0
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=n1 NodeHostname=$host NodeAddr=127.0.0.1 Port=$((port + 1)) CPUs=$cpus State=UNKNOWN
NodeName=n2 NodeHostname=$host NodeAddr=127.0.0.1 Port=$((port + 2)) CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP
EOF
}

start_munge() {
    local key="$dir/munge.key"
    [ -f "$key" ] || { dd if=/dev/urandom of="$key" bs=1024 count=1 status=none; chmod 0400 "$key"; }
    munged --force --key-file="$key" --socket="$dir/munge.socket" \
        --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge.seed"
}

wait_for_nodes() {
    export SLURM_CONF="$conf"
    for _ in $(seq 1 100); do
        if [ "$(sinfo -h -N -o '%t' 2>/dev/null | grep -c idle)" -ge 2 ]; then
            return 0
        fi
        sleep 0.2
    done
    echo "slurm-cluster: the two nodes did not come up; logs in $dir" >&2
    sinfo -N >&2 || true
    return 1
}

start() {
    install_packages
    stop_quietly
    mkdir -p "$dir/ctld" "$dir/n1/spool" "$dir/n1/tmp" "$dir/n2/spool" "$dir/n2/tmp"
    chmod 0700 "$dir"
    write_conf
    start_munge
    slurmctld -f "$conf" -i
    slurmd -f "$conf" -N n1
    slurmd -f "$conf" -N n2
    wait_for_nodes
    echo "slurm-cluster: n1 and n2 idle ($(grep ^ProctrackType "$conf")); export SLURM_CONF=$conf"
}

stop_pid() {
    local file=$1
    [ -f "$file" ] || return 0
    local pid
    pid=$(cat "$file")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$file"
}

stop_quietly() {
    [ -f "$conf" ] && SLURM_CONF="$conf" scancel --full --quiet --user="$(id -un)" 2>/dev/null || true
    stop_pid "$dir/n1/slurmd.pid"
    stop_pid "$dir/n2/slurmd.pid"
    stop_pid "$dir/slurmctld.pid"
    stop_pid "$dir/munged.pid"
}

case "${1:-}" in
start) start ;;
stop) stop_quietly ;;
env) echo "export SLURM_CONF=$conf" ;;
*)
    echo "usage: $0 start|stop|env" >&2
    exit 2
    ;;
esac
