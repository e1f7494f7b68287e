#!/usr/bin/env bash
# Benchmarks the API path of CloneSets on the local cluster: inplace's
# aggregated apps.kruise.io/v1alpha1 clonesets (kube-apiserver's aggregator ->
# inplace-apiserver -> its embedded etcd) against OpenKruise's own CloneSet
# CustomResourceDefinition (kube-apiserver -> its etcd), installed beside it
# under the group apps.kruise.example (hack/benchapi/cloneset-crd.yaml). The
# same Go program (hack/benchapi) drives three paths with the same objects:
# the dynamic client (JSON) on each, and inplace's clientset in protobuf on
# the aggregated one (a CRD cannot serve protobuf), and both clients again
# straight to inplace-apiserver ("direct": what the aggregator's proxy hop
# costs is the difference to "aggregated"). For each: create,
# get and update of N CloneSets at 1, 8 and 32 concurrent clients, list
# (whole and paged), and watch fan-out; it prints p50/p99 and ops/s of each
# path, the aggregated path's ratios to the CRD's, and the CPU seconds and
# memory of kube-apiserver, etcd and inplace-apiserver during each path's run.
#
#   bash hack/bench-api.sh [N]                  # N CloneSets (default 1000)
#   BENCH_CONCURRENCY=1,8,32 bash hack/bench-api.sh 5000
#
# With the cluster down, LOCAL_ETCD_FSYNC=1 starts its etcd syncing writes to disk as
# inplace-apiserver's embedded etcd does (hack/local-up.sh), so that creates and
# updates compare on the same footing; the script says which it ran with.
#
# Settings (environment): BENCH_PODS (read as the number of CloneSets, 1000),
# BENCH_CONCURRENCY (1,8,32), BENCH_PAGE (500: page size of the paged list),
# BENCH_WATCHERS (10), BENCH_EVENTS (100), BENCH_PATHS
# (aggregated,aggregated protobuf,direct,direct protobuf,CRD), BENCH_ROUNDS (1:
# rounds of all the paths, their order rotated each round and their latencies
# pooled, so that a spell of a busier machine slows every path alike).
#
# Only the API path is measured: inplace-controller is stopped for the run (it
# would act on the aggregated CloneSets only, creating their Pods and writing
# their status) and started again at the end. The cluster is otherwise left
# as found (see hack/lib/bench.sh): the CRD and the namespace are deleted.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=hack/lib/bench.sh
source hack/lib/bench.sh

bench_settings 1000 "${1:-}"
bench_start bench-api
CRD=clonesets.apps.kruise.example
# (exit "$rc") hands bench_cleanup the script's exit status.
CONTROLLER_STOPPED=
restart_controller() {
  [[ -z "$CONTROLLER_STOPPED" ]] || hack/local-up.d/20-inplace-controller.sh >/dev/null 2>&1 ||
    log "WARNING: inplace-controller did not start again: run hack/local-up.d/20-inplace-controller.sh"
}
# The CRD's kind is named clonesets too: once it is gone, kubectl's discovery
# cache of the cluster ($KUBECACHEDIR) must forget it, or `kubectl get clonesets`
# keeps resolving to the deleted CRD's group (NotFound) for hours.
remove_crd() {
  "$KUBECTL" delete crd "$CRD" --ignore-not-found --wait=true --timeout=120s >/dev/null 2>&1 ||
    log "WARNING: could not delete crd/$CRD"
  rm -rf "${KUBECACHEDIR:?}/discovery"
}
trap 'rc=$?; remove_crd; restart_controller; (exit "$rc"); bench_cleanup' EXIT

if read -r pid _ < "$PIDS/inplace-controller.pid" 2>/dev/null && kill -0 "$pid" 2>/dev/null; then
  CONTROLLER_STOPPED=1
  kill "$pid"
  controller_gone() { ! kill -0 "$pid" 2>/dev/null; }
  bench_poll 30 "inplace-controller stopped" controller_gone
fi

"$KUBECTL" apply -f hack/benchapi/cloneset-crd.yaml >/dev/null
"$KUBECTL" wait --for=condition=Established "crd/$CRD" --timeout=60s >/dev/null
# The CRD's resource reaches discovery and the handler a moment after Established.
crd_served() { "$KUBECTL" -n "$NS" get clonesets.apps.kruise.example >/dev/null 2>&1; }
bench_poll 60 "the CRD served" crd_served

pids=()
for name in kube-apiserver etcd inplace-apiserver; do
  read -r pid _ < "$PIDS/$name.pid" || die "no pid of $name"
  pids+=("$name=$pid")
done
# inplace-apiserver's embedded etcd syncs every write to disk; the local cluster's etcd skips that
# unless it was started with LOCAL_ETCD_FSYNC=1 (hack/local-up.sh): creates and updates of the CRD
# then pay no fsync where the aggregated path's do. Say which comparison this run makes.
read -r etcd_pid _ < "$PIDS/etcd.pid"
if tr '\0' ' ' < "/proc/$etcd_pid/cmdline" | grep -q -- --unsafe-no-fsync; then
  log "note: the cluster's etcd runs with --unsafe-no-fsync and inplace's embedded etcd syncs: CRD writes skip the fsync the aggregated path's pay (LOCAL_ETCD_FSYNC=1 with the cluster down: both sync)"
else
  log "the cluster's etcd and inplace's embedded etcd both sync writes to disk"
fi
# inplace-apiserver's own address (hack/local-up.d/10-inplace-apiserver.sh), for the direct paths.
DIRECT="https://$NODE_IP:${INPLACE_APISERVER_PORT:-8443}"
go build -o "$WORK/benchapi" ./hack/benchapi
log "benchmark: $N CloneSets per concurrency, namespace $NS"
"$WORK/benchapi" -kubeconfig "$KUBECONFIG" -namespace "$NS" -objects "$N" \
  -concurrency "${BENCH_CONCURRENCY:-1,8,32}" -page "${BENCH_PAGE:-500}" \
  -watchers "${BENCH_WATCHERS:-10}" -events "${BENCH_EVENTS:-100}" \
  -paths "${BENCH_PATHS:-aggregated,aggregated protobuf,direct,direct protobuf,CRD}" -direct "$DIRECT" \
  -rounds "${BENCH_ROUNDS:-1}" -pids "$(IFS=,; echo "${pids[*]}")"
