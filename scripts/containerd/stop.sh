#!/usr/bin/env bash
# Stops what scripts/setup-containerd.sh started: the private containerd and
# the two registries, by their pid files under /run/edgeplane. State, images
# and config stay, so setup-containerd.sh starts them again in seconds.
#
#   stop.sh          stop the daemons (running pods keep running in their shims)
#   stop.sh --pods   first stop and remove every CRI pod sandbox
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
EP_RUN=/run/edgeplane

if [ "${1:-}" = "--pods" ] && [ -S "$EP_RUN/containerd.sock" ]; then
  (cd "$REPO" && node --import tsx --input-type=module -e '
    const { CriClient } = await import("./agent/cri/client.ts");
    const c = new CriClient();
    for (const p of await c.listPodSandbox()) {
      await c.stopPodSandbox(p.id);
      await c.removePodSandbox(p.id);
      console.log("removed pod sandbox", p.id);
    }
    c.close();
  ')
fi

for name in containerd registry-open registry-private; do
  pidf=$EP_RUN/$name.pid
  if [ -s "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null &&
    tr '\0' ' ' <"/proc/$(cat "$pidf")/cmdline" | grep -Eq '^(containerd --config|docker-registry serve) '; then
    pid=$(cat "$pidf")
    kill "$pid"
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    echo "stopped $name (pid $pid)"
  fi
  rm -f "$pidf"
done
