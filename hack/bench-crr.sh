#!/usr/bin/env bash
# Benchmarks ContainerRecreateRequests against the floor on the local cluster:
# for N Pods with one container "main" (inplace.local/app:v1, which exits 0
# promptly on SIGTERM; restartPolicy Always, terminationGracePeriodSeconds 1),
# the wall time from the start until every Pod's main runs again as a new
# instance (a container id other than before) and the Pod is Ready again,
#
#   (a) CRR: one ContainerRecreateRequest per Pod (apps.kruise.io/v1alpha1,
#       containers [main]), all N created by one `kubectl create -f -`, then wait;
#   (b) floor: the same containers stopped directly through CRI on the node
#       (_output/bin/minicri stop: StopContainer for all N at once, timeout 1 s as
#       the kubelet's for this grace period), then wait for the kubelet to start
#       them again;
#
# and prints both times and the ratio CRR / floor (the goal: at most 1.2).
#
#   bash hack/bench-crr.sh [N]          # N: number of Pods (default 10, or $BENCH_PODS)
#   BENCH_ROUNDS=3 bash hack/bench-crr.sh 10
#
# Settings (environment):
#   BENCH_PODS=10            number of Pods when no argument is given
#   BENCH_ROUNDS=1           rounds of (a) and (b); each round starts from fresh Pods (also
#                            so that no restart of a container is held back by the kubelet's
#                            crash-loop back-off, which starts with a container's second restart)
#   BENCH_TIMEOUT=180        seconds to wait for each phase
#   BENCH_SETTLE=3           seconds the Pods run after they are Ready, before the clock
#                            starts (see hack/bench-inplace.sh)
#
# (b) talks to the node's container runtime ($CONTAINER_RUNTIME_ENDPOINT of
# _output/local/env), which needs root; minicri is (re)built first with
# hack/build-kube.sh minicri (cached). The cluster is left as found (see
# hack/lib/bench.sh); its Pods live in a namespace of their own, deleted at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=hack/lib/bench.sh
source hack/lib/bench.sh

bench_settings 10 "${1:-}"

IMAGE=inplace.local/app:v1
GRACE=1 # terminationGracePeriodSeconds of the Pods, and the floor's CRI stop timeout
MINICRI="$BIN/minicri"

hack/build-kube.sh minicri >&2 || die "could not build $MINICRI"
bench_start bench-crr

# The node's CRI endpoint (hack/lib/local.sh).
CRI_ENDPOINT="$CONTAINER_RUNTIME_ENDPOINT"
"$MINICRI" -endpoint "$CRI_ENDPOINT" -timeout 10s ps >/dev/null ||
  die "cannot talk to the container runtime at $CRI_ENDPOINT (the floor stops containers through CRI: root needed)"

# pods_yaml GROUP: the N Pods of a group (names GROUP-0 ... GROUP-N-1).
pods_yaml() {
  local group="$1" i
  for ((i = 0; i < N; i++)); do
    cat <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $group-$i
  labels: {bench: $group}
spec:
  restartPolicy: Always
  terminationGracePeriodSeconds: $GRACE
  containers:
  - name: main
    image: $IMAGE
    imagePullPolicy: Never
---
EOF
  done
}

# crrs_yaml GROUP: one ContainerRecreateRequest per Pod of the group, for main
# (named as its Pod).
crrs_yaml() {
  local group="$1" i
  for ((i = 0; i < N; i++)); do
    cat <<EOF
apiVersion: apps.kruise.io/v1alpha1
kind: ContainerRecreateRequest
metadata:
  name: $group-$i
  labels: {bench: $group}
spec:
  podName: $group-$i
  containers:
  - name: main
---
EOF
  done
}

# container_ids GROUP: "NAME|CONTAINER-ID" of main, one line per Pod of the group.
container_ids() {
  "$KUBECTL" -n "$NS" get pods -l "bench=$1" -o \
    'jsonpath={range .items[*]}{.metadata.name}|{.status.containerStatuses[0].containerID}{"\n"}{end}'
}

# ready_new GROUP BEFORE: how many Pods of the group are Ready with main ready
# as an instance that BEFORE (a container_ids file; /dev/null: none) does not
# name for that Pod.
ready_new() {
  "$KUBECTL" -n "$NS" get pods -l "bench=$1" -o \
    'jsonpath={range .items[*]}{.metadata.name}|{.status.containerStatuses[0].containerID}|{.status.containerStatuses[0].ready}|{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' |
    awk -F'|' -v before="$2" '
      BEGIN { while ((getline line < before) > 0) { split(line, f, "|"); old[f[1]] = f[2] } }
      $2 != "" && $2 != old[$1] && $3 == "true" && $4 == "True" { n++ }
      END { print n + 0 }'
}

# all_ready_new GROUP BEFORE: whether all N Pods of the group are (see ready_new).
all_ready_new() {
  local n
  n="$(ready_new "$1" "$2")"
  BENCH_POLL_STATE="only $n of $N Pods Ready$([[ "$2" == /dev/null ]] || echo " on a new instance of main")"
  [[ "$n" == "$N" ]]
}

# wait_ready GROUP BEFORE WHAT: poll (0.1 s) until all N Pods of the group are
# (see ready_new).
wait_ready() { bench_poll "$TIMEOUT" "$3" all_ready_new "$1" "$2"; }

# record_ids GROUP: writes container_ids of the group to $WORK/GROUP.before
# (and checks that every Pod has one).
record_ids() {
  container_ids "$1" > "$WORK/$1.before"
  awk -F'|' -v n="$N" '$2 != "" { k++ } END { exit !(k == n && NR == n) }' "$WORK/$1.before" ||
    die "group $1: expected $N Pods with a container id, got: $(tr '\n' ' ' < "$WORK/$1.before")"
}

log "benchmark: $N Pods, $ROUNDS round(s), settle ${SETTLE}s, grace ${GRACE}s, CRI $CRI_ENDPOINT, namespace $NS"
crr_times=() floor_times=()
for ((round = 1; round <= ROUNDS; round++)); do
  A="crr$round" B="cri$round"
  # Both groups start together, so they have settled for the same time.
  { pods_yaml "$A"; pods_yaml "$B"; } | "$KUBECTL" -n "$NS" create -f - >/dev/null
  wait_ready "$A" /dev/null "creating group $A"
  wait_ready "$B" /dev/null "creating group $B"
  sleep "$SETTLE" # not synchronisation: the same settled start for (a) and (b)

  # (a) ContainerRecreateRequests
  crrs_yaml "$A" > "$WORK/crrs.yaml"
  record_ids "$A"
  t0="$(now)"
  "$KUBECTL" -n "$NS" create -f "$WORK/crrs.yaml" >/dev/null
  t_sent="$(now)"
  wait_ready "$A" "$WORK/$A.before" "ContainerRecreateRequests of group $A"
  t1="$(now)"
  completed="$("$KUBECTL" -n "$NS" get containerrecreaterequests -l "bench=$A" -o \
    'jsonpath={range .items[*]}{.status.phase}{"\n"}{end}' | awk '$1 == "Completed" { n++ } END { print n + 0 }')"
  crr_times+=("$(elapsed "$t0" "$t1")")
  log "round $round (a) CRR:    $(elapsed "$t0" "$t1")s (requests created after $(elapsed "$t0" "$t_sent")s, $completed of $N Completed just after)"

  # (b) the floor: stop the containers through CRI, the kubelet starts them again
  record_ids "$B"
  mapfile -t ids < <(cut -d'|' -f2 "$WORK/$B.before")
  t0="$(now)"
  "$MINICRI" -endpoint "$CRI_ENDPOINT" -timeout "${TIMEOUT}s" stop -timeout-seconds "$GRACE" "${ids[@]}" >/dev/null
  t_stopped="$(now)"
  wait_ready "$B" "$WORK/$B.before" "containers of group $B stopped through CRI"
  t1="$(now)"
  floor_times+=("$(elapsed "$t0" "$t1")")
  log "round $round (b) floor:  $(elapsed "$t0" "$t1")s (containers stopped after $(elapsed "$t0" "$t_stopped")s)"

  "$KUBECTL" -n "$NS" delete containerrecreaterequests -l "bench=$A" --wait=false >/dev/null
  "$KUBECTL" -n "$NS" delete pods -l "bench in ($A,$B)" --wait=false >/dev/null
done

a="$(mean "${crr_times[@]}")"
b="$(mean "${floor_times[@]}")"
echo "pods: $N  rounds: $ROUNDS  grace: ${GRACE}s"
echo "ContainerRecreateRequest (a): ${a}s   [${crr_times[*]}]"
echo "CRI stop, the floor (b):      ${b}s   [${floor_times[*]}]"
echo "ratio CRR/floor: $(ratio "$a" "$b")   (goal: at most 1.2)"
