#!/usr/bin/env bash
# A real single-node SLURM on this machine, for the launcher tests (tests/test_slurm.py) and for trying
# hydra/launcher=slurm locally (docs/scale.md, "A SLURM cluster on one machine").
#
#   scripts/setup/local_slurm.sh start    # install slurm-wlm + munge where missing (apt), write the config, start
#                                   # munged, slurmctld and slurmd, wait until the node is idle
#   scripts/setup/local_slurm.sh status   # one line: running (with the node's state) or not
#   scripts/setup/local_slurm.sh stop     # stop the three daemons (state and logs stay under $REGNN_SLURM_DIR)
#
# Idempotent: start on a running cluster only checks it is idle, stop on a stopped one does nothing. One node with
# this machine's cores and memory, one partition (`debug`), no cgroups (proctrack/linuxproc, task/none), slurm
# running as root. Needs root (apt, the daemons); says in one line what is missing when it cannot start.
# Everything it writes lives under $REGNN_SLURM_DIR (default /tmp/regnn-slurm) and /etc/slurm/slurm.conf.
set -euo pipefail

DIR=${REGNN_SLURM_DIR:-/tmp/regnn-slurm}
CONF=/etc/slurm/slurm.conf
WAIT_S=${REGNN_SLURM_WAIT_S:-60}

die() { echo "local_slurm: $*" >&2; exit 1; }

need_root() {
  [ "$(id -u)" = 0 ] || die "needs root (apt and the SLURM daemons); run it as root or with sudo"
}

install() {
  local missing=()
  for b in slurmctld slurmd sbatch munged; do command -v "$b" >/dev/null || missing+=("$b"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null || die "missing ${missing[*]} and no apt-get to install slurm-wlm and munge"
  echo "local_slurm: installing slurm-wlm and munge (missing: ${missing[*]})"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge >"$DIR/apt.log" 2>&1 \
    || { apt-get update -q >>"$DIR/apt.log" 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
         slurm-wlm munge >>"$DIR/apt.log" 2>&1; } \
    || die "apt-get install slurm-wlm munge failed (log: $DIR/apt.log)"
}

write_conf() {
  local host cpus mem
  host=$(hostname -s)
  cpus=$(nproc)
  mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))  # MB, 1 GB left to the system
  mkdir -p /etc/slurm "$DIR/ctld" "$DIR/d" "$DIR/log"
  cat >"$CONF.new" <<EOF
# written by scripts/setup/local_slurm.sh: one node, this machine
ClusterName=regnn-local
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
StateSaveLocation=$DIR/ctld
SlurmdSpoolDir=$DIR/d
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldTimeout=30
SlurmdTimeout=30
MinJobAge=60
KillWait=10
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
  mv "$CONF.new" "$CONF"
}

running() { pgrep -x "$1" >/dev/null; }

node_state() { sinfo -h -N -o %T 2>/dev/null | head -1; }

start() {
  need_root
  mkdir -p "$DIR"
  install
  if ! running munged; then
    [ -s /etc/munge/munge.key ] || { mungekey --create --keyfile /etc/munge/munge.key >/dev/null 2>&1 \
      || dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none; }
    chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key
    mkdir -p /run/munge /var/log/munge /var/lib/munge && chown munge:munge /run/munge /var/log/munge /var/lib/munge
    runuser -u munge -- /usr/sbin/munged || die "munged did not start (see /var/log/munge/munged.log)"
  fi
  if ! running slurmctld || ! running slurmd; then
    write_conf
    running slurmctld || slurmctld || die "slurmctld did not start (log: $DIR/log/slurmctld.log)"
    running slurmd || slurmd || die "slurmd did not start (log: $DIR/log/slurmd.log)"
  fi
  local state=""
  for _ in $(seq "$WAIT_S"); do
    state=$(node_state)
    case "$state" in
      idle|mixed|allocated) echo "local_slurm: node $(hostname -s) $state ($(nproc) CPUs, partition debug)"; return 0 ;;
      down*|drain*) scontrol update nodename="$(hostname -s)" state=resume >/dev/null 2>&1 || true ;;
    esac
    sleep 1
  done
  die "the node is not idle after ${WAIT_S}s (state: ${state:-none}; logs in $DIR/log)"
}

stop() {
  for d in slurmd slurmctld munged; do
    if running "$d"; then pkill -x "$d" || true; fi
  done
  for _ in $(seq 20); do
    running slurmd || running slurmctld || running munged || { echo "local_slurm: stopped"; return 0; }
    sleep 0.5
  done
  die "a daemon is still running after 10s: $(pgrep -l -x 'slurmd|slurmctld|munged' | tr '\n' ' ')"
}

status() {
  if running slurmctld && running slurmd; then
    echo "local_slurm: running, node $(hostname -s) $(node_state)"
  else
    echo "local_slurm: not running"
    return 3
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
