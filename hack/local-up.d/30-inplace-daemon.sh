#!/usr/bin/env bash
# inplace-daemon on the local cluster's node (after 10-inplace-apiserver.sh,
# which applied artifacts/deploy, RBAC included).
#
# Sourced by hack/local-up.sh once the cluster and inplace-apiserver are ready;
# also runs on its own against a running local cluster, to (re)start it:
#
#   hack/local-up.d/30-inplace-daemon.sh
#
# Host process _output/bin/inplace-daemon for node $NODE_NAME, talking CRI to
# the cluster's containerd ($CONTAINER_RUNTIME_ENDPOINT), authenticated as the
# ServiceAccount inplace-system/inplace-daemon (client certificate, see
# hack/lib/inplace.sh), health on 127.0.0.1:10391; with the second node
# (INPLACE_NODES=2) also inplace-daemon-node2 for it. Skipped when the source
# tree has no cmd/daemon. $INPLACE_DAEMON_FLAGS (space-separated) adds flags,
# e.g. the tests' INPLACE_DAEMON_FLAGS=--clock-skew=-10m.

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  set -euo pipefail
  cd "$(dirname "$0")/../.."
  # shellcheck source=hack/lib/local.sh
  source hack/lib/local.sh
  local_hook_alone
fi
# shellcheck source=hack/lib/inplace.sh
source hack/lib/inplace.sh

# In-cluster mode: 10-inplace-apiserver.sh installed every program; on its own, this restarts
# it (with the extra flags, as below).
if inplace_in_cluster; then
  if [[ "$(inplace_hook_mode "${BASH_SOURCE[0]}")" == restart ]]; then
    inplace_deploy_in_cluster restart daemonset/inplace-daemon
  fi
  return 0 2>/dev/null || exit 0
fi

INPLACE_DAEMON_HEALTH="${INPLACE_DAEMON_HEALTH:-127.0.0.1:10391}"
INPLACE_NODE2_DAEMON_HEALTH="${INPLACE_NODE2_DAEMON_HEALTH:-127.0.0.1:10392}"

inplace_daemon_ready() {
  http_ok "${INPLACE_DAEMON_HEALTH%:*}" "${INPLACE_DAEMON_HEALTH##*:}" /readyz ok
}
inplace_node2_daemon_ready() {
  http_ok "${INPLACE_NODE2_DAEMON_HEALTH%:*}" "${INPLACE_NODE2_DAEMON_HEALTH##*:}" /readyz ok
}

inplace_start_host_program daemon "$(inplace_hook_mode "${BASH_SOURCE[0]}")" \
  "inplace-daemon ready" inplace_daemon_ready \
  --node-name="$NODE_NAME" \
  --runtime-endpoint="$CONTAINER_RUNTIME_ENDPOINT" \
  --bind-address="$INPLACE_DAEMON_HEALTH" \
  ${INPLACE_DAEMON_FLAGS:-} # word splitting wanted: a list of flags

# The second node (INPLACE_NODES=2 hack/local-up.sh) has its own daemon, talking to its own
# containerd: inplace-daemon-node2, health on 127.0.0.1:10392. Both nodes share this machine's
# loopback, where the first daemon answers the launch barrier hooks of 127.0.0.1:10393: the
# second answers on 10394, which no hook names, so the hooks of its Pods reach the first daemon,
# which lets them go at once (not its node): on this two-node test setup only, the Pods of the
# second node start their ordered containers without waiting.
if daemon_pid node2-kubelet >/dev/null; then
  inplace_start_host_program daemon@node2 "$(inplace_hook_mode "${BASH_SOURCE[0]}")" \
    "inplace-daemon of $NODE2_NAME ready" inplace_node2_daemon_ready \
    --node-name="$NODE2_NAME" \
    --runtime-endpoint="$NODE2_RUNTIME_ENDPOINT" \
    --bind-address="$INPLACE_NODE2_DAEMON_HEALTH" \
    --launch-barrier-address=127.0.0.1:10394 \
    ${INPLACE_DAEMON_FLAGS:-} # word splitting wanted: a list of flags
fi
