#!/usr/bin/env bash
# Benchmarks inplace at scale on the local cluster: N CloneSets x 10 Pods
# (InPlaceIfPossible) driven by inplace-controller against N Deployments x 10
# Pods driven by kube-controller-manager, the control plane's own anchor, on
# the same fake nodes. kwok (sigs.k8s.io/kwok, built by hack/build-kube.sh)
# simulates BENCH_NODES nodes beside the real one and plays a kubelet's part
# for their Pods with the Stages of hack/kwok/stages.yaml: Pods start, Ready
# follows the readiness gates, and a container whose image changes restarts
# with it (new imageID, containerID, restartCount + 1), which is what lets an
# in-place update complete without a real container.
#
#   bash hack/bench-scale.sh [N]          # N workloads of each kind (default 1000)
#   BENCH_REPLICAS=10 BENCH_NODES=100 bash hack/bench-scale.sh 100
#
# For each kind in turn (hack/benchscale): create all and wait until all are
# ready; change the image of all at once and wait until all converge (Pods
# created/deleted, container restarts); scale all to 0; delete all and check
# that nothing is left. Each phase reports wall time, the requests the kind's
# controller sent and how many were answered 429, the requests kube-apiserver's
# priority and fairness rejected, the CPU seconds and peak memory of the
# control plane's processes, and the size of both etcd databases.
#
# Settings (environment): BENCH_REPLICAS (10), BENCH_NODES (100),
# BENCH_CONCURRENCY (32: the benchmark's own requests in flight),
# BENCH_KINDS (cloneset,deployment), BENCH_TIMEOUT (1800 s per phase),
# BENCH_CONTROLLER_ARGS (flags of inplace-controller for the run; default
# "--kube-api-qps=200 --kube-api-burst=400", the client limits local-up gives
# kube-controller-manager, so that both controllers may send as much),
# BENCH_IDLE (75: seconds idle before inplace-apiserver's memory is read at the
# end; it returns a burst's free heap 30-60 s into idleness, --trim-idle-memory), BENCH_PROFILE
# (a directory: CPU profiles of inplace-controller, inplace-apiserver and
# kube-apiserver taken during the CloneSet rollout, then the two heaps, and
# inplace-apiserver's heap once more at the end, when its memory is read).
#
# inplace-controller is restarted for the run (with --profiling and
# BENCH_CONTROLLER_ARGS, so that its peak memory is the run's) and restarted
# again as local-up starts it at the end; kwok and its nodes are removed; the
# namespace is deleted (hack/lib/bench.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=hack/lib/bench.sh
source hack/lib/bench.sh

bench_settings 1000 "${1:-}"
[[ "${BENCH_TIMEOUT:-}" ]] || TIMEOUT=1800
REPLICAS="${BENCH_REPLICAS:-10}"
NODES="${BENCH_NODES:-100}"
((NODES > 0 && NODES <= 250)) || die "BENCH_NODES must be 1..250 (one /24 of 10.200.0.0/16 each)"

bench_start bench-scale
CONTROLLER_ARGS="--profiling ${BENCH_CONTROLLER_ARGS---kube-api-qps=200 --kube-api-burst=400}"
cleanup_scale() {
  local rc=$?
  local_stop kwok >/dev/null 2>&1 || true
  "$KUBECTL" delete nodes -l type=kwok --wait=false >/dev/null 2>&1 || true
  INPLACE_CONTROLLER_ARGS="" hack/local-up.d/20-inplace-controller.sh >/dev/null 2>&1 ||
    log "WARNING: inplace-controller did not start again: run hack/local-up.d/20-inplace-controller.sh"
  (exit "$rc")
  bench_cleanup
}
trap cleanup_scale EXIT

hack/build-kube.sh kwok
go build -o "$WORK/benchscale" ./hack/benchscale

# --- fake nodes --------------------------------------------------------------
# kwok manages the nodes labelled type=kwok only; their taint keeps every Pod
# but the benchmark's (which tolerate it) off them. Each has its own /24 for
# the Pod IPs kwok hands out. The node IP they report, 10.77.0.9, is nobody's
# (10.77.0.1 and .2 are the real nodes'): nothing needs to reach them.
local_stop kwok >/dev/null 2>&1 || true
local_start kwok "$BIN/kwok" --kubeconfig="$KUBECONFIG" \
  --manage-all-nodes=false --manage-nodes-with-label-selector=type=kwok \
  --node-lease-duration-seconds=40 --node-ip=10.77.0.9 --cidr=10.200.0.0/16 \
  --config="$ROOT/hack/kwok/stages.yaml"
{
  for ((i = 0; i < NODES; i++)); do
    cat <<EOF
---
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$i
  labels: {type: kwok, kubernetes.io/hostname: kwok-node-$i}
  annotations: {kwok.x-k8s.io/node: fake}
spec:
  podCIDR: 10.200.$i.0/24
  taints: [{key: kwok.x-k8s.io/node, value: fake, effect: NoSchedule}]
EOF
  done
} > "$WORK/nodes.yaml"
"$KUBECTL" apply -f "$WORK/nodes.yaml" >/dev/null
nodes_ready() {
  local n
  n="$("$KUBECTL" get nodes -l type=kwok -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -c True || true)"
  BENCH_POLL_STATE="$n/$NODES kwok nodes ready"
  ((n == NODES))
}
bench_poll 120 "kwok nodes" nodes_ready
log "$NODES kwok nodes ready"

# --- inplace-controller for the run ------------------------------------------
INPLACE_CONTROLLER_ARGS="$CONTROLLER_ARGS" hack/local-up.d/20-inplace-controller.sh >/dev/null

pids=()
for name in inplace-controller inplace-apiserver kube-controller-manager kube-apiserver etcd kube-scheduler kwok; do
  pid="$(daemon_pid "$name")" || die "$name is not running"
  pids+=("$name=$pid")
done

profile() {
  [[ -n "${BENCH_PROFILE:-}" ]] || return 0
  mkdir -p "$BENCH_PROFILE"
  # During the CloneSet rollout (hack/benchscale logs "rollout"), 30 s of CPU then the heap.
  (
    until grep -q "CloneSet (inplace-controller): rollout" "$WORK/bench.log" 2>/dev/null; do sleep 0.5; done
    curl -s -o "$BENCH_PROFILE/controller.cpu.pprof" "http://127.0.0.1:10390/debug/pprof/profile?seconds=30" &
    "$KUBECTL" --server=https://10.77.0.1:8443 get --raw '/debug/pprof/profile?seconds=30' > "$BENCH_PROFILE/apiserver.cpu.pprof" 2>/dev/null &
    "$KUBECTL" get --raw '/debug/pprof/profile?seconds=30' > "$BENCH_PROFILE/kube-apiserver.cpu.pprof" 2>/dev/null &
    wait
    curl -s -o "$BENCH_PROFILE/controller.heap.pprof" "http://127.0.0.1:10390/debug/pprof/heap"
    "$KUBECTL" --server=https://10.77.0.1:8443 get --raw '/debug/pprof/heap' > "$BENCH_PROFILE/apiserver.heap.pprof" 2>/dev/null
    log "profiles in $BENCH_PROFILE"
  ) &
}
profile

log "benchmark: $N workloads x $REPLICAS Pods of each kind on $NODES kwok nodes, namespace $NS"
"$WORK/benchscale" -kubeconfig "$KUBECONFIG" -namespace "$NS" -workloads "$N" -replicas "$REPLICAS" \
  -concurrency "${BENCH_CONCURRENCY:-32}" -kinds "${BENCH_KINDS:-cloneset,deployment}" -timeout "${TIMEOUT}s" \
  -pids "$(IFS=,; echo "${pids[*]}")" \
  -metrics "cloneset=http://127.0.0.1:10390/metrics,deployment=https://127.0.0.1:10257/metrics" \
  -files "kube etcd db=$STATE/etcd/member/snap/db,inplace etcd db=$STATE/inplace/data/etcd/member/snap/db" \
  2> >(tee "$WORK/bench.log" >&2)

# inplace-apiserver's memory once the run is over and its objects are gone:
# idle for BENCH_IDLE seconds (75) first, which is what is measured. Split into
# anonymous memory (heaps: the server's and its embedded etcd's) and file pages
# (its binary's code and data as far as they were touched, and the embedded
# etcd's memory-mapped database), which the kernel may drop and read again.
pid="$(daemon_pid inplace-apiserver)"
sleep "${BENCH_IDLE:-75}"
printf '%-44s %14s\n' "inplace-apiserver RSS MB (anon + file), ${BENCH_IDLE:-75} s idle after" \
  "$(awk '/^VmRSS:/ { t = $2 } /^RssAnon:/ { a = $2 } /^RssFile:/ { f = $2 }
    END { printf "%.0f (%.0f + %.0f)", t / 1024, a / 1024, f / 1024 }' "/proc/$pid/status")"
# What the idle server still holds (BENCH_PROFILE): its heap at that moment.
if [[ -n "${BENCH_PROFILE:-}" ]]; then
  "$KUBECTL" --server=https://10.77.0.1:8443 get --raw '/debug/pprof/heap' > "$BENCH_PROFILE/apiserver.idle.heap.pprof" 2>/dev/null || true
fi
