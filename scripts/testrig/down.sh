#!/usr/bin/env bash
# scripts/testrig/down.sh — stop the daemons scripts/testrig/up.sh started.
# Only pids read from the rig's pid files are signalled, after checking /proc/PID/comm
# names the expected daemon. Leftover slurmstepd processes are killed only when their
# environment shows they belong to this rig. State (job ids, DB, keys) is kept; use
# `RIG_FRESH=1 scripts/testrig/up.sh` to wipe it. Removes $RIG/rig.env so tests skip.
set -uo pipefail
RIG=${RIG:-/tmp/mosaic-rig}
CLUSTERS=(alpha beta)

log() { printf '[testrig/down] %s\n' "$*"; }
alive() { local st; st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) && [[ -n $st && $st != Z ]]; }
stop() { # stop PIDFILE COMM
  local pf=$1 comm=$2 pid i
  [[ -s $pf ]] || return 0
  pid=$(<"$pf")
  if [[ $pid =~ ^[0-9]+$ && -r /proc/$pid/comm && $(</proc/$pid/comm) == "$comm"* ]]; then
    kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < 200; i++)); do alive "$pid" || break; sleep 0.1; done
    if alive "$pid"; then log "$comm ($pid) still alive after 20s, SIGKILL"; kill -KILL "$pid" 2>/dev/null; sleep 0.5; fi
    log "stopped $comm (pid $pid)"
  else
    log "stale pid file $pf (pid $pid is not a running $comm)"
  fi
  rm -f "$pf"
}
rig_stepds() {
  local p
  for p in /proc/[0-9]*; do
    [[ $(cat "$p/comm" 2>/dev/null) == slurmstepd ]] || continue
    { tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -q "^SLURM_CONF=$RIG/" && echo "${p#/proc/}"
  done
}

rm -f "$RIG/rig.env"
for c in "${CLUSTERS[@]}"; do
  conf=$RIG/$c/etc/slurm.conf
  [[ -f $conf ]] || continue
  if SLURM_CONF=$conf timeout 5 scontrol ping >/dev/null 2>&1; then
    ids=$(SLURM_CONF=$conf squeue -h -t PD,R,CG,S -o %i 2>/dev/null | tr '\n' ' ')
    if [[ -n ${ids// } ]]; then log "$c: cancelling jobs $ids"; SLURM_CONF=$conf scancel $ids 2>/dev/null; fi
  fi
done
for ((i = 0; i < 40; i++)); do [[ -z $(rig_stepds) ]] && break; sleep 0.25; done

for c in "${CLUSTERS[@]}"; do
  stop "$RIG/ssh/sshd_$c.pid" sshd
  stop "$RIG/$c/run/slurmd.pid" slurmd
  stop "$RIG/$c/run/slurmctld.pid" slurmctld
done
for p in $(rig_stepds); do log "killing leftover slurmstepd $p"; kill -KILL "$p" 2>/dev/null; done
# PBS (scripts/testrig/pbs.sh): delete the rig user's jobs, then stop the complex.
stop "$RIG/ssh/sshd_pbs.pid" sshd
if [[ -f $RIG/pbs/pbs.env && -x /etc/init.d/pbs ]]; then
  pbs_user=$(sed -n 's/^RIG_PBS_USER=//p' "$RIG/pbs/pbs.env")
  if [[ -n $pbs_user ]] && timeout 5 /opt/pbs/bin/qstat -Q >/dev/null 2>&1; then
    ids=$(timeout 10 /opt/pbs/bin/qselect -u "$pbs_user" 2>/dev/null | tr '\n' ' ')
    if [[ -n ${ids// } ]]; then log "pbs: deleting jobs $ids"; timeout 20 /opt/pbs/bin/qdel -W force $ids 2>/dev/null; fi
  fi
  /etc/init.d/pbs stop >/dev/null 2>&1 && log "stopped PBS"
fi
stop "$RIG/dbd/run/slurmdbd.pid" slurmdbd
stop "$RIG/db/run/mariadbd.pid" mariadbd
stop "$RIG/munge/munged.pid" munged
log "done"
