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
ROOT="$PWD"

N="${1:-${BENCH_PODS:-10}}"
ROUNDS="${BENCH_ROUNDS:-1}"
GATE="${BENCH_READINESS_GATE:-0}"
TIMEOUT="${BENCH_TIMEOUT:-180}"
SETTLE="${BENCH_SETTLE:-3}"
[[ "$N" =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [N]   (N: number of Pods, > 0)" >&2; exit 2; }
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "BENCH_ROUNDS must be > 0" >&2; exit 2; }

IMAGE_OLD=inplace.local/app:v1
IMAGE_NEW=inplace.local/app:v2
export KUBECONFIG="$ROOT/_output/local/admin.kubeconfig"
KUBECTL="$ROOT/_output/bin/kubectl"

log() { echo "[$(date +%T.%3N)] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

# cluster_running: kube-apiserver recorded by local-up runs and answers, and so
# does inplace-apiserver (the in-place subresource).
cluster_running() {
  local f pid start stat
  for f in kube-apiserver inplace-apiserver; do
    read -r pid start < "$ROOT/_output/local/pids/$f.pid" 2>/dev/null || return 1
    stat="$(cat "/proc/$pid/stat" 2>/dev/null)" || return 1
    stat="${stat##*) }"
    # shellcheck disable=SC2086 # fields on purpose
    set -- $stat
    [[ "${20}" == "$start" ]] || return 1
  done
  [[ -x "$KUBECTL" ]] && "$KUBECTL" get --raw /readyz >/dev/null 2>&1
}

STARTED_CLUSTER=false
NS=""
WORK=""
cleanup() {
  local rc=$? job
  # Requests still being sent (after a failure): this script's own background jobs.
  for job in $(jobs -p); do kill "$job" 2>/dev/null || true; done
  [[ -z "$WORK" ]] || rm -rf "$WORK"
  if [[ -n "$NS" ]]; then
    "$KUBECTL" delete namespace "$NS" --wait=true --timeout=120s >/dev/null 2>&1 || log "could not delete namespace $NS"
  fi
  if $STARTED_CLUSTER; then
    log "bringing the cluster down again (it was not running)"
    hack/local-down.sh >&2 || rc=1
  fi
  exit "$rc"
}
trap cleanup EXIT

if ! cluster_running; then
  [[ $EUID -eq 0 ]] || die "the local cluster is not running and starting it needs root"
  log "the local cluster is not running: starting it with hack/local-up.sh"
  STARTED_CLUSTER=true
  hack/local-up.sh >&2
fi
cluster_running || die "the local cluster is not up"

NS="bench-inplace-$(date +%s)-$$"
"$KUBECTL" create namespace "$NS" >/dev/null
until "$KUBECTL" -n "$NS" get serviceaccount default >/dev/null 2>&1; do sleep 0.1; done

WORK="$(mktemp -d)"

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

# wait_ready GROUP IMAGE WHAT: poll (0.1 s) until all N Pods of the group are
# Ready on IMAGE.
wait_ready() {
  local deadline=$((SECONDS + TIMEOUT)) n
  while :; do
    n="$(ready_on "$1" "$2")"
    [[ "$n" == "$N" ]] && return 0
    ((SECONDS < deadline)) || die "$3: only $n of $N Pods Ready on $2 after ${TIMEOUT}s"
    sleep 0.1
  done
}

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

mean() { printf '%s\n' "$@" | awk '{ s += $1 } END { printf "%.2f", s / NR }'; }
a="$(mean "${inplace_times[@]}")"
b="$(mean "${recreate_times[@]}")"
echo "pods: $N  rounds: $ROUNDS  readiness gate: $([[ "$GATE" == 1 ]] && echo yes || echo no)"
echo "in-place update (a): ${a}s   [${inplace_times[*]}]$([[ $retries_total -gt 0 ]] && echo "  ($retries_total requests resent after 409)")"
echo "delete+recreate (b): ${b}s   [${recreate_times[*]}]"
echo "ratio recreate/in-place: $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", b / a }')"
