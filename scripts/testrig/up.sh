#!/usr/bin/env bash
# scripts/testrig/up.sh — bring up Mosaic's Slurm test rig on this machine.
#
# Two independent single-node Slurm clusters, "alpha" and "beta", on 127.0.0.1. Each node
# advertises fake hardware (64 CPUs, 256000 MB, gpu:a100:4 backed by mknod'ed character
# devices) in two partitions: "cpu" (default, MaxTime 2 days) and "gpuA100" (MaxTime 1 day).
# One munged, one slurmdbd (+ a private MariaDB on 127.0.0.1:3307) serve both, so `sacct`
# works. One sshd per cluster (127.0.0.1:2222 alpha, :2223 beta), key-only root login with a
# generated key; the client config has `Host rig-alpha` / `Host rig-beta`.
#
# When ready it writes $RIG/rig.env (KEY=VALUE lines, sourceable) which the Go integration
# tests read: SLURM_CONF_ALPHA, SLURM_CONF_BETA, RIG_SSH_CONFIG, RIG_SSH_HOST_ALPHA, ...
#
# Idempotent: missing Debian packages are installed, configs are rewritten only when they
# change, and only daemons that are not running (pid file + /proc/PID/comm) are started.
# Re-running on an up rig is a no-op apart from the readiness checks.
#
# Knobs:  RIG=/tmp/mosaic-rig   where everything lives (except /run/sshd, which sshd needs)
#         RIG_FRESH=1           stop everything and wipe job state and the DB first
#         RIG_PBS=0             skip the PBS complex (scripts/testrig/pbs.sh: OpenPBS built
#                               from ../shared/vendor, sshd 127.0.0.1:2224, `Host rig-pbs`)
# Tear down with scripts/testrig/down.sh (stops only what this script started).
set -euo pipefail

RIG=${RIG:-/tmp/mosaic-rig}
RIG_FRESH=${RIG_FRESH:-0}
RIG_PBS=${RIG_PBS:-1}         # 0: Slurm only (no OpenPBS build)
PBS_USER=${RIG_PBS_USER:-mosaicpbs}
PBS_SSH_PORT=${RIG_PBS_SSH_PORT:-2224}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

CLUSTERS=(alpha beta)
declare -A CTLD_PORT=([alpha]=6817 [beta]=6827)
declare -A SLURMD_PORT=([alpha]=6818 [beta]=6828)
declare -A SSH_PORT=([alpha]=2222 [beta]=2223)
DBD_PORT=6819
DB_PORT=3307
DB_USER=slurm
DB_PASS=mosaic-rig
NODE_CPUS=64; NODE_SOCKETS=2; NODE_CORES=32; NODE_MEM=256000
GPU_TYPE=a100; GPU_COUNT=4

T0=$(date +%s%N)
log() { local ds=$(( ($(date +%s%N) - T0) / 100000000 )); printf '[testrig/up %3d.%ds] %s\n' $((ds / 10)) $((ds % 10)) "$*"; }
die() { log "ERROR: $*"; exit 1; }

running() { # running PIDFILE COMM
  local pf=$1 comm=$2 pid
  [[ -s $pf ]] || return 1
  pid=$(<"$pf"); [[ $pid =~ ^[0-9]+$ ]] || return 1
  [[ -r /proc/$pid/comm && $(</proc/$pid/comm) == "$comm"* ]]
}
write_if_changed() { # write_if_changed DEST < content ; status 0 when the file changed
  local dest=$1 tmp; tmp=$(mktemp "$dest.XXXX")
  cat >"$tmp"
  if [[ -f $dest ]] && cmp -s "$tmp" "$dest"; then rm -f "$tmp"; return 1; fi
  mv -f "$tmp" "$dest"; return 0
}
wait_for() { # wait_for SECONDS WHAT CMD...
  local secs=$1 what=$2; shift 2
  local end=$(( $(date +%s) + secs ))
  until "$@" >/dev/null 2>&1; do
    (( $(date +%s) < end )) || die "timed out after ${secs}s waiting for $what"
    sleep 0.2
  done
}
wait_daemon() { # wait_daemon SECONDS WHAT PIDFILE COMM LOGFILE CMD...  (fails fast if the daemon died)
  local secs=$1 what=$2 pf=$3 comm=$4 lf=$5; shift 5
  local end=$(( $(date +%s) + secs )) grace=$(( $(date +%s) + 3 ))
  until "$@" >/dev/null 2>&1; do
    if (( $(date +%s) >= grace )) && ! running "$pf" "$comm"; then
      die "$what exited; last lines of $lf:
$(grep -v -e pmix -e 'MPI: Cannot' "$lf" 2>/dev/null | tail -5)"
    fi
    (( $(date +%s) < end )) || die "timed out after ${secs}s waiting for $what (see $lf)"
    sleep 0.2
  done
}
alive() { local st; st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) && [[ -n $st && $st != Z ]]; }
stop_pidfile() { # stop_pidfile PIDFILE COMM
  local pf=$1 comm=$2 pid i
  running "$pf" "$comm" || return 0
  pid=$(<"$pf"); kill -TERM "$pid"
  for ((i = 0; i < 200; i++)); do alive "$pid" || return 0; sleep 0.1; done
  kill -KILL "$pid"; sleep 0.5
}
port_listening() { ss -ltnH "sport = :$1" | grep -q .; }

[[ $(id -u) == 0 ]] || die "run as root (the rig runs slurmd/slurmctld/sshd as root)"
mkdir -p "$RIG"

if [[ $RIG_FRESH == 1 ]]; then
  log "RIG_FRESH=1: stopping daemons and wiping state"
  RIG=$RIG "$HERE/down.sh" || true
  for c in "${CLUSTERS[@]}"; do rm -rf "${RIG:?}/$c/state" "${RIG:?}/$c/spool" "${RIG:?}/$c/log"; done
  rm -rf "${RIG:?}/db/data" "${RIG:?}/dbd/log"
fi

# ---------------------------------------------------------------- packages
PKGS=(munge slurmctld slurmd slurm-client slurmdbd mariadb-server openssh-server openssh-client iproute2)
missing=()
for p in "${PKGS[@]}"; do
  [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) == "install ok installed" ]] || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >"$RIG/apt-install.log" 2>&1; then
    apt-get update -q >>"$RIG/apt-install.log" 2>&1 || true
    apt-get install -y -q --no-install-recommends "${missing[@]}" >>"$RIG/apt-install.log" 2>&1 \
      || die "apt-get install failed, see $RIG/apt-install.log"
  fi
  log "packages installed"
fi

HOST=$(hostname -s)
addr=$(getent ahostsv4 "$HOST" | awk 'NR==1{print $1}')
[[ $addr == 127.* ]] || log "WARNING: hostname $HOST resolves to '$addr', not loopback; slurmd/slurmdbd bind to that address"

# ---------------------------------------------------------------- munge
mkdir -p "$RIG/munge"; chmod 755 "$RIG/munge"
MUNGE_SOCK=$RIG/munge/munge.socket
[[ -s $RIG/munge/munge.key ]] || mungekey -c -k "$RIG/munge/munge.key" -b 1024
chmod 600 "$RIG/munge/munge.key"
if ! running "$RIG/munge/munged.pid" munged; then
  rm -f "$MUNGE_SOCK" "$MUNGE_SOCK.lock"
  munged --socket="$MUNGE_SOCK" --key-file="$RIG/munge/munge.key" \
         --pid-file="$RIG/munge/munged.pid" --log-file="$RIG/munge/munged.log" \
         --seed-file="$RIG/munge/munged.seed"
  log "munged started"
fi
wait_for 10 munged bash -c "munge -S '$MUNGE_SOCK' -n | unmunge -S '$MUNGE_SOCK'"

# ---------------------------------------------------------------- per-cluster configs
declare -A CHANGED
for c in "${CLUSTERS[@]}"; do
  d=$RIG/$c
  mkdir -p "$d"/{etc,run,state,spool,log,work,dev}
  # gres/gpu drops GPUs without File= and rejects plain files: make character devices
  # that alias /dev/null (1,3).
  for ((i = 0; i < GPU_COUNT; i++)); do
    f=$d/dev/nvidia$i
    [[ -c $f ]] && continue
    rm -f "$f"; mknod "$f" c 1 3
  done
  CHANGED[$c]=0
  write_if_changed "$d/etc/slurm.conf" <<EOF && CHANGED[$c]=1 || true
# generated by scripts/testrig/up.sh — Mosaic test rig cluster $c
ClusterName=$c
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=${CTLD_PORT[$c]}
SlurmdPort=${SLURMD_PORT[$c]}
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCK
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/run/slurmctld.pid
SlurmdPidFile=$d/run/slurmd.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
# backfill every 2 s (default 30 s) so small jobs start next to a job waiting for GPUs
SchedulerParameters=bf_interval=2
DefMemPerCPU=1000
SlurmdParameters=config_overrides
GresTypes=gpu
ReturnToService=2
EnforcePartLimits=ALL
MinJobAge=300
# walltime tests: kill at the limit, quickly — but KillWait (SIGTERM to SIGKILL) stays
# above spawn-site's 3 s grace for its agents' process groups, as Slurm's default (30 s)
# does: with less, a cancelled campaign slice is SIGKILLed before it can kill what of
# its agents ignored SIGTERM, and those escape proctrack/linuxproc once reparented.
OverTimeLimit=0
KillWait=5
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
AccountingStoragePass=$MUNGE_SOCK
AccountingStorageTRES=gres/gpu,gres/gpu:$GPU_TYPE
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30
JobCompType=jobcomp/filetxt
JobCompLoc=$d/log/jobcomp.txt
NodeName=$c-n1 NodeHostname=$HOST NodeAddr=127.0.0.1 Port=${SLURMD_PORT[$c]} CPUs=$NODE_CPUS Sockets=$NODE_SOCKETS CoresPerSocket=$NODE_CORES ThreadsPerCore=1 RealMemory=$NODE_MEM Gres=gpu:$GPU_TYPE:$GPU_COUNT State=UNKNOWN
PartitionName=cpu Nodes=$c-n1 Default=YES MaxTime=2-00:00:00 State=UP
PartitionName=gpuA100 Nodes=$c-n1 MaxTime=1-00:00:00 State=UP
EOF
  write_if_changed "$d/etc/gres.conf" <<EOF && CHANGED[$c]=1 || true
# generated by scripts/testrig/up.sh
AutoDetect=off
NodeName=$c-n1 Name=gpu Type=$GPU_TYPE File=$d/dev/nvidia[0-$((GPU_COUNT - 1))]
EOF
done

# ---------------------------------------------------------------- MariaDB + slurmdbd
DB=$RIG/db
mkdir -p "$DB"/{run,log}
if [[ ! -d $DB/data/mysql ]]; then
  rm -rf "$DB/data"; mkdir -p "$DB/data"
  mariadb-install-db --no-defaults --datadir="$DB/data" --user=root --skip-test-db \
    --auth-root-authentication-method=socket >"$DB/log/install-db.log" 2>&1 \
    || die "mariadb-install-db failed, see $DB/log/install-db.log"
  log "MariaDB datadir initialised"
fi
if ! running "$DB/run/mariadbd.pid" mariadbd; then
  setsid mariadbd --no-defaults --datadir="$DB/data" --socket="$DB/run/mysqld.sock" \
    --port=$DB_PORT --bind-address=127.0.0.1 --pid-file="$DB/run/mariadbd.pid" \
    --log-error="$DB/log/mariadbd.err" --user=root --skip-name-resolve \
    --innodb-buffer-pool-size=128M --innodb-log-file-size=48M --innodb-lock-wait-timeout=900 \
    </dev/null >/dev/null 2>&1 &
  wait_for 60 mariadbd mariadb-admin --no-defaults -S "$DB/run/mysqld.sock" -uroot ping
  log "mariadbd started (127.0.0.1:$DB_PORT)"
fi
mariadb --no-defaults -S "$DB/run/mysqld.sock" -uroot -e \
  "CREATE USER IF NOT EXISTS '$DB_USER'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
   GRANT ALL ON slurm_acct_db.* TO '$DB_USER'@'127.0.0.1'; FLUSH PRIVILEGES;"

DBD=$RIG/dbd
mkdir -p "$DBD"/{etc,run,log}; chmod 700 "$DBD/etc"
dbd_changed=0
write_if_changed "$DBD/etc/slurmdbd.conf" <<EOF && dbd_changed=1 || true
# generated by scripts/testrig/up.sh
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCK
DbdAddr=127.0.0.1
DbdHost=$HOST
DbdPort=$DBD_PORT
CommunicationParameters=NoInAddrAny
SlurmUser=root
DebugLevel=info
LogFile=$DBD/log/slurmdbd.log
PidFile=$DBD/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=$DB_USER
StoragePass=$DB_PASS
StorageLoc=slurm_acct_db
EOF
chmod 600 "$DBD/etc/slurmdbd.conf"
[[ $dbd_changed == 1 ]] && stop_pidfile "$DBD/run/slurmdbd.pid" slurmdbd
if ! running "$DBD/run/slurmdbd.pid" slurmdbd; then
  SLURM_CONF=$DBD/etc/slurm.conf slurmdbd   # slurmdbd reads dirname($SLURM_CONF)/slurmdbd.conf
  wait_daemon 30 "slurmdbd on :$DBD_PORT" "$DBD/run/slurmdbd.pid" slurmdbd "$DBD/log/slurmdbd.log" port_listening $DBD_PORT
  log "slurmdbd started (127.0.0.1:$DBD_PORT)"
fi

# ---------------------------------------------------------------- slurmctld + slurmd
for c in "${CLUSTERS[@]}"; do
  d=$RIG/$c; export SLURM_CONF=$d/etc/slurm.conf
  if [[ ${CHANGED[$c]} == 1 ]] && running "$d/run/slurmctld.pid" slurmctld; then
    log "$c: config changed, restarting slurmctld and slurmd"
    stop_pidfile "$d/run/slurmd.pid" slurmd
    stop_pidfile "$d/run/slurmctld.pid" slurmctld
  fi
  if ! running "$d/run/slurmctld.pid" slurmctld; then
    slurmctld -f "$SLURM_CONF"
    wait_daemon 30 "$c slurmctld" "$d/run/slurmctld.pid" slurmctld "$d/log/slurmctld.log" scontrol ping
    log "$c: slurmctld started (127.0.0.1:${CTLD_PORT[$c]})"
  fi
  if ! running "$d/run/slurmd.pid" slurmd; then
    slurmd -f "$SLURM_CONF" -N "$c-n1"
    wait_daemon 30 "$c slurmd" "$d/run/slurmd.pid" slurmd "$d/log/slurmd.log" port_listening "${SLURMD_PORT[$c]}"
    log "$c: slurmd started (node $c-n1, 127.0.0.1:${SLURMD_PORT[$c]})"
  fi
done

for c in "${CLUSTERS[@]}"; do
  export SLURM_CONF=$RIG/$c/etc/slurm.conf
  end=$(( $(date +%s) + 60 )); resumed=0; start=$(date +%s)
  while :; do
    st=$(sinfo -h -n "$c-n1" -N -o '%t' 2>/dev/null | head -1)
    [[ $st == idle || $st == mix* || $st == alloc* ]] && break
    if [[ $resumed == 0 && $(( $(date +%s) - start )) -ge 5 && $st =~ drain|drng|down|inval ]]; then
      log "$c: node state '$st', scontrol update state=resume"
      scontrol update nodename="$c-n1" state=resume || true; resumed=1
    fi
    (( $(date +%s) < end )) || die "$c: node $c-n1 not idle after 60s (state '$st'); see $RIG/$c/log/slurmd.log"
    sleep 0.3
  done
done

# an account association for root, so `sacctmgr show assoc user=root` has something to say
export SLURM_CONF=$RIG/alpha/etc/slurm.conf
if ! sacctmgr -n -P show assoc user=root account=rigacct format=account 2>/dev/null | grep -q rigacct; then
  sacctmgr -i add account rigacct cluster=alpha,beta description=mosaic-rig >/dev/null 2>&1 || true
  sacctmgr -i add user root account=rigacct cluster=alpha,beta >/dev/null 2>&1 || true
fi

# ---------------------------------------------------------------- sshd (one per cluster)
S=$RIG/ssh
mkdir -p "$S/home"; chmod 700 "$S"
mkdir -p /run/sshd; chmod 755 /run/sshd
[[ -s $S/host_ed25519 ]] || ssh-keygen -q -t ed25519 -N '' -f "$S/host_ed25519" -C mosaic-rig-host
[[ -s $S/id_ed25519 ]] || ssh-keygen -q -t ed25519 -N '' -f "$S/id_ed25519" -C mosaic-rig-client
cp "$S/id_ed25519.pub" "$S/authorized_keys"; chmod 600 "$S/authorized_keys"
for c in "${CLUSTERS[@]}"; do
  # StrictModes no: keys live under /tmp. HOME points at an empty dir so the login shell
  # does not source root's rc files (slow here). SLURM_CONF selects the cluster.
  ch=0
  write_if_changed "$S/sshd_$c.conf" <<EOF && ch=1 || true
# generated by scripts/testrig/up.sh
Port ${SSH_PORT[$c]}
ListenAddress 127.0.0.1
HostKey $S/host_ed25519
PidFile $S/sshd_$c.pid
AuthorizedKeysFile $S/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
SetEnv SLURM_CONF=$RIG/$c/etc/slurm.conf HOME=$S/home
MaxSessions 64
MaxStartups 64:30:128
EOF
  if running "$S/sshd_$c.pid" sshd && [[ $ch == 1 ]]; then kill -HUP "$(<"$S/sshd_$c.pid")"; fi
  if ! running "$S/sshd_$c.pid" sshd; then
    /usr/sbin/sshd -f "$S/sshd_$c.conf" -E "$S/sshd_$c.log"
    wait_for 10 "sshd :${SSH_PORT[$c]}" port_listening "${SSH_PORT[$c]}"
    log "$c: sshd started (127.0.0.1:${SSH_PORT[$c]})"
  fi
done
write_if_changed "$S/ssh_config" <<EOF || true
# generated by scripts/testrig/up.sh
Host rig-alpha
  HostName 127.0.0.1
  Port ${SSH_PORT[alpha]}
  User root
Host rig-beta
  HostName 127.0.0.1
  Port ${SSH_PORT[beta]}
  User root
Host rig-pbs
  HostName 127.0.0.1
  Port $PBS_SSH_PORT
  User $PBS_USER
Host *
  IdentityFile $S/id_ed25519
  IdentitiesOnly yes
  UserKnownHostsFile $S/known_hosts
  StrictHostKeyChecking accept-new
  BatchMode yes
  LogLevel ERROR
EOF
for c in "${CLUSTERS[@]}"; do
  out=$(ssh -F "$S/ssh_config" "rig-$c" 'sinfo -h -o "%R:%t"' 2>&1 | tr '\n' ' ') \
    || die "ssh check for $c failed: $out (see $S/sshd_$c.log)"
done

# ---------------------------------------------------------------- PBS (OpenPBS from source)
PBS_ENV=""
if [[ $RIG_PBS != 0 ]]; then
  RIG="$RIG" RIG_PBS_USER="$PBS_USER" RIG_PBS_SSH_PORT="$PBS_SSH_PORT" "$HERE/pbs.sh"
  out=$(ssh -F "$S/ssh_config" rig-pbs 'qstat -Q' 2>&1 | tr '\n' ' ') \
    || die "ssh check for rig-pbs failed: $out (see $S/sshd_pbs.log)"
  PBS_ENV=$(cat "$RIG/pbs/pbs.env")
fi

write_if_changed "$RIG/rig.env" <<EOF || true
# generated by scripts/testrig/up.sh; read by Mosaic's integration tests
RIG_DIR=$RIG
RIG_CLUSTERS=alpha,beta
RIG_ACCOUNTING=1
RIG_ACCOUNT=rigacct
SLURM_CONF_ALPHA=$RIG/alpha/etc/slurm.conf
SLURM_CONF_BETA=$RIG/beta/etc/slurm.conf
RIG_WORKDIR_ALPHA=$RIG/alpha/work
RIG_WORKDIR_BETA=$RIG/beta/work
RIG_SSH_CONFIG=$S/ssh_config
RIG_SSH_HOST_ALPHA=rig-alpha
RIG_SSH_HOST_BETA=rig-beta
RIG_SSH_PORT_ALPHA=${SSH_PORT[alpha]}
RIG_SSH_PORT_BETA=${SSH_PORT[beta]}
RIG_NODE_CPUS=$NODE_CPUS
RIG_NODE_MEM_MB=$NODE_MEM
RIG_GPU_TYPE=$GPU_TYPE
RIG_GPUS_PER_NODE=$GPU_COUNT
$PBS_ENV
EOF
log "ready: source $RIG/rig.env; SLURM_CONF=\$SLURM_CONF_ALPHA sinfo; ssh -F $S/ssh_config rig-alpha sinfo"
