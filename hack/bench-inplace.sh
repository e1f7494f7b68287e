#!/usr/bin/env bash
# Benchmarks an in-place update against delete-and-recreate on the local cluster:
# for N Pods on inplace.local/app:v1, the wall time from the first request until
# all N Pods are Ready on inplace.local/app:v2,
#
#   (a) in place: one POST pods/NAME/inplaceupdate per Pod (kubectl create --raw,
#       all N sent at once), then wait;
#   (b) recreate: delete the N Pods (waiting until they are gone, since the new
#       ones have the same names), create them again with the same spec on v2,
#       then wait;
#
# and prints both times and the ratio recreate / in-place.
#
#   bash hack/bench-inplace.sh [N]          # N: number of Pods (default 10, or $BENCH_PODS)
#   BENCH_ROUNDS=3 bash hack/bench-inplace.sh 10
#
# Settings (environment):
#   BENCH_PODS=10            number of Pods when no argument is given
#   BENCH_ROUNDS=1           rounds of (a) and (b); each round starts from fresh v1 Pods
#   BENCH_READINESS_GATE=0   1: the Pods carry the InPlaceUpdateReady readiness gate (as a
#                            CloneSet's Pods do); a request refused with "the object has been
#                            modified" is sent again (until BENCH_TIMEOUT) and counted.
#   BENCH_TIMEOUT=180        seconds to wait for each phase
#   BENCH_SETTLE=3           seconds the v1 Pods run after they are Ready, before the clock
#                            starts (a container younger than ~2 s is restarted ~2 s later
#                            by the kubelet, whose relist runs once a second)
#
# The cluster is left as found: when it is not running, the script brings it up
# with hack/local-up.sh (root needed) and down with hack/local-down.sh at the end;
# its Pods live in a namespace of their own, deleted at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=hack/lib/bench.sh
source hack/lib/bench.sh

bench_settings 10 "${1:-}"
GATE="${BENCH_READINESS_GATE:-0}"

IMAGE_OLD=inplace.local/app:v1
IMAGE_NEW=inplace.local/app:v2
bench_start bench-inplace

# pods_yaml GROUP IMAGE: the N Pods of a group (names GROUP-0 ... GROUP-N-1).
pods_yaml() {
  local group="$1" image="$2" i
  for ((i = 0; i < N; i++)); do
    cat <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $group-$i
  labels: {bench: $group}
spec:
$(if [[ "$GATE" == 1 ]]; then echo "  readinessGates: [{conditionType: InPlaceUpdateReady}]"; fi)
  containers:
  - name: main
    image: $image
    imagePullPolicy: Never
---
EOF
  done
}

# ready_on GROUP IMAGE: how many Pods of the group are Ready with their
# container running IMAGE and ready.
ready_on() {
  "$KUBECTL" -n "$NS" get pods -l "bench=$1" -o \
    'jsonpath={range .items[*]}{.metadata.deletionTimestamp}|{.status.containerStatuses[0].image}|{.status.containerStatuses[0].ready}|{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' |
    awk -F'|' -v img="$2" '$1 == "" && $2 == img && $3 == "true" && $4 == "True" { n++ } END { print n + 0 }'
}

# all_ready_on GROUP IMAGE: whether all N Pods of the group are Ready on IMAGE.
all_ready_on() {
  local n
  n="$(ready_on "$1" "$2")"
  BENCH_POLL_STATE="only $n of $N Pods Ready on $2"
  [[ "$n" == "$N" ]]
}

# wait_ready GROUP IMAGE WHAT: poll (0.1 s) until all N Pods of the group are
# Ready on IMAGE.
wait_ready() { bench_poll "$TIMEOUT" "$3" all_ready_on "$1" "$2"; }

# inplace_update NAME: POST pods/NAME/inplaceupdate; a refusal "the object has
# been modified" (409, or 500 when it hit the status write: inplace losing a
# write race against inplace-controller, seen with the readiness gate) is sent
# again until $TIMEOUT, and counted in $WORK/retries.
inplace_update() {
  local name="$1" out deadline=$((SECONDS + TIMEOUT))
  while :; do
    if out="$("$KUBECTL" create --raw "/apis/apps.kruise.io/v1alpha1/namespaces/$NS/pods/$name/inplaceupdate" \
      -f "$WORK/body.json" 2>&1 >/dev/null)"; then
      return 0
    fi
    if [[ "$out" != *"the object has been modified"* ]]; then
      log "pods/$name/inplaceupdate: $out"
      return 1
    fi
    echo "$name" >> "$WORK/retries"
    if ((SECONDS >= deadline)); then
      log "pods/$name/inplaceupdate: still refused after ${TIMEOUT}s: $out"
      return 1
    fi
  done
}

cat > "$WORK/body.json" <<EOF
{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "InPlaceUpdate",
 "spec": {"revision": "bench-v2", "containers": [{"name": "main", "image": "$IMAGE_NEW"}]}}
EOF

log "benchmark: $N Pods, $ROUNDS round(s), readiness gate: $([[ "$GATE" == 1 ]] && echo yes || echo no), settle ${SETTLE}s, namespace $NS"
inplace_times=() recreate_times=() retries_total=0
for ((round = 1; round <= ROUNDS; round++)); do
  A="ip$round" B="rc$round"
  # Both groups start on v1 together, so they have settled for the same time.
  { pods_yaml "$A" "$IMAGE_OLD"; pods_yaml "$B" "$IMAGE_OLD"; } | "$KUBECTL" -n "$NS" create -f - >/dev/null
  wait_ready "$A" "$IMAGE_OLD" "creating group $A"
  wait_ready "$B" "$IMAGE_OLD" "creating group $B"
  sleep "$SETTLE" # not synchronisation: the same settled start for (a) and (b)

  # (a) in place
  : > "$WORK/retries"
  t0="$(now)"
  pids=()
  for ((i = 0; i < N; i++)); do
    inplace_update "$A-$i" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || die "an in-place update request failed"; done
  t_sent="$(now)"
  wait_ready "$A" "$IMAGE_NEW" "in-place update of group $A"
  t1="$(now)"
  retries="$(wc -l < "$WORK/retries")"
  retries_total=$((retries_total + retries))
  inplace_times+=("$(elapsed "$t0" "$t1")")
  log "round $round (a) in place:  $(elapsed "$t0" "$t1")s (requests sent after $(elapsed "$t0" "$t_sent")s, $retries resent after 409)"

  # (b) delete and recreate with the same spec on v2
  pods_yaml "$B" "$IMAGE_NEW" > "$WORK/new.yaml"
  t0="$(now)"
  "$KUBECTL" -n "$NS" delete pods -l "bench=$B" --wait=true >/dev/null
  t_deleted="$(now)"
  "$KUBECTL" -n "$NS" create -f "$WORK/new.yaml" >/dev/null
  wait_ready "$B" "$IMAGE_NEW" "recreating group $B"
  t1="$(now)"
  recreate_times+=("$(elapsed "$t0" "$t1")")
  log "round $round (b) recreate:  $(elapsed "$t0" "$t1")s (old Pods gone after $(elapsed "$t0" "$t_deleted")s)"

  "$KUBECTL" -n "$NS" delete pods -l "bench in ($A,$B)" --wait=false >/dev/null
done

a="$(mean "${inplace_times[@]}")"
b="$(mean "${recreate_times[@]}")"
echo "pods: $N  rounds: $ROUNDS  readiness gate: $([[ "$GATE" == 1 ]] && echo yes || echo no)"
echo "in-place update (a): ${a}s   [${inplace_times[*]}]$([[ $retries_total -gt 0 ]] && echo "  ($retries_total requests resent after 409)")"
echo "delete+recreate (b): ${b}s   [${recreate_times[*]}]"
echo "ratio recreate/in-place: $(ratio "$b" "$a")"
