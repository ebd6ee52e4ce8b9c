#!/usr/bin/env bash
# scripts/testrig/pbs.sh — the PBS part of Mosaic's test rig: OpenPBS built from
# ../shared/vendor/openpbs-src.tar.gz and run as a one-node complex on 127.0.0.1
# (server, scheduler, comm, mom and PBS's own PostgreSQL datastore), reached over its own
# sshd (127.0.0.1:2224, `Host rig-pbs`) as an unprivileged submitting user.
#
# Called by up.sh (RIG_PBS=0 skips it); run alone it needs the rig's ssh keys, so run
# up.sh. Writes $RIG/pbs/pbs.env (RIG_PBS_* lines) which up.sh copies into rig.env.
#
# Follows the verified recipe in ../shared/notes/pbs-from-source.md and
# ../shared/notes/pbs-rig-reference/recipe.sh: the loopback patch (PBS skips 127.x
# addresses when it resolves its own host), setuid pbs_iff/pbs_rcp after install, job
# history for `qstat -x`, an `ngpus` resource the scheduler enforces, a mailer stub.
#
# Idempotent: packages only when missing, the build only when the installed stamp does
# not match the tarball + patch, qmgr settings re-applied (cheap), daemons started only
# when not running. `scripts/testrig/down.sh` stops it.
#
# Layout:  queue workq  CPU, default, walltime max 24h (default 1h)
#          queue gpu    ngpus<=4, walltime max 4h (default 30m)
#          node         the machine's host name, 64 ncpus, 256000mb, 4 ngpus
#          user         $RIG_PBS_USER (default mosaicpbs), key login via rig-pbs
set -euo pipefail

RIG=${RIG:-/tmp/mosaic-rig}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC_TARBALL=${PBS_SRC_TARBALL:-$(cd "$HERE/../.." && pwd)/../shared/vendor/openpbs-src.tar.gz}
PBS_USER=${RIG_PBS_USER:-mosaicpbs}
PBS_SSH_PORT=${RIG_PBS_SSH_PORT:-2224}
PREFIX=/opt/pbs
P=$RIG/pbs
S=$RIG/ssh
PATCH_ID=allow-loopback-v1
export PATH=$PREFIX/bin:$PREFIX/sbin:$PATH

T0=$(date +%s%N)
log() { local ds=$(( ($(date +%s%N) - T0) / 100000000 )); printf '[testrig/pbs %3d.%ds] %s\n' $((ds / 10)) $((ds % 10)) "$*"; }
die() { log "ERROR: $*"; exit 1; }
[[ $(id -u) == 0 ]] || die "run as root (PBS daemons run as root)"
mkdir -p "$P"

# ---------------------------------------------------------------- packages
BUILD_PKGS=(gcc g++ make libtool autoconf automake libhwloc-dev libx11-dev libxt-dev libedit-dev libical-dev
  libncurses-dev perl postgresql-server-dev-all python3-dev tcl-dev tk-dev swig libexpat1-dev libssl-dev
  libxext-dev libxft-dev libcjson-dev)
RUN_PKGS=(expat libedit2 postgresql postgresql-contrib python3 tcl tk libical3 openssh-server)
missing=()
for p in "${BUILD_PKGS[@]}" "${RUN_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing ${#missing[@]} packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >"$P/apt.log" 2>&1; then
    apt-get update -qq >>"$P/apt.log" 2>&1 || true
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"$P/apt.log" 2>&1 \
      || { tail -30 "$P/apt.log"; die "apt-get install failed (see $P/apt.log)"; }
  fi
fi
id postgres >/dev/null 2>&1 || die "no postgres user (the postgresql package creates it; PBS's datastore runs as it)"

# ---------------------------------------------------------------- build + install
[[ -s $SRC_TARBALL ]] || die "no OpenPBS source at $SRC_TARBALL (set PBS_SRC_TARBALL)"
want_stamp="$(sha256sum "$SRC_TARBALL" | cut -c1-16)-$PATCH_ID"
STAMP=$PREFIX/.mosaic-rig-build
if [[ -x $PREFIX/sbin/pbs_server.bin && "$(cat "$STAMP" 2>/dev/null)" == "$want_stamp" ]]; then
  log "OpenPBS build up to date ($want_stamp)"
else
  B=$P/build
  rm -rf "$B"; mkdir -p "$B"
  log "building OpenPBS from $SRC_TARBALL (about 2 minutes on 2 cores)"
  tar -xzf "$SRC_TARBALL" -C "$B"
  cd "$B/openpbs"
  # PBS refuses 127.x addresses for its own host ("Could not find any usable IP address");
  # on a machine whose hostname resolves only to 127.0.0.1 nothing starts without this.
  perl -0pi -e 's/if \(ntohl\(sa->sin_addr\.s_addr\) >> 24 == IN_LOOPBACKNET\)\n(\t+)continue;/if (0 && ntohl(sa->sin_addr.s_addr) >> 24 == IN_LOOPBACKNET) \/* mosaic rig: allow loopback-only hosts *\/\n$1continue;/g' \
    src/lib/Libnet/hnls.c src/lib/Libtpp/tpp_platform.c
  n=$(cat src/lib/Libnet/hnls.c src/lib/Libtpp/tpp_platform.c | grep -c 'allow loopback-only hosts' || true)
  [[ $n == 2 ]] || die "the loopback patch applied $n times, want 2 (new OpenPBS source?)"
  ./autogen.sh >"$P/autogen.log" 2>&1 || { tail -20 "$P/autogen.log"; die autogen; }
  ./configure --prefix=$PREFIX >"$P/configure.log" 2>&1 || { tail -30 "$P/configure.log"; die configure; }
  make -j"$(nproc)" >"$P/make.log" 2>&1 || { tail -40 "$P/make.log"; die make; }
  [[ -x /etc/init.d/pbs ]] && /etc/init.d/pbs stop >/dev/null 2>&1 || true
  make install >"$P/make-install.log" 2>&1 || { tail -30 "$P/make-install.log"; die "make install"; }
  echo "$want_stamp" >"$STAMP"
  cd "$HERE"
  rm -rf "$B"
  log "OpenPBS installed in $PREFIX ($(du -sh $PREFIX | cut -f1))"
fi
# make install drops the setuid bits these two need.
chmod 4755 $PREFIX/sbin/pbs_iff $PREFIX/sbin/pbs_rcp
if [[ ! -f /etc/pbs.conf || ! -x /etc/init.d/pbs ]]; then
  $PREFIX/libexec/pbs_postinstall >"$P/postinstall.log" 2>&1 || { cat "$P/postinstall.log"; die pbs_postinstall; }
fi
host=$(hostname | cut -d. -f1)
setconf() { if grep -q "^$1=" /etc/pbs.conf; then sed -i "s|^$1=.*|$1=$2|" /etc/pbs.conf; else echo "$1=$2" >>/etc/pbs.conf; fi; }
setconf PBS_SERVER "$host"
for d in SERVER SCHED COMM MOM; do setconf "PBS_START_$d" 1; done
# shellcheck disable=SC1091
. /etc/pbs.conf

id "$PBS_USER" >/dev/null 2>&1 || useradd -m -s /bin/bash "$PBS_USER"
# No password ("*", not the locked "!" useradd leaves: sshd without PAM refuses locked
# accounts even for key logins).
[[ $(getent shadow "$PBS_USER" | cut -d: -f2) == "*" ]] || usermod -p '*' "$PBS_USER"
PBS_HOME_DIR=$(getent passwd "$PBS_USER" | cut -d: -f6)
WORK=$PBS_HOME_DIR/mosaic-work
install -d -o "$PBS_USER" -g "$PBS_USER" -m 700 "$WORK"

# ---------------------------------------------------------------- start
# (the status text is captured, not piped into grep -q: with pipefail an early-exiting
# grep turns a running server into a failed pipeline)
status=$(/etc/init.d/pbs status 2>/dev/null || true)
if [[ $status != *"pbs_server is pid"* ]]; then
  log "starting PBS"
  # The first start initialises the datastore; its cp/ulimit/OOM warnings are harmless.
  /etc/init.d/pbs start >"$P/start.log" 2>&1 || { cat "$P/start.log"; die "PBS did not start"; }
fi
node_state() {
  pbsnodes -av -F json 2>/dev/null | python3 -c 'import json,sys; n=json.load(sys.stdin).get("nodes",{}); print(",".join(v["state"] for v in n.values()) or "none")' 2>/dev/null || echo down
}
s=down
for _ in $(seq 1 240); do
  s=$(node_state); case $s in free|job-busy|job-exclusive) break ;; esac; sleep 0.5
done
case $s in free|job-busy|job-exclusive) ;; *) tail -20 "$PBS_HOME"/server_logs/* 2>/dev/null; die "PBS node state $s after 120s" ;; esac
node=$(pbsnodes -av -F json | python3 -c 'import json,sys; print(next(iter(json.load(sys.stdin)["nodes"])))')

# ---------------------------------------------------------------- configure (idempotent)
q() { qmgr -c "$1" >/dev/null; }
q 'set server job_history_enable = True'
q 'set server job_history_duration = 24:00:00'
q 'set server scheduler_iteration = 10'
# Finished jobs kept in history from an earlier run: after a restart the server can
# count job ids up from a number it already used, and qsub then refuses every job with
# "Job with requested ID already exists" (seen re-running CI on one machine).
hist=$(qselect -x -s F 2>/dev/null || true)
[[ -z $hist ]] || qdel -x -W force $hist >/dev/null 2>&1 || true
printf '#!/bin/sh\ncat >/dev/null\n' >$PREFIX/bin/pbs_nomail; chmod 755 $PREFIX/bin/pbs_nomail
q "set server mailer = $PREFIX/bin/pbs_nomail"
qmgr -c 'list resource ngpus' >/dev/null 2>&1 || q 'create resource ngpus type=long, flag=nh'
q "set node $node resources_available.ngpus = 4"
# The Slurm nodes' shape (64 CPUs, 256000 MB), so one federation's sizing compares like
# with like; the jobs are sleeps and echoes, not real load.
q "set node $node resources_available.ncpus = 64"
q "set node $node resources_available.mem = 256000mb"
qmgr -c 'list queue workq' >/dev/null 2>&1 || q 'create queue workq queue_type=execution'
q 'set queue workq resources_max.walltime = 24:00:00'
q 'set queue workq resources_default.walltime = 01:00:00'
q 'set queue workq enabled = True'
q 'set queue workq started = True'
q 'set server default_queue = workq'
qmgr -c 'list queue gpu' >/dev/null 2>&1 || q 'create queue gpu queue_type=execution'
q 'set queue gpu resources_max.walltime = 04:00:00'
q 'set queue gpu resources_min.walltime = 00:00:01'
q 'set queue gpu resources_default.walltime = 00:30:00'
q 'set queue gpu resources_max.ngpus = 4'
q 'set queue gpu enabled = True'
q 'set queue gpu started = True'
SC=$PBS_HOME/sched_priv/sched_config
if ! grep -q '^resources:.*ngpus' "$SC"; then
  sed -i 's/^resources: "\(.*\)"/resources: "\1, ngpus"/' "$SC"
  kill -HUP "$(cat "$PBS_HOME/sched_priv/sched.lock")"
fi

# ---------------------------------------------------------------- sshd for rig-pbs
[[ -s $S/id_ed25519 && -s $S/authorized_keys ]] || die "no rig ssh keys in $S (run scripts/testrig/up.sh)"
running() { local pid; [[ -s $1 ]] && pid=$(<"$1") && [[ $pid =~ ^[0-9]+$ && -r /proc/$pid/comm && $(</proc/$pid/comm) == sshd* ]]; }
conf=$S/sshd_pbs.conf
new=$(cat <<EOF
# generated by scripts/testrig/pbs.sh
Port $PBS_SSH_PORT
ListenAddress 127.0.0.1
HostKey $S/host_ed25519
PidFile $S/sshd_pbs.pid
AuthorizedKeysFile $S/authorized_keys
AllowUsers $PBS_USER
PermitRootLogin no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
SetEnv PATH=$PREFIX/bin:/usr/local/bin:/usr/bin:/bin
MaxSessions 64
MaxStartups 64:30:128
EOF
)
changed=0
if [[ ! -f $conf || "$(cat "$conf")" != "$new" ]]; then printf '%s\n' "$new" >"$conf"; changed=1; fi
if running "$S/sshd_pbs.pid" && [[ $changed == 1 ]]; then kill -HUP "$(<"$S/sshd_pbs.pid")"; fi
if ! running "$S/sshd_pbs.pid"; then
  mkdir -p /run/sshd; chmod 755 /run/sshd
  /usr/sbin/sshd -f "$conf" -E "$S/sshd_pbs.log"
  for _ in $(seq 1 50); do ss -ltn 2>/dev/null | grep -q "127.0.0.1:$PBS_SSH_PORT " && break; sleep 0.2; done
  log "sshd started (127.0.0.1:$PBS_SSH_PORT, user $PBS_USER)"
fi
# The user reaches its job's node (here: this host) by ssh, as PBS users do for attach:
# its own key, authorized by the rig's sshd, and a client config naming the node.
UH=$PBS_HOME_DIR/.ssh
install -d -o "$PBS_USER" -g "$PBS_USER" -m 700 "$UH"
[[ -s $UH/id_ed25519 ]] || su -s /bin/sh "$PBS_USER" -c "ssh-keygen -q -t ed25519 -N '' -f '$UH/id_ed25519' -C mosaic-rig-pbs-user"
grep -qxF "$(cat "$UH/id_ed25519.pub")" "$S/authorized_keys" || cat "$UH/id_ed25519.pub" >>"$S/authorized_keys"
cat >"$UH/config" <<EOF
# generated by scripts/testrig/pbs.sh: the PBS node is this host's rig sshd
Host $node localhost
  HostName 127.0.0.1
  Port $PBS_SSH_PORT
  IdentityFile $UH/id_ed25519
  IdentitiesOnly yes
  UserKnownHostsFile $UH/known_hosts
  StrictHostKeyChecking yes
  BatchMode yes
  LogLevel ERROR
EOF
chown "$PBS_USER:$PBS_USER" "$UH/config"; chmod 600 "$UH/config"
# Pin the rig's own host key: a known_hosts left from an earlier rig (its key since
# regenerated) made every attach fail "REMOTE HOST IDENTIFICATION HAS CHANGED".
printf '[127.0.0.1]:%s %s\n' "$PBS_SSH_PORT" "$(cut -d' ' -f1,2 "$S/host_ed25519.pub")" >"$UH/known_hosts"
chown "$PBS_USER:$PBS_USER" "$UH/known_hosts"; chmod 600 "$UH/known_hosts"
chmod 644 "$S/authorized_keys"   # read by sshd for a non-root user (StrictModes no)
chmod 711 "$S"

cat >"$P/pbs.env" <<EOF
RIG_PBS=1
RIG_PBS_SERVER=$host
RIG_PBS_NODE=$node
RIG_PBS_USER=$PBS_USER
RIG_PBS_WORKDIR=$WORK
RIG_PBS_QUEUE_CPU=workq
RIG_PBS_QUEUE_GPU=gpu
RIG_PBS_GPUS_PER_NODE=4
RIG_PBS_NODE_CPUS=64
RIG_PBS_EXEC=$PREFIX
RIG_SSH_HOST_PBS=rig-pbs
RIG_SSH_PORT_PBS=$PBS_SSH_PORT
EOF
log "ready: node $node ($s), queues workq and gpu, ssh rig-pbs as $PBS_USER"
