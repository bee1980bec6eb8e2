#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages the private containerd, the local
# registries and the image builder need. Fast no-op when all are present.
set -euo pipefail

PACKAGES=(
  containerd               # containerd 1.6 with the CRI plugin, and ctr
  runc                     # OCI runtime (/usr/sbin/runc)
  containernetworking-plugins  # bridge, host-local, loopback in /usr/lib/cni
  docker-registry          # distribution registry v2
  skopeo                   # pushes the hand-built OCI layouts
  busybox-static           # /bin/busybox, the content of the test images
  apache2-utils            # htpasswd (bcrypt) for the private registry
  iproute2                 # ip, used by the bridge plugin and for checks
  iptables                 # bridge ipMasq rules
  nftables                 # nft: the pod network's masquerade table (agent/network)
  curl                     # registry health checks
  socat                    # the https test image's TLS listener
  openssl                  # the https test image's certificates and TLS
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "packages: all present"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "ERROR: missing packages (${missing[*]}) and no apt-get on this machine" >&2
  exit 1
fi

echo "packages: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Refresh the package lists only when there are none; stale lists are
# refreshed below if the install fails with them.
if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' 2>/dev/null | head -n 1)" ]; then
  apt-get update -qq
fi
if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
  echo "packages: install failed, refreshing lists and retrying"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "packages: installed"
