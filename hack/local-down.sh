#!/usr/bin/env bash
# Stops the local single-node cluster started by hack/local-up.sh and cleans
# up after its pods. Safe to run at any time, any number of times, also after
# a crash or a half-finished local-up: it only ever signals processes whose
# pid (and start time) local-up recorded in _output/local/pids/.
#
#   hack/local-down.sh           # stop; keep PKI, images, logs
#   hack/local-down.sh --purge   # also delete _output/local (PKI, containerd
#                                # root with the imported images, logs)
#
# Order: daemons started by hooks, kube-scheduler, kube-controller-manager,
# kubelet, then every pod sandbox is removed through CRI (containers killed,
# CNI network released, netns removed), then kube-apiserver, etcd, containerd;
# then the host leftovers (kubelet mounts, CNI bridge, lo address, cgroups).
set -euo pipefail
cd "$(dirname "$0")/.."
source hack/lib/local.sh
# Finish the cleanup even when our output goes to a pipe that was closed.
trap '' PIPE

PURGE=false
case "${1:-}" in
  --purge) PURGE=true ;;
  "") ;;
  *) echo "usage: $0 [--purge]" >&2; exit 2 ;;
esac
[[ $EUID -eq 0 ]] || die "must run as root"
local_lock

is_core() {
  local c
  for c in "${CORE_DAEMONS[@]}"; do [[ "$1" == "$c" ]] && return 0; done
  return 1
}

# 1. Daemons started by hooks (hack/local-up.d), e.g. the inplace programs.
for f in "$PIDS"/*.pid; do
  [[ -e "$f" ]] || continue
  name="$(basename "$f" .pid)"
  is_core "$name" || local_stop "$name"
done

# 2. Whatever (re)creates or runs pods.
local_stop kube-scheduler
local_stop kube-controller-manager
local_stop kubelet 30
local_stop node2-kubelet 30

# 3. Remove every pod sandbox through containerd's CRI, on each node. If a
#    containerd is gone (crash) but shims of it still run containers, start it
#    again just for this.
# remove_sandboxes NAME CONFIG SOCKET
remove_sandboxes() {
  local name="$1" config="$2" sock="$3"
  if ! daemon_pid "$name" >/dev/null && containerd_shims_running "$sock" && [[ -f "$config" ]]; then
    log "containers of an earlier run are still alive: starting $name to remove them"
    start_containerd "$name" "$config" "$sock"
  fi
  if daemon_pid "$name" >/dev/null; then
    if [[ -x "$BIN/minicri" ]]; then
      "$BIN/minicri" -endpoint "unix://$sock" -timeout 60s rmp-all >&2 ||
        log "WARNING: could not remove all pod sandboxes of $name (see above)"
    else
      log "WARNING: $BIN/minicri missing, pod sandboxes left to $name"
    fi
  fi
}
remove_sandboxes containerd "$STATE/containerd/config.toml" "$CONTAINERD_SOCK"
remove_sandboxes node2-containerd "$NODE2_STATE/containerd/config.toml" "$NODE2_CONTAINERD_SOCK"

# 4. Control plane and runtime.
local_stop kube-apiserver
local_stop etcd
local_stop containerd 30
local_stop node2-containerd 30

# 5. Host leftovers.
if containerd_shims_running || containerd_shims_running "$NODE2_CONTAINERD_SOCK"; then
  log "WARNING: containerd shims still running; left alone (rerun hack/local-down.sh)"
else
  # Mounts below the state dir: kubelet volumes (projected tokens are tmpfs),
  # and anything containerd left behind after a crash.
  unmount_under "$STATE"
  rm -rf "$STATE/kubelet" "$STATE/pod-logs" "$STATE/cni/ipam" \
    "$NODE2_STATE/kubelet" "$NODE2_STATE/pod-logs" "$NODE2_STATE/cni/ipam"
  # The CNI bridges are ours (their names are specific to this harness).
  for br in "$CNI_BRIDGE" "$NODE2_CNI_BRIDGE"; do
    if ip link show "$br" >/dev/null 2>&1; then
      ip link delete "$br" && log "deleted bridge $br"
    fi
  done
  # libcni's result cache of our networks and the kubelets' log symlinks
  # pointing into our pod log dirs.
  rm -f /var/lib/cni/results/"$CNI_NETWORK"-* /var/lib/cni/results/"$NODE2_CNI_NETWORK"-*
  for l in /var/log/containers/*.log; do
    [[ -L "$l" ]] || continue
    case "$(readlink "$l")" in "$STATE/pod-logs/"* | "$NODE2_STATE/pod-logs/"*) rm -f "$l" ;; esac
  done
  # The second node's containerd state (its socket and shim state).
  unmount_under /run/inplace-node2
  rm -rf /run/inplace-node2
  # The kubelet's (empty) QoS cgroups, one tree per cgroup v1 controller.
  if [[ -f "$STATE/markers/kubelet-cgroups" ]]; then
    for d in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
      if [[ -d "$d" ]]; then find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true; fi
    done
    rm -f "$STATE/markers/kubelet-cgroups"
  fi
  # The second node's cgroup root (made by local-up) and its kubelet's cgroups.
  if [[ -f "$STATE/markers/node2-cgroups" ]]; then
    for d in /sys/fs/cgroup/*/"$NODE2_CGROUP_ROOT"; do
      if [[ -d "$d" ]]; then find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true; fi
    done
    rm -f "$STATE/markers/node2-cgroups"
  fi
fi

# Fixed kubelet path (device plugin registration socket), removed only if
# local-up created /var/lib/kubelet.
if [[ -f "$STATE/markers/var-lib-kubelet" ]]; then
  rm -rf /var/lib/kubelet/device-plugins /var/lib/kubelet/plugins /var/lib/kubelet/plugins_registry
  rmdir /var/lib/kubelet 2>/dev/null || true
  rm -f "$STATE/markers/var-lib-kubelet"
fi

# The node IPs on lo, if local-up added them.
if [[ -f "$STATE/markers/lo-ip" ]]; then
  ip addr del "$NODE_IP/32" dev lo 2>/dev/null || true
  rm -f "$STATE/markers/lo-ip"
fi
if [[ -f "$STATE/markers/lo-ip2" ]]; then
  ip addr del "$NODE2_IP/32" dev lo 2>/dev/null || true
  rm -f "$STATE/markers/lo-ip2"
fi

# etcd data: every local-up starts from an empty cluster; so do the volumes of its
# PersistentVolumes and the choice of where inplace runs (INPLACE_IN_CLUSTER).
rm -rf "$STATE/etcd" "$STATE/volumes" "$STATE/inplace/in-cluster"

if $PURGE; then
  unmount_under "$STATE"
  rm -rf "$STATE"
  log "purged $STATE"
fi
log "local cluster down"
