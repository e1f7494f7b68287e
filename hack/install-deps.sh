#!/usr/bin/env bash
# Installs the Debian packages the local cluster needs (container runtime,
# CNI plugins, iptables, a static busybox for the test images, openssl for
# the PKI). Idempotent and quick when everything is already installed:
# `apt-get update` only runs when something is missing.
#
#   hack/install-deps.sh              # the local cluster's packages
#   hack/install-deps.sh PACKAGE...   # these instead (hack/update-codegen.sh: protobuf-compiler)
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(containerd runc containernetworking-plugins iptables busybox-static openssl)
if (($# > 0)); then
  PACKAGES=("$@")
fi

missing=()
for p in "${PACKAGES[@]}"; do
  # dpkg-query prints "install ok installed" for a fully installed package.
  if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" != "install ok installed" ]]; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

if [[ $EUID -ne 0 ]]; then
  echo "install-deps: need root to install: ${missing[*]}" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"

# The Debian containerd package enables and starts a systemd service with its
# default config. The local cluster runs its own containerd with its own
# config (hack/local-up.sh), so stop the packaged one if systemd started it.
if command -v systemctl >/dev/null 2>&1 && [[ -d /run/systemd/system ]]; then
  systemctl disable --now containerd.service >/dev/null 2>&1 || true
fi
