#!/usr/bin/env bash
# Benchmarks what a PodUnavailableBudget adds to pods/inplaceupdate on the local
# cluster: N running Pods (default 20) are sent in-place image updates one
# request after another, in rounds alternating two phases,
#
#   no budget   nothing selects the Pods;
#   budget      a PodUnavailableBudget (policy.kruise.io/v1alpha1) selects all N
#               with maxUnavailable 100%: it never refuses, so every request
#               checks the budget and takes a unit of it (a write of the
#               budget's status) before it writes the Pod;
#
# and prints p50/p99 of the requests of each phase and what the budget adds
# (the goal: at most 2 ms at p99). Each phase waits for its updates to complete
# before the next one starts.
#
# inplace-apiserver charges budgets for in-place updates only with the feature
# gate PodUnavailableBudgetUpdateGate (off by default, as in OpenKruise): the
# script starts it with the gate on (restarting it when the cluster already
# runs) and, at the end, restarts a running one as it was.
#
#   bash hack/bench-budget.sh [N]
#   BENCH_ROUNDS=5 bash hack/bench-budget.sh 20
#
# Settings (environment): BENCH_PODS (20), BENCH_ROUNDS (3), BENCH_TIMEOUT (180 s
# for each wait).
#
# The cluster is left as found (see hack/lib/bench.sh); the namespace is deleted.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=hack/lib/bench.sh
source hack/lib/bench.sh

bench_settings 20 "${1:-}"
ROUNDS="${BENCH_ROUNDS:-3}"
BENCH_APISERVER_GATES=PodUnavailableBudgetUpdateGate=true
bench_start bench-budget

go build -o "$WORK/benchbudget" ./hack/benchbudget
"$WORK/benchbudget" -kubeconfig "$KUBECONFIG" -namespace "$NS" -pods "$N" -rounds "$ROUNDS" -timeout "${TIMEOUT}s"
