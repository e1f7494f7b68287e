#!/usr/bin/env bash
# Benchmarks a CloneSet's image pre-download on a rollout whose new image is
# cold: on no node, and slow to pull (the local registry serves its slow/*
# repositories at 256 KiB/s, so slow/app:v2's own 1 MiB layer takes ~4 s;
# hack/local-up.d/05-registry.sh). Needs the local cluster with its second
# node (INPLACE_NODES=2; started that way when it is not running).
#
# N Pods (default 20) of a CloneSet, InPlaceIfPossible, maxUnavailable
# BENCH_MAX_UNAVAILABLE (default 2), imagePullPolicy IfNotPresent, spread
# evenly over the two nodes, go from slow/app:v1 to slow/app:v2. The Pods of
# node 1 are updated first (updateStrategy.priorityStrategy on a label this
# script puts on them): a rollout that goes node by node, as one that goes pool
# by pool or zone by zone does. Without pre-download the first wave on each
# node waits for that node's pull; with it, node 2 pulls while node 1's waves
# run. Two ways, each round starting from fresh v1 Pods and rolling out an
# image no node has (app:v2 pushed as slow/app:v2-ROUND with 1 MiB of its own):
#
#   cold         the CloneSet annotated
#                apps.kruise.io/image-predownload-min-updated-ready-pods: 100%
#                (pre-download only once every Pod is updated: never)
#   predownload  as created (inplace-controller pre-downloads by default): the
#                ImagePullJob for slow/app:v2 starts with the rollout, on both nodes
#                at once (apps.kruise.io/image-predownload-parallelism: 2, on
#                both ways' CloneSets)
#
# It prints, per way, the wall time from the template change until all N Pods
# are updated and ready (status.updatedReadyReplicas == N at the new
# revision), the mean over rounds, the ratio predownload / cold, and how many
# times a kubelet pulled slow/app:v2 for a Pod (its Pulling events: with
# pre-download, node 2's Pods should find the image there).
#
#   bash hack/bench-predownload.sh [N]
#   BENCH_ROUNDS=3 bash hack/bench-predownload.sh 20
#
# Settings (environment): BENCH_PODS (20), BENCH_ROUNDS (1), BENCH_TIMEOUT
# (180 s per phase), BENCH_MAX_UNAVAILABLE (2), BENCH_WAYS (cold,predownload).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=hack/lib/bench.sh
source hack/lib/bench.sh

bench_settings 20 "${1:-}"
MAX_UNAVAILABLE="${BENCH_MAX_UNAVAILABLE:-2}"
WAYS="${BENCH_WAYS:-cold,predownload}"
IFS=, read -r -a ways <<< "$WAYS"
for w in "${ways[@]}"; do
  [[ "$w" == cold || "$w" == predownload ]] || die "BENCH_WAYS: unknown way $w (cold, predownload)"
done
((N % 2 == 0)) || die "N must be even (half the Pods on each node)"
OLD="$REGISTRY_HOST/slow/app:v1"
NEW="" # per rollout: fresh_image

export INPLACE_NODES=2
bench_start bench-predownload
"$KUBECTL" get node "$NODE2_NAME" >/dev/null 2>&1 ||
  die "the local cluster runs without its second node: restart it with INPLACE_NODES=2 hack/local-up.sh"

# cloneset NAME WAY: the CloneSet's manifest at slow/app:v1.
cloneset() {
  # Both nodes pull at once (the job's parallelism, 1 by default).
  local annotations='annotations: {apps.kruise.io/image-predownload-parallelism: "2"}'
  [[ "$2" == cold ]] && annotations='annotations: {apps.kruise.io/image-predownload-parallelism: "2", apps.kruise.io/image-predownload-min-updated-ready-pods: "100%"}'
  cat <<EOF
apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata:
  name: $1
  $annotations
spec:
  replicas: $N
  selector: {matchLabels: {bench: $1}}
  updateStrategy:
    type: InPlaceIfPossible
    maxUnavailable: $MAX_UNAVAILABLE
    priorityStrategy:
      weightPriority:
      - weight: 100
        matchSelector: {matchLabels: {bench-first: "true"}}
  template:
    metadata:
      labels: {bench: $1}
    spec:
      terminationGracePeriodSeconds: 1
      tolerations: [{key: $NODE2_TAINT, operator: Exists}]
      topologySpreadConstraints:
      - maxSkew: 1
        topologyKey: kubernetes.io/hostname
        whenUnsatisfiable: DoNotSchedule
        labelSelector: {matchLabels: {bench: $1}}
      containers:
      - name: app
        image: $OLD
        imagePullPolicy: IfNotPresent
EOF
}

# updated_ready NAME COUNT: the CloneSet's status says COUNT updated and ready
# Pods at its update revision, for its current generation.
updated_ready() {
  local s
  s="$("$KUBECTL" -n "$NS" get clonesets.apps.kruise.io "$1" -o \
    'jsonpath={.metadata.generation} {.status.observedGeneration} {.status.updatedReadyReplicas} {.status.readyReplicas}')"
  read -r gen observed ur ready <<< "$s"
  BENCH_POLL_STATE="$s (generation observed updatedReady ready)"
  [[ "$gen" == "$observed" && "${ur:-0}" == "$2" && "${ready:-0}" == "$2" ]]
}

# pulls NAME: how many times a kubelet pulled slow/app:v2 for the CloneSet's Pods.
pulls() {
  "$KUBECTL" -n "$NS" get events --field-selector reason=Pulling -o \
    'jsonpath={range .items[*]}{.involvedObject.name} {.message}{"\n"}{end}' |
    awk -v p="$1-" -v img="$NEW" 'index($1, p) == 1 && index($0, img) > 0' | wc -l
}

# fresh_image NAME: pushes app:v2 as slow/app:v2-NAME, with a label and a 1 MiB
# layer of its own (inplace-registry push -label -pad-layer): content that no
# node has. (Removing an image through CRI may leave its layers in containerd's
# content store, which would make the next pull of the same image fast.)
fresh_image() {
  local ref="$REGISTRY_HOST/slow/app:v2-$1"
  "$BIN/inplace-registry" push -resolve "$REGISTRY_HOST=$REGISTRY_ADDR" -label "inplace.dev/bench=$NS-$1" \
    -pad-layer 1048576 "$ROOT/_output/images/app-v2.tar" "$ref" >/dev/null
  echo "$ref"
}

# pods_gone NAME: no Pod of the CloneSet is left.
pods_gone() { [[ -z "$("$KUBECTL" -n "$NS" get pods -l "bench=$1" -o name)" ]]; }

declare -A times=() npulls=()
for ((round = 1; round <= ROUNDS; round++)); do
  for way in "${ways[@]}"; do
    name="$way-r$round"
    NEW="$(fresh_image "$name")"
    cloneset "$name" "$way" | "$KUBECTL" -n "$NS" apply -f - >/dev/null
    bench_poll "$TIMEOUT" "$name: $N Pods ready at v1" updated_ready "$name" "$N"
    # Node 1's Pods first: the rollout goes node by node.
    "$KUBECTL" -n "$NS" label pods -l "bench=$name" --field-selector "spec.nodeName=$NODE_NAME" \
      --overwrite bench-first=true >/dev/null
    per_node="$("$KUBECTL" -n "$NS" get pods -l "bench=$name" -o 'jsonpath={range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort | uniq -c | paste -sd' ')"
    log "$name: $N Pods ready at v1 ($per_node)"
    sleep "$SETTLE"

    t0="$(now)"
    "$KUBECTL" -n "$NS" patch clonesets.apps.kruise.io "$name" --type=json \
      -p "[{\"op\":\"replace\",\"path\":\"/spec/template/spec/containers/0/image\",\"value\":\"$NEW\"}]" >/dev/null
    bench_poll "$TIMEOUT" "$name: $N Pods updated and ready" updated_ready "$name" "$N"
    t1="$(now)"
    times[$way]+="$(elapsed "$t0" "$t1") "
    npulls[$way]+="$(pulls "$name") "
    log "$name: rolled out in $(elapsed "$t0" "$t1") s; kubelet pulls of v2: $(pulls "$name")"
    "$KUBECTL" -n "$NS" delete clonesets.apps.kruise.io "$name" --wait=true >/dev/null
    bench_poll "$TIMEOUT" "$name: Pods gone" pods_gone "$name"
    "$BIN/minicri" -endpoint "$CONTAINER_RUNTIME_ENDPOINT" rmi "$NEW" >/dev/null
    "$BIN/minicri" -endpoint "$NODE2_RUNTIME_ENDPOINT" rmi "$NEW" >/dev/null
  done
done

echo
echo "cold-image rollout: $N Pods, maxUnavailable $MAX_UNAVAILABLE, two nodes (node 1's Pods first), slow/app:v1 -> a fresh slow/app:v2-* (1 MiB of its own at 256 KiB/s); $ROUNDS round(s)"
printf '%-12s %-28s %8s %8s %s\n' way "seconds per round" mean ratio "kubelet pulls of v2"
cold_mean=""
[[ -n "${times[cold]:-}" ]] && cold_mean="$(mean ${times[cold]})"
for way in "${ways[@]}"; do
  m="$(mean ${times[$way]})"
  r="-"
  [[ -n "$cold_mean" ]] && r="$(ratio "$m" "$cold_mean")"
  printf '%-12s %-28s %8s %8s %s\n' "$way" "${times[$way]}" "$m" "$r" "${npulls[$way]}"
done
