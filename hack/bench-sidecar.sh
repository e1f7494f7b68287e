#!/usr/bin/env bash
# Benchmarks a sidecar upgrade on the local cluster: N fat Pods (container app
# plus sidecars sidecar-1 and sidecar-2 on inplace.local/app:v1) get both
# sidecars on inplace.local/app:v2. The wall time runs from the moment the
# change is submitted until all N Pods are Ready with both sidecars running v2,
# ready, three ways:
#
#   floor       plain Pods with the sidecars in their spec, the two sidecar
#               images patched with the core API (the Pods of a wave in
#               parallel) in waves of maxUnavailable Pods: a wave is patched,
#               then waited for, then the next;
#   sidecarset  a CloneSet of N Pods whose template has app only; a SidecarSet
#               (apps.kruise.io/v1alpha1, the same two sidecars, injected after
#               app, updateStrategy maxUnavailable) injects the sidecars; its
#               images patched; done when its status also says
#               updatedPods == updatedReadyPods == matchedPods == N;
#   deployment  what a Deployment user does today: an apps/v1 Deployment with
#               the sidecars in its template, RollingUpdate, maxUnavailable,
#               maxSurge 0, both sidecar images changed in the template (every
#               Pod replaced); done when its status says updatedReplicas ==
#               readyReplicas == N.
#
# for two Pod shapes (a slow readiness is a tcpSocket probe of a port the
# container serves, busybox httpd, passing from BENCH_WARMUP (5) s after it
# starts):
#
#   a   the fat Pod of hack/bench-rollout.sh: the sidecars are slow to become
#       ready, the app is ready at once. Every way restarts the sidecars, so
#       every way waits for their readiness in each wave: the floor is bounded
#       by it too;
#   b   the app is slow to become ready (a business container warming up), the
#       sidecars (log agents) are ready at once: in place, the app keeps
#       running; a new Pod waits for the app again.
#
# It prints each time, its ratio to the Deployment's and to the floor's, how
# many Pods have a UID and an IP that none of the N Pods had before, how many
# app containers restarted (0 for the in-place ways; a replaced Pod starts a
# new app container, counted as a restart here), and how busy the node's CPUs
# were.
#
#   bash hack/bench-sidecar.sh [N]          # N: number of Pods (default 20, or $BENCH_PODS)
#   BENCH_ROUNDS=2 bash hack/bench-sidecar.sh 20
#
# Settings (environment):
#   BENCH_PODS=20               number of Pods when no argument is given
#   BENCH_ROUNDS=1              rounds; each way of each round starts from fresh v1 Pods
#   BENCH_SHAPES=a,b            Pod shapes to run (see above)
#   BENCH_WAYS=floor,sidecarset,deployment    ways to run, in this order
#   BENCH_MAX_UNAVAILABLE=50%   maxUnavailable of the SidecarSet and the Deployment, and
#                               the floor's wave size (a percentage rounds up)
#   BENCH_TIMEOUT=180           seconds to wait for each phase
#   BENCH_WARMUP=5              seconds after its start a slow container becomes ready (the
#                               sidecars in shape a, the app in shape b): how long an app
#                               warms up, which a replaced Pod waits for again
#   BENCH_SETTLE=3              seconds the v1 Pods run after they are Ready, before the clock
#                               starts
#
# The cluster is left as found (see hack/lib/bench.sh); everything lives in a
# namespace of its own, deleted at the end, and the SidecarSets (cluster-scoped)
# are deleted after each way.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=hack/lib/bench.sh
source hack/lib/bench.sh

bench_settings 20 "${1:-}"
WAYS="${BENCH_WAYS:-floor,sidecarset,deployment}"
SHAPES="${BENCH_SHAPES:-a,b}"
MAX_UNAVAILABLE="${BENCH_MAX_UNAVAILABLE:-50%}"
WARMUP="${BENCH_WARMUP:-5}"
usage() { echo "$*; settings: see the header of $0" >&2; exit 2; }
[[ "$WARMUP" =~ ^[0-9]+$ ]] || usage "BENCH_WARMUP must be a number of seconds"
IFS=, read -r -a ways <<< "$WAYS"
IFS=, read -r -a shapes <<< "$SHAPES"
for s in "${shapes[@]}"; do [[ "$s" == a || "$s" == b ]] || usage "BENCH_SHAPES: unknown shape '$s'"; done
for w in "${ways[@]}"; do
  [[ "$w" =~ ^(floor|sidecarset|deployment)$ ]] || usage "BENCH_WAYS: unknown way '$w'"
done
if [[ "$MAX_UNAVAILABLE" =~ ^([0-9]+)%$ ]]; then
  WAVE=$(((N * BASH_REMATCH[1] + 99) / 100))
elif [[ "$MAX_UNAVAILABLE" =~ ^[0-9]+$ ]]; then
  WAVE="$MAX_UNAVAILABLE"
else
  usage "BENCH_MAX_UNAVAILABLE must be a count or a percentage"
fi
((WAVE > 0)) || usage "BENCH_MAX_UNAVAILABLE must allow at least one Pod"
WAVE=$((WAVE < N ? WAVE : N))

APP_IMAGE=inplace.local/app:v1
IMAGE_OLD=inplace.local/app:v1
IMAGE_NEW=inplace.local/app:v2

declare -A SHAPE_NAME=(
  [a]="app + 2 sidecars ready $WARMUP s after start"
  [b]="app ready $WARMUP s after start + 2 sidecars"
)
declare -A WAY_NAME=(
  [floor]="floor: core API patch, waves of $WAVE"
  [sidecarset]="SidecarSet in-place upgrade"
  [deployment]="Deployment RollingUpdate"
)

bench_start bench-sidecar
SETS=()
# The SidecarSets are cluster-scoped: not deleted with the namespace.
# (exit "$rc") hands bench_cleanup the script's exit status.
trap 'rc=$?; for s in "${SETS[@]}"; do "$KUBECTL" delete sidecarset "$s" --ignore-not-found >/dev/null 2>&1 || true; done; (exit "$rc"); bench_cleanup' EXIT

# --- manifests -----------------------------------------------------------------

# slow_ready PORT: a container's command serving PORT (sh as PID 1 exits on
# TERM; busybox httpd alone would ignore it) and a readiness probe of it that
# passes from WARMUP s after the container starts.
slow_ready() {
  cat <<EOF
  command: [sh, -c, 'trap "exit 0" TERM; httpd -f -p $1 -h /tmp & wait']
  readinessProbe: {tcpSocket: {port: $1}, initialDelaySeconds: $WARMUP, periodSeconds: 1}
EOF
}

# sidecars SHAPE IMAGE: the two sidecar containers (at indentation 0).
sidecars() {
  local i
  for i in 1 2; do
    cat <<EOF
- name: sidecar-$i
  image: $2
  imagePullPolicy: Never
EOF
    [[ "$1" != a ]] || slow_ready "808$i"
  done
}

# app SHAPE: the app container (at indentation 0).
app() {
  cat <<EOF
- name: app
  image: $APP_IMAGE
  imagePullPolicy: Never
EOF
  [[ "$1" != b ]] || slow_ready 8080
}

# indent N: stdin indented by N spaces.
indent() { sed "s/^/$(printf "%$1s")/"; }

# floor_yaml GROUP SHAPE: N plain Pods GROUP-0 ... on v1 sidecars, labelled with their wave.
floor_yaml() {
  local i
  for ((i = 0; i < N; i++)); do
    cat <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1-$i
  labels: {bench: $1, wave: "$((i / WAVE))"}
spec:
  terminationGracePeriodSeconds: 1
  containers:
$({ app "$2"; sidecars "$2" "$IMAGE_OLD"; } | indent 2)
---
EOF
  done
}

# sidecarset_yaml GROUP SHAPE: the SidecarSet GROUP-NS (cluster-scoped, so named after
# the namespace too) selecting the group's Pods in $NS, and a CloneSet of N
# Pods with app only.
sidecarset_yaml() {
  cat <<EOF
apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata:
  name: $1-$NS
spec:
  selector:
    matchLabels: {bench: $1}
  namespace: $NS
  updateStrategy: {type: RollingUpdate, maxUnavailable: $MAX_UNAVAILABLE}
  containers:
$(sidecars "$2" "$IMAGE_OLD" | sed 's/^- name: \(.*\)$/- name: \1\n  podInjectPolicy: AfterAppContainer/' | indent 2)
---
apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata:
  name: $1
  labels: {bench: $1}
spec:
  replicas: $N
  selector:
    matchLabels: {bench: $1}
  template:
    metadata:
      labels: {bench: $1}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
$(app "$2" | indent 6)
EOF
}

# deployment_yaml GROUP SHAPE: a Deployment of N Pods with the sidecars on v1.
deployment_yaml() {
  cat <<EOF
apiVersion: apps/v1
kind: Deployment
metadata:
  name: $1
  labels: {bench: $1}
spec:
  replicas: $N
  selector:
    matchLabels: {bench: $1}
  strategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: $MAX_UNAVAILABLE, maxSurge: 0}}
  template:
    metadata:
      labels: {bench: $1}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
$({ app "$2"; sidecars "$2" "$IMAGE_OLD"; } | indent 6)
EOF
}

# --- waiting -------------------------------------------------------------------

# One line per Pod: name|deletionTimestamp|sidecar-1 spec image|status image|ready|
# sidecar-2 spec image|status image|ready|Pod Ready|app restartCount
POD_JSONPATH='{range .items[*]}{.metadata.name}|{.metadata.deletionTimestamp}|{.spec.containers[?(@.name=="sidecar-1")].image}|{.status.containerStatuses[?(@.name=="sidecar-1")].image}|{.status.containerStatuses[?(@.name=="sidecar-1")].ready}|{.spec.containers[?(@.name=="sidecar-2")].image}|{.status.containerStatuses[?(@.name=="sidecar-2")].image}|{.status.containerStatuses[?(@.name=="sidecar-2")].ready}|{.status.conditions[?(@.type=="Ready")].status}|{.status.containerStatuses[?(@.name=="app")].restartCount}{"\n"}{end}'

# all_on SELECTOR COUNT IMAGE [WORKLOAD]: whether exactly COUNT Pods of the
# selector are active, Ready, both sidecars on IMAGE (spec and status) and
# ready; with WORKLOAD (sidecarset/NAME or deployment/NAME), whether its status
# says the same of all COUNT Pods.
all_on() {
  local selector="$1" count="$2" image="$3" workload="${4:-}" out st=""
  out="$("$KUBECTL" -n "$NS" get pods -l "$selector" -o "jsonpath=$POD_JSONPATH")" || {
    BENCH_POLL_STATE="kubectl get failed"
    return 1
  }
  BENCH_POLL_STATE="$(awk -F'|' -v img="$image" -v n="$count" '
    $2 == "" { active++; if ($3 == img && $4 == img && $5 == "true" && $6 == img && $7 == img && $8 == "true" && $9 == "True") on++ }
    END { printf "%s%d of %d Pods Ready with sidecars on %s (%d active)", (active + 0 == n && on + 0 == n) ? "DONE " : "", on, n, img, active }' <<< "$out")"
  [[ "$BENCH_POLL_STATE" == DONE* ]] || return 1
  case "$workload" in
    sidecarset/*)
      st="$("$KUBECTL" get "$workload" -o 'jsonpath={.metadata.generation}|{.status.observedGeneration}|{.status.matchedPods}|{.status.updatedPods}|{.status.updatedReadyPods}')" || return 1
      BENCH_POLL_STATE="$BENCH_POLL_STATE; SidecarSet generation|observed|matched|updated|updatedReady $st"
      [[ "$st" == "${st%%|*}|${st%%|*}|$count|$count|$count" ]]
      ;;
    deployment/*)
      st="$("$KUBECTL" -n "$NS" get "$workload" -o 'jsonpath={.metadata.generation}|{.status.observedGeneration}|{.status.replicas}|{.status.updatedReplicas}|{.status.readyReplicas}')" || return 1
      BENCH_POLL_STATE="$BENCH_POLL_STATE; Deployment generation|observed|replicas|updated|ready $st"
      [[ "$st" == "${st%%|*}|${st%%|*}|$count|$count|$count" ]]
      ;;
  esac
}

# app_restarts GROUP: the sum of the app containers' restartCount over the
# group's active Pods, plus one per Pod that none of BEFORE (pod_ids) had.
app_restarts() {
  local restarts
  restarts="$("$KUBECTL" -n "$NS" get pods -l "bench=$1" -o "jsonpath=$POD_JSONPATH" |
    awk -F'|' '$2 == "" { n += $10 } END { print n + 0 }')"
  echo $((restarts + $(changed "$2" "$(pod_ids "$1")" 1)))
}

# patch_sidecars TARGET LIST FIRST [KUBECTL ARGS...]: both sidecar images to v2
# with a JSON patch of LIST/FIRST and LIST/FIRST+1 (tested to be sidecar-1 and
# sidecar-2).
patch_sidecars() {
  local list="$2" i="$3"
  "$KUBECTL" "${@:4}" patch "$1" --type=json -p "[
    {\"op\":\"test\",\"path\":\"$list/$i/name\",\"value\":\"sidecar-1\"},
    {\"op\":\"replace\",\"path\":\"$list/$i/image\",\"value\":\"$IMAGE_NEW\"},
    {\"op\":\"test\",\"path\":\"$list/$((i + 1))/name\",\"value\":\"sidecar-2\"},
    {\"op\":\"replace\",\"path\":\"$list/$((i + 1))/image\",\"value\":\"$IMAGE_NEW\"}]" >/dev/null
}

# roll_floor GROUP: patch the Pods' sidecars wave by wave, each wave waited for.
roll_floor() {
  local g="$1" w i pids
  for ((w = 0; w * WAVE < N; w++)); do
    pids=()
    for ((i = w * WAVE; i < N && i < (w + 1) * WAVE; i++)); do
      patch_sidecars "pod/$g-$i" /spec/containers 1 -n "$NS" &
      pids+=($!)
    done
    for i in "${pids[@]}"; do wait "$i" || die "patching a Pod of $g failed"; done
    bench_poll "$TIMEOUT" "$g: wave $w" all_on "bench=$g,wave=$w" "${#pids[@]}" "$IMAGE_NEW"
  done
}

declare -A TIMES UIDS IPS RESTARTS CPU
# run_way SHAPE WAY ROUND: one measured upgrade, its results appended to the
# arrays under SHAPE/WAY.
run_way() {
  local shape="$1" way="$2" round="$3" g workload="" before after t0 t1 t c0 c1 k
  g="$shape-$way-r$round" k="$shape/$way"
  case "$way" in
    floor) floor_yaml "$g" "$shape" | "$KUBECTL" -n "$NS" create -f - >/dev/null ;;
    sidecarset)
      SETS+=("$g-$NS")
      workload="sidecarset/$g-$NS"
      sidecarset_yaml "$g" "$shape" | "$KUBECTL" -n "$NS" create -f - >/dev/null
      ;;
    deployment)
      workload="deployment/$g"
      deployment_yaml "$g" "$shape" | "$KUBECTL" -n "$NS" create -f - >/dev/null
      ;;
  esac
  bench_poll "$TIMEOUT" "$g: creating the Pods on v1" all_on "bench=$g" "$N" "$IMAGE_OLD" "$workload"
  sleep "$SETTLE" # not synchronisation: the same settled start for every way
  before="$(pod_ids "$g")"

  c0="$(cpu_ticks)"
  t0="$(now)"
  case "$way" in
    floor) roll_floor "$g" ;;
    sidecarset) patch_sidecars "$workload" /spec/containers 0 ;;
    deployment) patch_sidecars "$workload" /spec/template/spec/containers 1 -n "$NS" ;;
  esac
  bench_poll "$TIMEOUT" "$g: upgrading the sidecars to v2" all_on "bench=$g" "$N" "$IMAGE_NEW" "$workload"
  t1="$(now)"
  c1="$(cpu_ticks)"

  t="$(elapsed "$t0" "$t1")"
  after="$(pod_ids "$g")"
  TIMES[$k]+="$t "
  UIDS[$k]+="$(changed "$before" "$after" 1) "
  IPS[$k]+="$(changed "$before" "$after" 2) "
  RESTARTS[$k]+="$(app_restarts "$g" "$before") "
  CPU[$k]+="$(cpu_busy "$c0" "$c1") "
  log "round $round shape $shape ${WAY_NAME[$way]}: ${t}s (Pod UIDs changed: $(changed "$before" "$after" 1)/$N, IPs changed: $(changed "$before" "$after" 2)/$N, CPU busy $(cpu_busy "$c0" "$c1")%)"

  # The next way starts on a quiet node.
  case "$way" in
    sidecarset)
      "$KUBECTL" -n "$NS" delete clonesets.apps.kruise.io "$g" --wait=true --timeout="${TIMEOUT}s" >/dev/null
      "$KUBECTL" delete "$workload" --wait=true --timeout="${TIMEOUT}s" >/dev/null
      ;;
    deployment) "$KUBECTL" -n "$NS" delete "$workload" --wait=true --timeout="${TIMEOUT}s" >/dev/null ;;
  esac
  "$KUBECTL" -n "$NS" delete pods,replicasets.apps -l "bench=$g" --ignore-not-found \
    --wait=true --timeout="${TIMEOUT}s" >/dev/null
}

log "benchmark: $N fat Pods, $ROUNDS round(s), shapes ${shapes[*]}, ways ${ways[*]}, maxUnavailable $MAX_UNAVAILABLE, settle ${SETTLE}s, namespace $NS"
for ((round = 1; round <= ROUNDS; round++)); do
  for shape in "${shapes[@]}"; do
    for way in "${ways[@]}"; do
      run_way "$shape" "$way" "$round"
    done
  done
done

echo "pods: $N  rounds: $ROUNDS  maxUnavailable: $MAX_UNAVAILABLE  settle: ${SETTLE}s"
for shape in "${shapes[@]}"; do
  echo
  echo "shape $shape: ${SHAPE_NAME[$shape]}"
  printf '  %-38s %8s  %8s  %8s  %9s  %9s  %12s  %5s  %s\n' way time "/deploy" "/floor" "UIDs chg" "IPs chg" "app restarts" "CPU%" rounds
  deploy="" floor=""
  if [[ -n "${TIMES[$shape/deployment]:-}" ]]; then
    read -r -a ts <<< "${TIMES[$shape/deployment]}"
    deploy="$(mean "${ts[@]}")"
  fi
  if [[ -n "${TIMES[$shape/floor]:-}" ]]; then
    read -r -a ts <<< "${TIMES[$shape/floor]}"
    floor="$(mean "${ts[@]}")"
  fi
  for way in "${ways[@]}"; do
    k="$shape/$way"
    read -r -a ts <<< "${TIMES[$k]}"
    t="$(mean "${ts[@]}")"
    read -r -a cs <<< "${CPU[$k]}"
    printf '  %-38s %7ss  %8s  %8s  %9s  %9s  %12s  %5s  [%s]\n' "${WAY_NAME[$way]}" "$t" \
      "$([[ -n "$deploy" ]] && ratio "$t" "$deploy" || echo -)" "$([[ -n "$floor" ]] && ratio "$t" "$floor" || echo -)" \
      "$(counts "${UIDS[$k]}")" "$(counts "${IPS[$k]}")" "$(counts "${RESTARTS[$k]}")" "$(mean "${cs[@]}" | cut -d. -f1)" "${ts[*]}"
  done
done
