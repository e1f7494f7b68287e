#!/usr/bin/env bash
# Benchmarks what inplace's Pod admission webhook adds to creating a Pod, on the
# local cluster: N Pods (default 200) created one after another by a Go client,
# in three phases on the same kube-apiserver,
#
#   (a) the MutatingWebhookConfiguration inplace-pod-webhook removed;
#   (b) registered, the Pods selected by a SidecarSet (the webhook injects it);
#   (c) registered, the Pods selected by no SidecarSet (the webhook answers
#       without a patch: what every other Pod of the cluster pays);
#   (d) the floor: instead of inplace's, a no-op webhook (allows, no patch,
#       nothing else) served by the benchmark itself on this host, registered
#       the same way: what any webhook costs a Pod creation on this cluster;
#
# and prints p50/p99 of the Create calls for each and what each webhook adds
# (the goal: at most 5 ms at p99). The Pods name a scheduler that does not
# exist: nothing runs them, only the API path is timed.
#
#   bash hack/bench-webhook.sh [N]
#   BENCH_ROUNDS=3 bash hack/bench-webhook.sh 200
#
# Settings (environment): BENCH_PODS (200), BENCH_ROUNDS (1: rounds of the
# three phases, their latencies pooled), BENCH_WARMUP (20 Pods created and not
# counted before each phase).
#
# The cluster is left as found (see hack/lib/bench.sh); the webhook
# configuration is put back, the SidecarSet and the namespace deleted.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=hack/lib/bench.sh
source hack/lib/bench.sh

bench_settings 200 "${1:-}"
bench_start bench-webhook

# The no-op webhook serves with inplace-apiserver's certificate (valid for the
# node's IP, signed by the cluster CA), as hack/local-up.sh wrote them.
[[ -r "$PKI/inplace-apiserver.crt" ]] || die "no $PKI/inplace-apiserver.crt"

go build -o "$WORK/benchwebhook" ./hack/benchwebhook
"$WORK/benchwebhook" -kubeconfig "$KUBECONFIG" -namespace "$NS" -pods "$N" -rounds "$ROUNDS" \
  -warmup "${BENCH_WARMUP:-20}" -floor-host "$NODE_IP" -floor-ca "$PKI/ca.crt" \
  -floor-cert "$PKI/inplace-apiserver.crt" -floor-key "$PKI/inplace-apiserver.key"
