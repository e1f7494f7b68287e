#!/usr/bin/env bash
# inplace-controller on the local cluster (after 10-inplace-apiserver.sh, which
# applied artifacts/deploy, RBAC included).
#
# Sourced by hack/local-up.sh once the cluster and inplace-apiserver are ready;
# also runs on its own against a running local cluster, to (re)start it:
#
#   hack/local-up.d/20-inplace-controller.sh
#
# Host process _output/bin/inplace-controller, authenticated as the
# ServiceAccount inplace-system/inplace-controller (client certificate, see
# hack/lib/inplace.sh), leader election through the Lease
# inplace-system/inplace-controller, health on 127.0.0.1:10390. Skipped when
# the source tree has no cmd/controller. Extra flags in $INPLACE_CONTROLLER_ARGS
# (split on spaces), e.g. INPLACE_CONTROLLER_ARGS="--profiling --workers=8"
# (hack/bench-scale.sh).

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
    inplace_deploy_in_cluster restart deployment/inplace-controller
  fi
  return 0 2>/dev/null || exit 0
fi

INPLACE_CONTROLLER_HEALTH="${INPLACE_CONTROLLER_HEALTH:-127.0.0.1:10390}"

# inplace_controller_leads: the Lease has a holder and the controller is ready
# (caches synced).
inplace_controller_leads() {
  [[ -n "$(kubectl -n "$INPLACE_NAMESPACE" get lease inplace-controller -o 'jsonpath={.spec.holderIdentity}')" ]] &&
    http_ok "${INPLACE_CONTROLLER_HEALTH%:*}" "${INPLACE_CONTROLLER_HEALTH##*:}" /readyz ok
}

inplace_start_host_program controller "$(inplace_hook_mode "${BASH_SOURCE[0]}")" \
  "inplace-controller leading and ready" inplace_controller_leads \
  --leader-elect-namespace="$INPLACE_NAMESPACE" \
  --namespace="$INPLACE_NAMESPACE" \
  --bind-address="$INPLACE_CONTROLLER_HEALTH" ${INPLACE_CONTROLLER_ARGS:-}
