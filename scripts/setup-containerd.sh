#!/usr/bin/env bash
# npm run setup:containerd -- sets up the real container runtime edgelet uses:
# a private containerd (CRI) with runc and CNI, two local registries and
# busybox-based test images. Root, Debian/Ubuntu. Idempotent: a second run
# only checks that everything is healthy (about a second). Two at once are
# safe: the second waits for the first (flock on /run/edgeplane/setup.lock).
#
# Paths (fixed; nothing collides with a system containerd or Docker):
#   containerd config      /var/lib/edgeplane/containerd/config.toml
#   containerd root/state  /var/lib/edgeplane/containerd/{root,state}
#   CRI socket             /run/edgeplane/containerd.sock  (unix:///run/edgeplane/containerd.sock)
#   containerd pid / log   /run/edgeplane/containerd.pid, /var/lib/edgeplane/log/containerd.log
#   CNI conf dir           /etc/edgeplane/net.d   (default conflist 10-edgeplane.conflist,
#                          bridge edgeplane0 on 10.88.0.0/16; edgelet may rewrite it)
#   CNI plugins            /usr/lib/cni (Debian containernetworking-plugins)
#   registry mirrors conf  /var/lib/edgeplane/containerd/certs.d/<host:port>/hosts.toml
#   registries             open    http://127.0.0.1:5000  (no auth)
#                          private http://127.0.0.1:5001  (basic auth, htpasswd bcrypt)
#                          data/config/log under /var/lib/edgeplane/registry/{open,private}
#                          pids /run/edgeplane/registry-{open,private}.pid
#   credentials            <repo>/.edgeplane/registry-credentials  ("user:password"; the machine's,
#                          kept in /var/lib/edgeplane/registry/private/credentials)
#   images                 127.0.0.1:5000/edgeplane/busybox:1
#                          127.0.0.1:5000/edgeplane/pause:1  (containerd's sandbox_image)
#                          127.0.0.1:5000/edgeplane/tools:1  (busybox + curl, for TLS tests)
#                          127.0.0.1:5000/edgeplane/https:1  (busybox + socat + openssl, an HTTPS server)
#                          127.0.0.1:5001/private/busybox:1  (busybox with its own content)
# Stop everything started here: bash scripts/containerd/stop.sh
set -euo pipefail

T0=$(date +%s%N)
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HERE="$REPO/scripts"

EP_LIB=/var/lib/edgeplane
EP_RUN=/run/edgeplane
CTD_DIR=$EP_LIB/containerd
CTD_CONF=$CTD_DIR/config.toml
CTD_SOCK=$EP_RUN/containerd.sock
CTD_PID=$EP_RUN/containerd.pid
LOG_DIR=$EP_LIB/log
CTD_LOG=$LOG_DIR/containerd.log
CNI_CONF_DIR=/etc/edgeplane/net.d
CNI_BIN_DIR=/usr/lib/cni
POD_CIDR="${EDGEPLANE_POD_CIDR:-10.88.0.0/16}"
REG_DIR=$EP_LIB/registry
OPEN_REG=127.0.0.1:5000
PRIV_REG=127.0.0.1:5001
PAUSE_IMAGE=$OPEN_REG/edgeplane/pause:1
CREDS_FILE=$REPO/.edgeplane/registry-credentials
REG_USER=edgeplane

say() { printf '%s\n' "$*"; }
die() { printf 'ERROR: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run as root (containerd, CNI and runc need it)"

# --- 0. one setup at a time ---------------------------------------------------
# Everything below is the machine's (packages, registries, image layouts, containerd): two
# setups at once would build the same layouts into the same directories and start the same
# daemons. The lock is held on fd 9 until this script exits; the daemons it starts close fd 9
# (9>&-) so they do not hold it for their lifetime.
mkdir -p "$EP_RUN"
SETUP_LOCK=$EP_RUN/setup.lock
exec 9>>"$SETUP_LOCK"
if ! flock -n 9; then
  say "setup: another setup:containerd is running on this machine; waiting for it"
  flock -w "${EDGEPLANE_SETUP_LOCK_WAIT:-900}" 9 || die "waited too long for the other setup:containerd ($SETUP_LOCK)"
fi

# --- 1. packages --------------------------------------------------------------
# (fd 9 closed: a package's maintainer script may start a daemon that would keep the lock)
bash "$HERE/containerd/install-packages.sh" 9>&-
for bin in containerd runc skopeo docker-registry htpasswd curl socat openssl; do
  command -v "$bin" >/dev/null || die "$bin not found after package install"
done
[ -x "$CNI_BIN_DIR/bridge" ] || die "CNI plugins missing in $CNI_BIN_DIR"
[ -x "$REPO/node_modules/.bin/tsx" ] || die "node_modules missing: run npm ci in $REPO first"

mkdir -p "$CTD_DIR" "$EP_RUN" "$LOG_DIR" "$CNI_CONF_DIR" "$REG_DIR" "$REPO/.edgeplane"

pid_alive() { # pidfile -> 0 when its process runs and is one of ours (not a reused pid)
  [ -s "$1" ] || return 1
  local pid; pid=$(cat "$1")
  kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -Eq '^(containerd --config|docker-registry serve) '
}

# A daemon just spawned is still "bash" or "setsid nohup ..." until its execs finish, which on a
# slow machine outlasts the first poll; while it starts, only ask whether the process lives.
spawned_alive() { # pidfile -> 0 while the process spawned into it has not exited
  kill -0 "$(cat "$1")" 2>/dev/null
}

write_if_changed() { # path content -> 0 when the file changed
  if [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; then return 1; fi
  printf '%s\n' "$2" >"$1.tmp" && mv "$1.tmp" "$1"
  return 0
}

stop_pidfile() { # pidfile
  if pid_alive "$1"; then
    local pid; pid=$(cat "$1")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$1"
}

# --- 2. registries --------------------------------------------------------------
# A distribution packaged service may hold :5000 on systemd machines.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet docker-registry 2>/dev/null; then
  say "registry: stopping the system docker-registry service (it listens on :5000)"
  systemctl stop docker-registry || true
  systemctl disable docker-registry >/dev/null 2>&1 || true
fi

# The registries are the machine's, so their credentials are too: every clone set up on this
# machine gets the same ones (a second clone's setup must not change the password under the
# first). Kept beside the registry, root-only; copied into the clone for its tests.
MACHINE_CREDS=$REG_DIR/private/credentials
mkdir -p "$REG_DIR/private"
if [ ! -s "$MACHINE_CREDS" ]; then
  if [ -s "$CREDS_FILE" ]; then
    cp "$CREDS_FILE" "$MACHINE_CREDS"
  else
    printf '%s:%s\n' "$REG_USER" "$(head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 24)" >"$MACHINE_CREDS"
    say "registry: generated credentials in $MACHINE_CREDS"
  fi
fi
chmod 600 "$MACHINE_CREDS"
if ! cmp -s "$MACHINE_CREDS" "$CREDS_FILE"; then
  cp "$MACHINE_CREDS" "$CREDS_FILE"
  say "registry: this machine's credentials copied to $CREDS_FILE"
fi
chmod 600 "$CREDS_FILE"
REG_CREDS=$(head -n 1 "$CREDS_FILE")
REG_PASS=${REG_CREDS#*:}
REG_USER=${REG_CREDS%%:*}

mkdir -p "$REG_DIR/private"
HTPASSWD_CHANGED=0
if ! htpasswd -vb "$REG_DIR/private/htpasswd" "$REG_USER" "$REG_PASS" >/dev/null 2>&1; then
  htpasswd -Bbc "$REG_DIR/private/htpasswd" "$REG_USER" "$REG_PASS" >/dev/null 2>&1
  HTPASSWD_CHANGED=1
fi

registry_config() { # name addr auth(0|1)
  local dir=$REG_DIR/$1
  printf 'version: 0.1\nlog:\n  level: warn\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: %s\n  delete:\n    enabled: true\nhttp:\n  addr: %s\n' "$dir/data" "$2"
  if [ "$3" = 1 ]; then
    printf 'auth:\n  htpasswd:\n    realm: edgeplane\n    path: %s\n' "$dir/htpasswd"
  fi
}

ensure_registry() { # name addr auth expected-code force-restart
  local name=$1 addr=$2 auth=$3 want=$4 force=$5
  local dir=$REG_DIR/$name pidf=$EP_RUN/registry-$name.pid log=$LOG_DIR/registry-$name.log
  mkdir -p "$dir/data"
  if write_if_changed "$dir/config.yml" "$(registry_config "$name" "$addr" "$auth")"; then force=1; fi
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://$addr/v2/" || true)
  if [ "$force" = 0 ] && pid_alive "$pidf" && [ "$code" = "$want" ]; then
    say "registry: $name http://$addr already running (pid $(cat "$pidf"))"
    return
  fi
  stop_pidfile "$pidf"
  if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$addr/v2/" || true)" != 000 ]; then
    die "something else answers on $addr (not our registry): free the port and re-run"
  fi
  setsid nohup docker-registry serve "$dir/config.yml" >>"$log" 2>&1 </dev/null 9>&- &
  echo $! >"$pidf"
  for _ in $(seq 1 100); do
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://$addr/v2/" || true)
    [ "$code" = "$want" ] && break
    spawned_alive "$pidf" || die "registry $name exited; see $log"
    sleep 0.1
  done
  [ "$code" = "$want" ] || die "registry $name on $addr answers $code, want $want; see $log"
  say "registry: $name http://$addr started (pid $(cat "$pidf"))"
}

ensure_registry open "$OPEN_REG" 0 200 0
ensure_registry private "$PRIV_REG" 1 401 "$HTPASSWD_CHANGED"

# --- 3. images ----------------------------------------------------------------
IMG_DIR=$EP_LIB/images
mkdir -p "$IMG_DIR"
BUILD_STAMP=$(cat "$HERE/images/build-busybox-oci.sh" /bin/busybox /usr/bin/curl /usr/bin/socat /usr/bin/openssl | sha256sum | cut -d' ' -f1)

layout_digest() { # layout dir -> manifest digest of its single image
  grep -o '"digest":"sha256:[0-9a-f]*"' "$1/index.json" | head -n 1 | cut -d'"' -f4
}

ensure_layout() { # kind
  local layout=$IMG_DIR/$1-oci
  if [ "$(cat "$layout/.stamp" 2>/dev/null || true)" != "$BUILD_STAMP" ]; then
    bash "$HERE/images/build-busybox-oci.sh" "$layout" "$1" 1 >/dev/null
    echo "$BUILD_STAMP" >"$layout/.stamp"
  fi
}

push_image() { # kind registry repository creds-or-empty
  local layout=$IMG_DIR/$1-oci reg=$2 repo=$3 creds=$4
  local want have
  want=$(layout_digest "$layout")
  local auth_args=()
  [ -n "$creds" ] && auth_args=(-u "$creds")
  have=$(curl -s -I "${auth_args[@]}" -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
    "http://$reg/v2/$repo/manifests/1" | tr -d '\r' | awk -F': ' 'tolower($1)=="docker-content-digest"{print $2}')
  if [ "$have" = "$want" ]; then
    say "image: $reg/$repo:1 up to date ($want)"
    return
  fi
  local dest_creds=()
  [ -n "$creds" ] && dest_creds=(--dest-creds "$creds")
  skopeo --insecure-policy copy -q --dest-tls-verify=false "${dest_creds[@]}" \
    "oci:$layout:1" "docker://$reg/$repo:1" >/dev/null
  say "image: pushed $reg/$repo:1 ($want)"
}

build_pids=()
for kind in busybox private pause tools https; do
  ensure_layout "$kind" &
  build_pids+=($!)
done
for pid in "${build_pids[@]}"; do wait "$pid" || die "image build failed"; done
push_image busybox "$OPEN_REG" edgeplane/busybox ""
push_image pause "$OPEN_REG" edgeplane/pause ""
push_image tools "$OPEN_REG" edgeplane/tools ""
push_image https "$OPEN_REG" edgeplane/https ""
push_image private "$PRIV_REG" private/busybox "$REG_CREDS"

# --- 4. CNI -------------------------------------------------------------------
CNI_CONFLIST=$CNI_CONF_DIR/10-edgeplane.conflist
if [ -z "$(ls -A "$CNI_CONF_DIR" 2>/dev/null)" ]; then
  cat >"$CNI_CONFLIST" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "edgeplane",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "edgeplane0",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{ "subnet": "$POD_CIDR" }]],
        "routes": [{ "dst": "0.0.0.0/0" }],
        "dataDir": "$EP_LIB/cni/networks"
      }
    },
    { "type": "loopback" }
  ]
}
EOF
  say "cni: wrote default $CNI_CONFLIST ($POD_CIDR)"
else
  say "cni: keeping existing config in $CNI_CONF_DIR"
fi

# --- 5. containerd ------------------------------------------------------------
# Without CAP_SYS_RESOURCE (bit 24 of CapEff) runc cannot lower oom_score_adj.
CAPEFF=$(awk '/^CapEff/{print $2}' /proc/self/status)
if (( (16#$CAPEFF >> 24) & 1 )); then RESTRICT_OOM=false; else RESTRICT_OOM=true; fi

for reg in "$OPEN_REG" "$PRIV_REG"; do
  mkdir -p "$CTD_DIR/certs.d/$reg"
  write_if_changed "$CTD_DIR/certs.d/$reg/hosts.toml" "server = \"http://$reg\"

[host.\"http://$reg\"]
  capabilities = [\"pull\", \"resolve\"]" || true
done

CTD_CONFIG_TEXT=$(cat <<EOF
# Written by scripts/setup-containerd.sh; edits are overwritten.
version = 2
root = "$CTD_DIR/root"
state = "$CTD_DIR/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = "$CTD_SOCK"

[ttrpc]
  address = "$CTD_SOCK.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "$CTD_DIR/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  restrict_oom_score_adj = $RESTRICT_OOM
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$(command -v runc)"
        Root = "$CTD_DIR/runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN_DIR"
    conf_dir = "$CNI_CONF_DIR"
    max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$CTD_DIR/certs.d"
EOF
)
CTD_RESTART=0
if write_if_changed "$CTD_CONF" "$CTD_CONFIG_TEXT"; then CTD_RESTART=1; fi

# Adopt a daemon started with our config whose pid file was lost.
if ! pid_alive "$CTD_PID"; then
  adopted=$(pgrep -x -f "containerd --config $CTD_CONF" | head -n 1 || true)
  [ -n "$adopted" ] && echo "$adopted" >"$CTD_PID"
fi

if [ "$CTD_RESTART" = 1 ] && pid_alive "$CTD_PID"; then
  say "containerd: config changed, restarting"
  stop_pidfile "$CTD_PID"
fi
if pid_alive "$CTD_PID" && [ -S "$CTD_SOCK" ]; then
  say "containerd: already running (pid $(cat "$CTD_PID"))"
else
  stop_pidfile "$CTD_PID"
  rm -f "$CTD_SOCK" "$CTD_SOCK.ttrpc"
  setsid nohup containerd --config "$CTD_CONF" >>"$CTD_LOG" 2>&1 </dev/null 9>&- &
  echo $! >"$CTD_PID"
  for _ in $(seq 1 100); do [ -S "$CTD_SOCK" ] && break; spawned_alive "$CTD_PID" || break; sleep 0.1; done
  if ! spawned_alive "$CTD_PID"; then tail -n 20 "$CTD_LOG" >&2; die "containerd exited; see $CTD_LOG"; fi
  [ -S "$CTD_SOCK" ] || { tail -n 20 "$CTD_LOG" >&2; die "containerd made no socket at $CTD_SOCK in 10 s; see $CTD_LOG"; }
  pid_alive "$CTD_PID" || die "pid $(cat "$CTD_PID") in $CTD_PID is not containerd --config $CTD_CONF"
  say "containerd: started (pid $(cat "$CTD_PID"))"
fi

# --- 6. CRI ready + sandbox image -------------------------------------------
if ! (cd "$REPO" && node --import tsx scripts/containerd/cri-ready.ts "unix://$CTD_SOCK" 30000 \
  "$PAUSE_IMAGE#$(layout_digest "$IMG_DIR/pause-oci")"); then
  tail -n 20 "$CTD_LOG" >&2
  die "containerd CRI not ready; see $CTD_LOG"
fi

ELAPSED_MS=$(( ($(date +%s%N) - T0) / 1000000 ))
cat <<EOF

edgeplane containerd is ready (${ELAPSED_MS} ms)
  CRI endpoint     unix://$CTD_SOCK   (pid $(cat "$CTD_PID"), log $CTD_LOG)
  containerd dir   $CTD_DIR  (config.toml, root, state)
  CNI conf dir     $CNI_CONF_DIR  (plugins $CNI_BIN_DIR)
  open registry    http://$OPEN_REG   images edgeplane/busybox:1, edgeplane/pause:1, edgeplane/tools:1, edgeplane/https:1
  private registry http://$PRIV_REG   image private/busybox:1, credentials $CREDS_FILE
  sandbox image    $PAUSE_IMAGE
  stop             bash scripts/containerd/stop.sh
EOF
