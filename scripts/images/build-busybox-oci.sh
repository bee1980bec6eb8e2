#!/usr/bin/env bash
# Builds a one-layer OCI image layout from the host's static /bin/busybox,
# without internet and without a container engine.
#
#   build-busybox-oci.sh <layout-dir> <busybox|private|pause> <tag>
#
#   busybox: Cmd ["sh"], every applet linked under its usual path, plus
#            /etc/passwd, /etc/group, /tmp and /var/www/index.html.
#   private: the same as busybox, but its own image (different content), so
#            pulling it from the private registry cannot be satisfied by
#            layers of the open one.
#   pause:   the same rootfs with an entrypoint that sleeps forever and
#            exits 0 on SIGTERM/SIGINT (used as containerd's sandbox image).
#   tools:   busybox plus the host's curl with the shared libraries it loads
#            (for tests that need a client that verifies TLS certificates,
#            which busybox's wget does not).
#   https:   busybox plus the host's socat and openssl with their shared
#            libraries (a small real HTTPS server: socat OPENSSL-LISTEN in
#            front of a shell handler, for API aggregation tests).
#   Every image has /etc/edgeplane-image holding its kind.
#
# The output is reproducible (fixed mtimes, owners and gzip header), so a
# rebuild yields the same digests and a re-push is a no-op.
set -euo pipefail

if [ "$#" -ne 3 ]; then
  echo "usage: $0 <layout-dir> <busybox|pause> <tag>" >&2
  exit 2
fi
layout="$1"
kind="$2"
tag="$3"
busybox_bin="${BUSYBOX:-/bin/busybox}"

case "$kind" in
  busybox | private | tools | https) config_exec='"Cmd":["sh"]' ;;
  pause) config_exec='"Entrypoint":["/bin/sh","-c","trap \"exit 0\" TERM INT; sleep 2147483647 & wait"]' ;;
  *) echo "unknown image kind: $kind" >&2; exit 2 ;;
esac

if [ ! -x "$busybox_bin" ]; then
  echo "ERROR: $busybox_bin not found (apt-get install busybox-static)" >&2
  exit 1
fi

case "$(dpkg --print-architecture 2>/dev/null || uname -m)" in
  amd64 | x86_64) arch="amd64" ;;
  arm64 | aarch64) arch="arm64" ;;
  *) arch="$(uname -m)" ;;
esac

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
rootfs="$work/rootfs"

# --- root filesystem -------------------------------------------------------
mkdir -p "$rootfs"/{bin,sbin,usr/bin,usr/sbin,etc,root,proc,sys,dev,var/www}
mkdir -p -m 1777 "$rootfs/tmp"
install -m 0755 "$busybox_bin" "$rootfs/bin/busybox"
"$busybox_bin" --list-full | while read -r applet; do
  [ "$applet" = "bin/busybox" ] && continue
  mkdir -p "$rootfs/$(dirname "$applet")"
  ln -sf /bin/busybox "$rootfs/$applet"
done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$rootfs/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$rootfs/etc/group"
printf 'edgeplane %s\n' "$kind" >"$rootfs/var/www/index.html"
tool_bins=()
case "$kind" in
  tools) tool_bins=(/usr/bin/curl) ;;
  https) tool_bins=(/usr/bin/socat /usr/bin/openssl) ;;
esac
if [ "${#tool_bins[@]}" -gt 0 ]; then
  for bin in "${tool_bins[@]}"; do
    [ -x "$bin" ] || { echo "ERROR: $bin not found" >&2; exit 1; }
    # the binary, then every library and the loader it names, at the same paths
    for f in "$bin" $(ldd "$bin" | grep -o '/[^ ]*'); do
      mkdir -p "$rootfs$(dirname "$f")"
      cp -L "$f" "$rootfs$f"
    done
  done
fi
printf '%s\n' "$kind" >"$rootfs/etc/edgeplane-image"

tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 \
  -C "$rootfs" -cf "$work/layer.tar" .
diff_id="$(sha256sum "$work/layer.tar" | cut -d' ' -f1)"
gzip -n -9 -c "$work/layer.tar" >"$work/layer.tar.gz"

# --- blobs -----------------------------------------------------------------
rm -rf "$layout"
mkdir -p "$layout/blobs/sha256"
put_blob() { # file -> prints "digest size"
  local digest size
  digest="$(sha256sum "$1" | cut -d' ' -f1)"
  size="$(stat -c %s "$1")"
  cp "$1" "$layout/blobs/sha256/$digest"
  echo "$digest $size"
}

read -r layer_digest layer_size < <(put_blob "$work/layer.tar.gz")

printf '%s' "{\"created\":\"1970-01-01T00:00:00Z\",\"architecture\":\"$arch\",\"os\":\"linux\",\
\"config\":{\"Env\":[\"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\"],$config_exec,\"WorkingDir\":\"/\"},\
\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"sha256:$diff_id\"]},\
\"history\":[{\"created\":\"1970-01-01T00:00:00Z\",\"created_by\":\"edgeplane scripts/images/build-busybox-oci.sh ($kind)\"}]}" \
  >"$work/config.json"
read -r config_digest config_size < <(put_blob "$work/config.json")

printf '%s' "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\
\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"sha256:$config_digest\",\"size\":$config_size},\
\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"sha256:$layer_digest\",\"size\":$layer_size}]}" \
  >"$work/manifest.json"
read -r manifest_digest manifest_size < <(put_blob "$work/manifest.json")

printf '%s' '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"
printf '%s' "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\
\"manifests\":[{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"sha256:$manifest_digest\",\"size\":$manifest_size,\
\"platform\":{\"architecture\":\"$arch\",\"os\":\"linux\"},\
\"annotations\":{\"org.opencontainers.image.ref.name\":\"$tag\"}}]}" \
  >"$layout/index.json"

echo "built $kind image in $layout (tag $tag, manifest sha256:$manifest_digest, layer $layer_size bytes)"
