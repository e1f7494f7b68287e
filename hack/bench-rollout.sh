#!/usr/bin/env bash
# Benchmarks a rollout of a new image on the local cluster: for N Pods whose
# container "app" runs inplace.local/app:v1, the wall time from the moment the
# change is submitted until all N Pods are Ready with app running
# inplace.local/app:v2 (imagePullPolicy Never), four ways:
#
#   floor       plain Pods (no owner, no readiness gate), the image patched with
#               the core API (kubectl patch of spec.containers[app].image, the
#               Pods of a wave in parallel) in waves of maxUnavailable Pods: a
#               wave is patched, then waited for (Ready on v2), then the next;
#   inplace     a CloneSet (apps.kruise.io/v1alpha1), updateStrategy.type
#               InPlaceIfPossible, maxUnavailable; its template image patched;
#   recreate    the same CloneSet with updateStrategy.type ReCreate;
#   budget      the inplace way's CloneSet under a PodUnavailableBudget
#               (policy.kruise.io/v1alpha1) of the same maxUnavailable: every
#               in-place update takes a unit of it in pods/inplaceupdate and the
#               budget's controller gives it back, so the CloneSet is held to the
#               budget as well as to its strategy. Not in the default BENCH_WAYS
#               (BENCH_WAYS=inplace,budget): with it, inplace-apiserver runs with
#               PodUnavailableBudgetUpdateGate for the whole run (hack/lib/bench.sh
#               restarts it, and restores it at the end), the inplace way too, so
#               that the two differ only by the budget;
#   deployment  an apps/v1 Deployment, RollingUpdate, maxUnavailable, maxSurge 0;
#   asts        an Advanced StatefulSet (apps.kruise.io/v1beta1), podUpdatePolicy
#               InPlaceIfPossible, OrderedReady: one Pod at a time, in place;
#   sts         an apps/v1 StatefulSet, RollingUpdate, OrderedReady: one Pod at a
#               time, recreated (what the native StatefulSet does);
#               (asts and sts are not in the default BENCH_WAYS: BENCH_WAYS=asts,sts)
#   kruise      the comparator: the inplace way's CloneSet, image change and wait, served
#               and rolled out by OpenKruise v1.9 itself instead of inplace, on the same
#               cluster in the same run (not in the default BENCH_WAYS:
#               BENCH_WAYS=floor,inplace,kruise). For each kruise rollout the script takes
#               inplace out of the way and puts OpenKruise in, then back (hack/lib/kruise.sh):
#               inplace's APIServices and Pod webhook deleted and its three programs stopped;
#               OpenKruise's CRDs and webhook configurations installed and its kruise-manager
#               and kruise-daemon started as host processes, built once from OpenKruise's
#               source by hack/build-kruise.sh into _output/kruise (first time ~10 min; it
#               needs KRUISE_GIT_DIR, a clone of github.com/openkruise/kruise, or network to
#               clone it); afterwards OpenKruise removed and inplace registered and started
#               again by the hack/local-up.d hooks. The CPU table then has columns for
#               kruise-manager and kruise-daemon and a line with the ratio of inplace's
#               control-plane CPU to OpenKruise's (the goal of issue 43: <= 0.70).
#
# for two Pod shapes:
#
#   a   one container, app;
#   b   a fat Pod: app plus two sidecars (the same app image v1, never changed)
#       whose readiness probe passes from 5 s after they start
#       (initialDelaySeconds 5, periodSeconds 1): by default a tcpSocket probe
#       of a port the sidecar serves (busybox httpd), or with
#       BENCH_SIDECAR_PROBE=exec, exec cat /proc/1/status. 20 fat Pods' exec
#       probes (40 runc execs a second) keep ~1.3 CPUs busy, which on a small
#       node slows every container restart; tcp probes cost next to nothing.
#
# A workload is done when its Pods are, and its controller's status says so: a
# CloneSet's status.updatedReplicas == updatedReadyReplicas == N, and all its
# active Pods at status.updateRevision; a Deployment's status.updatedReplicas
# == readyReplicas == N. Active Pods are those not being deleted (terminating
# Pods of a recreate are out of service already and not waited for).
# It prints each time, its ratio to the Deployment's and to the floor's, how
# many Pods have a UID and an IP that none of the N Pods had before, and how
# busy the node's CPUs were meanwhile (everything counts: the cluster, this
# script's kubectl calls, and whatever else runs on the machine). Then, per
# way, what the rollout cost the control plane: the CPU seconds of each of its
# processes (kube-apiserver, etcd, kube-controller-manager, kube-scheduler and
# the three inplace programs, from /proc/PID/stat), their sum and its ratio to
# the floor's, the project's own programs' CPU milliseconds per Pod (inplace's
# three, or OpenKruise's two for the kruise way), and the requests each inplace
# program sent to kube-apiserver per Pod, by verb and resource (their metric
# inplace_kube_requests_total; none for the kruise way).
#
#   bash hack/bench-rollout.sh [N]          # N: number of Pods (default 20, or $BENCH_PODS)
#   BENCH_ROUNDS=2 BENCH_SHAPES=b bash hack/bench-rollout.sh 20
#   BENCH_WAYS=floor,inplace BENCH_TRACE=/tmp/trace bash hack/bench-rollout.sh
#   BENCH_ROUNDS=2 BENCH_SHAPES=a BENCH_WAYS=floor,inplace,kruise bash hack/bench-rollout.sh 20
#
# Settings (environment):
#   BENCH_PODS=20               number of Pods when no argument is given
#   BENCH_ROUNDS=1              rounds; each way of each round starts from fresh v1 Pods
#   BENCH_SHAPES=a,b            Pod shapes to run (see above)
#   BENCH_WAYS=floor,inplace,recreate,deployment    ways to run, in this order
#   BENCH_MAX_UNAVAILABLE=50%   maxUnavailable of the workloads, and the floor's wave size
#                               (a percentage rounds up, as CloneSet does; Deployment rounds
#                               down: equal for an even N at 50%)
#   BENCH_SIDECAR_PROBE=tcp     readiness probe of the fat Pod's sidecars: exec or tcp
#   BENCH_TIMEOUT=180           seconds to wait for each phase
#   BENCH_SETTLE=3              seconds the v1 Pods run after they are Ready, before the clock
#                               starts (see hack/bench-inplace.sh)
#   BENCH_TRACE=                a directory: keep there, per measured rollout GROUP
#                               (SHAPE-WAY-rROUND), GROUP.pods and GROUP.workload (every
#                               watch event of its Pods / its workload, one line each,
#                               prefixed with the Unix time it arrived) and GROUP.times
#                               (t0, the floor's waves, t1)
#   BENCH_PROFILE=              a directory: keep there, per measured workload rollout GROUP,
#                               CPU profiles (pprof) of inplace-apiserver, inplace-controller,
#                               inplace-daemon and kube-apiserver over BENCH_PROFILE_SECONDS
#                               from the clock's start. The controller and the daemon are
#                               (re)started with --profiling for it. Read one with
#                               `go tool pprof -top -cum GROUP.apiserver.pprof`.
#   BENCH_PROFILE_SECONDS=20    how long each profile runs (cover the rollout)
#                               (the kruise way: kruise-manager's and kube-apiserver's)
#   KRUISE_GIT_DIR=             the kruise way: a clone (or bare mirror) of OpenKruise's repository
#                               holding the tag v1.9.0 (hack/build-kruise.sh)
#   KRUISE_LOG_LEVEL=4          the kruise way: --v of kruise-manager and kruise-daemon (4: the
#                               default of OpenKruise's Helm chart; inplace's programs run at 1)
#
# The cluster is left as found (see hack/lib/bench.sh); everything lives in a
# namespace of its own, deleted at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=hack/lib/bench.sh
source hack/lib/bench.sh

bench_settings 20 "${1:-}"
SHAPES="${BENCH_SHAPES:-a,b}"
WAYS="${BENCH_WAYS:-floor,inplace,recreate,deployment}"
MAX_UNAVAILABLE="${BENCH_MAX_UNAVAILABLE:-50%}"
TRACE="${BENCH_TRACE:-}"
PROBE="${BENCH_SIDECAR_PROBE:-tcp}"
usage() { echo "$*; settings: see the header of $0" >&2; exit 2; }
[[ "$PROBE" == exec || "$PROBE" == tcp ]] || usage "BENCH_SIDECAR_PROBE must be exec or tcp"
IFS=, read -r -a shapes <<< "$SHAPES"
IFS=, read -r -a ways <<< "$WAYS"
for s in "${shapes[@]}"; do [[ "$s" == a || "$s" == b ]] || usage "BENCH_SHAPES: unknown shape '$s'"; done
for w in "${ways[@]}"; do
  [[ "$w" =~ ^(floor|inplace|recreate|deployment|asts|sts|kruise|budget)$ ]] || usage "BENCH_WAYS: unknown way '$w'"
done
[[ " ${ways[*]} " != *" budget "* ]] || BENCH_APISERVER_GATES=PodUnavailableBudgetUpdateGate=true
KRUISE=false
if [[ " ${ways[*]} " == *" kruise "* ]]; then
  KRUISE=true
  # shellcheck source=hack/lib/kruise.sh
  source hack/lib/kruise.sh
  CONTROL_PLANE+=(kruise-manager kruise-daemon)
  # Built before the cluster is touched: a failed build changes nothing.
  hack/build-kruise.sh
  BENCH_CLEANUP_HOOK=kruise_down
fi
if [[ "$MAX_UNAVAILABLE" =~ ^([0-9]+)%$ ]]; then
  WAVE=$(((N * BASH_REMATCH[1] + 99) / 100))
elif [[ "$MAX_UNAVAILABLE" =~ ^[0-9]+$ ]]; then
  WAVE="$MAX_UNAVAILABLE"
else
  usage "BENCH_MAX_UNAVAILABLE must be a count or a percentage"
fi
((WAVE > 0)) || usage "BENCH_MAX_UNAVAILABLE must allow at least one Pod"
WAVE=$((WAVE < N ? WAVE : N))
if [[ -n "$TRACE" ]]; then
  mkdir -p "$TRACE"
  TRACE="$(cd "$TRACE" && pwd)"
fi

IMAGE_OLD=inplace.local/app:v1
IMAGE_NEW=inplace.local/app:v2
SIDECAR_IMAGE=inplace.local/app:v1

declare -A WAY_NAME=(
  [floor]="floor: core API patch, waves of $WAVE"
  [inplace]="CloneSet InPlaceIfPossible"
  [recreate]="CloneSet ReCreate"
  [deployment]="Deployment RollingUpdate"
  [asts]="Advanced StatefulSet in place"
  [sts]="StatefulSet RollingUpdate"
  [kruise]="OpenKruise CloneSet InPlaceIfPossible"
  [budget]="CloneSet InPlaceIfPossible + budget"
)
declare -A SHAPE_NAME=(
  [a]="one container (app)"
  [b]="fat: app + 2 sidecars ready 5 s after start ($PROBE probes)"
)

PROFILE="${BENCH_PROFILE:-}"
PROFILE_SECONDS="${BENCH_PROFILE_SECONDS:-20}"
if [[ -n "$PROFILE" ]]; then
  mkdir -p "$PROFILE"
  PROFILE="$(cd "$PROFILE" && pwd)"
  # The hooks read these when they start the programs (hack/local-up.d).
  export INPLACE_CONTROLLER_ARGS="${INPLACE_CONTROLLER_ARGS:-} --profiling"
  export INPLACE_DAEMON_FLAGS="${INPLACE_DAEMON_FLAGS:-} --profiling"
fi

bench_start bench-rollout
if [[ -n "$PROFILE" && "${STARTED_CLUSTER:-}" != true ]]; then
  log "restarting inplace-controller and inplace-daemon with --profiling"
  hack/local-up.d/20-inplace-controller.sh >&2
  hack/local-up.d/30-inplace-daemon.sh >&2
fi

# --- manifests -----------------------------------------------------------------

# pod_spec SHAPE IMAGE: the Pod spec (at indentation 0); app is container 0.
pod_spec() {
  cat <<EOF
containers:
- name: app
  image: $2
  imagePullPolicy: Never
EOF
  [[ "$1" == b ]] || return 0
  local i
  for i in 1 2; do
    cat <<EOF
- name: sidecar-$i
  image: $SIDECAR_IMAGE
  imagePullPolicy: Never
EOF
    if [[ "$PROBE" == exec ]]; then
      echo "  readinessProbe: {exec: {command: [cat, /proc/1/status]}, initialDelaySeconds: 5, periodSeconds: 1}"
    else
      # sh as PID 1 exits on TERM (busybox httpd alone would ignore it).
      echo "  command: [sh, -c, 'trap \"exit 0\" TERM; httpd -f -p 808$i -h /tmp & wait']"
      echo "  readinessProbe: {tcpSocket: {port: 808$i}, initialDelaySeconds: 5, periodSeconds: 1}"
    fi
  done
}

# indent N: stdin indented by N spaces.
indent() { sed "s/^/$(printf "%$1s")/"; }

# floor_yaml GROUP SHAPE: N plain Pods GROUP-0 ... GROUP-N-1 on v1, labelled
# with their wave (0, 1, ...).
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
$(pod_spec "$2" "$IMAGE_OLD" | indent 2)
---
EOF
  done
}

# workload_yaml GROUP SHAPE WAY: the way's workload, a CloneSet or a
# Deployment of N Pods on v1.
workload_yaml() {
  local api kind strategy
  case "$3" in
    inplace | recreate | kruise | budget)
      api=apps.kruise.io/v1alpha1 kind=CloneSet
      strategy="updateStrategy: {type: $([[ "$3" == recreate ]] && echo ReCreate || echo InPlaceIfPossible), maxUnavailable: $MAX_UNAVAILABLE}"
      ;;
    deployment)
      api=apps/v1 kind=Deployment
      strategy="strategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: $MAX_UNAVAILABLE, maxSurge: 0}}"
      ;;
    asts)
      api=apps.kruise.io/v1beta1 kind=StatefulSet
      strategy="serviceName: $1
  updateStrategy: {type: RollingUpdate, rollingUpdate: {podUpdatePolicy: InPlaceIfPossible}}"
      ;;
    sts)
      api=apps/v1 kind=StatefulSet
      strategy="serviceName: $1
  updateStrategy: {type: RollingUpdate}"
      ;;
  esac
  cat <<EOF
apiVersion: $api
kind: $kind
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
$(pod_spec "$2" "$IMAGE_OLD" | indent 6)
  $strategy
EOF
}

# create_budget GROUP: a PodUnavailableBudget of the group's Pods with the
# workloads' maxUnavailable; waits until its controller has counted all N Pods
# available and named it on each of them (pods/inplaceupdate charges the budget a
# Pod names).
create_budget() {
  "$KUBECTL" -n "$NS" create -f - >/dev/null <<EOF
apiVersion: policy.kruise.io/v1alpha1
kind: PodUnavailableBudget
metadata:
  name: $1
spec:
  selector:
    matchLabels: {bench: $1}
  maxUnavailable: $MAX_UNAVAILABLE
EOF
  bench_poll "$TIMEOUT" "$1: the budget counting the Pods" budget_counts "$1"
}

# budget_counts GROUP: the group's budget has counted N Pods available, and
# every Pod names it.
budget_counts() {
  local available named
  available="$("$KUBECTL" -n "$NS" get podunavailablebudgets.policy.kruise.io "$1" -o 'jsonpath={.status.currentAvailable}')"
  named="$("$KUBECTL" -n "$NS" get pods -l "bench=$1" -o 'jsonpath={range .items[*]}{.metadata.annotations.pub\.kruise\.io/related-pub}{"\n"}{end}' | grep -cx "$1" || true)"
  BENCH_POLL_STATE="currentAvailable ${available:-?}, $named of $N Pods naming it"
  [[ "$available" == "$N" && "$named" == "$N" ]]
}

# workload_resource WAY: the resource of the way's workload (empty for the floor).
workload_resource() {
  case "$1" in
    inplace | recreate | budget) echo clonesets.apps.kruise.io ;;
    # (the version named: OpenKruise's CRD serves v1alpha1 only, inplace v1beta1 too)
    kruise) echo clonesets.v1alpha1.apps.kruise.io ;;
    deployment) echo deployments.apps ;;
    asts) echo statefulsets.apps.kruise.io ;;
    sts) echo statefulsets.apps ;;
    *) echo "" ;;
  esac
}

# --- waiting -------------------------------------------------------------------

# One line per Pod and per workload: kind|name|deletionTimestamp|uid|podIP|
# revision label|app image in spec|app image in status|app ready|Pod Ready|
# generation|observedGeneration|replicas|updatedReplicas|readyReplicas|
# updatedReadyReplicas|updateRevision|app image in the template
STATE_JSONPATH='{range .items[*]}{.kind}|{.metadata.name}|{.metadata.deletionTimestamp}|{.metadata.uid}|{.status.podIP}|{.metadata.labels.controller-revision-hash}|{.spec.containers[?(@.name=="app")].image}|{.status.containerStatuses[?(@.name=="app")].image}|{.status.containerStatuses[?(@.name=="app")].ready}|{.status.conditions[?(@.type=="Ready")].status}|{.metadata.generation}|{.status.observedGeneration}|{.status.replicas}|{.status.updatedReplicas}|{.status.readyReplicas}|{.status.updatedReadyReplicas}|{.status.updateRevision}|{.spec.template.spec.containers[?(@.name=="app")].image}{"\n"}{end}'

# all_on SELECTOR COUNT IMAGE [RESOURCE]: whether exactly COUNT Pods of the
# selector are active, all Ready with app on IMAGE (spec and status) and ready;
# and, with RESOURCE (its object labelled like its Pods), whether its status
# says all COUNT Pods are updated to its template (on IMAGE) and ready (a
# CloneSet: with no active Pod off status.updateRevision). One kubectl call.
all_on() {
  local selector="$1" count="$2" image="$3" resource="${4:-}" kinds=pods out
  [[ -z "$resource" ]] || kinds="pods,$resource"
  out="$("$KUBECTL" -n "$NS" get "$kinds" -l "$selector" -o "jsonpath=$STATE_JSONPATH")" || {
    BENCH_POLL_STATE="kubectl get failed"
    return 1
  }
  BENCH_POLL_STATE="$(awk -F'|' -v img="$image" -v n="$count" -v wl="$resource" '
    $1 == "Pod" && $3 == "" {
      active++
      if ($7 == img && $8 == img && $9 == "true" && $10 == "True") on++
      rev[$6]++
    }
    $1 == "CloneSet" {
      found = 1; updrev = $17
      ok = $11 == $12 && $13 == n && $14 == n && $16 == n && $18 == img
      st = sprintf("CloneSet observedGeneration %s/%s replicas %s updated %s updatedReady %s", $12, $11, $13, $14, $16)
    }
    $1 == "StatefulSet" {
      found = 1; updrev = $17
      ok = $11 == $12 && $13 == n && $14 == n && $15 == n && $18 == img
      st = sprintf("StatefulSet observedGeneration %s/%s replicas %s updated %s ready %s", $12, $11, $13, $14, $15)
    }
    $1 == "Deployment" {
      found = 1
      ok = $11 == $12 && $13 == n && $14 == n && $15 == n && $18 == img
      st = sprintf("Deployment observedGeneration %s/%s replicas %s updated %s ready %s", $12, $11, $13, $14, $15)
    }
    END {
      if (updrev != "") for (r in rev) if (r != updrev) { ok = 0; st = st sprintf(", %d active Pods off updateRevision", rev[r]) }
      done = active + 0 == n && on + 0 == n && (wl == "" || ok)
      printf "%s%d of %d Pods Ready on %s (%d active)%s", done ? "DONE " : "", on, n, img, active, wl == "" ? "" : (found ? "; " st : "; no workload")
    }' <<< "$out")"
  [[ "$BENCH_POLL_STATE" == DONE* ]]
}

# --- tracing (BENCH_TRACE) -----------------------------------------------------

# (No {range} in a watch: kubectl's printer fails on the second object.)
cond() { echo "$1={.status.conditions[?(@.type==\"$1\")].status}@{.status.conditions[?(@.type==\"$1\")].lastTransitionTime}"; }
TRACE_PODS_JSONPATH="{.metadata.name} rv={.metadata.resourceVersion} del={.metadata.deletionTimestamp} rev={.metadata.labels.controller-revision-hash} spec={.spec.containers[?(@.name==\"app\")].image} ip={.status.podIP} $(cond InPlaceUpdateReady) $(cond ContainersReady) $(cond Ready) app={.status.containerStatuses[?(@.name==\"app\")].image}/ready={.status.containerStatuses[?(@.name==\"app\")].ready}/restarts={.status.containerStatuses[?(@.name==\"app\")].restartCount}/startedAt={.status.containerStatuses[?(@.name==\"app\")].state.running.startedAt}{\"\\n\"}"
TRACE_WORKLOAD_JSONPATH='{.metadata.name} rv={.metadata.resourceVersion} gen={.metadata.generation} observed={.status.observedGeneration} replicas={.status.replicas} updated={.status.updatedReplicas} ready={.status.readyReplicas} updatedReady={.status.updatedReadyReplicas}{"\n"}'

# stamp: stdin with each line prefixed by the Unix time it was read.
stamp() {
  local line
  while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done
}

trace_pids=()
# trace_start GROUP WAY: watches of the group's Pods and workload into $TRACE,
# returning once the Pod watch has listed the N Pods.
trace_start() {
  [[ -n "$TRACE" ]] || return 0
  local g="$1" resource
  resource="$(workload_resource "$2")"
  : > "$TRACE/$g.times"
  "$KUBECTL" -n "$NS" get pods -l "bench=$g" -w -o "jsonpath=$TRACE_PODS_JSONPATH" > >(stamp > "$TRACE/$g.pods") &
  trace_pids+=($!)
  if [[ -n "$resource" ]]; then
    "$KUBECTL" -n "$NS" get "$resource" "$g" -w -o "jsonpath=$TRACE_WORKLOAD_JSONPATH" > >(stamp > "$TRACE/$g.workload") &
    trace_pids+=($!)
  fi
  bench_poll "$TIMEOUT" "starting the Pod watch of $g" trace_listed "$TRACE/$g.pods" "${trace_pids[0]}"
}
# trace_listed FILE PID: whether the watch PID has written N lines to FILE.
trace_listed() {
  kill -0 "$2" 2>/dev/null || die "the Pod watch (kubectl get -w) ended"
  [[ -f "$1" && "$(wc -l < "$1")" -ge "$N" ]]
}

# trace_mark GROUP WHAT TIME: a line "WHAT TIME" in GROUP.times.
trace_mark() { [[ -z "$TRACE" ]] || echo "$2 $3" >> "$TRACE/$1.times"; }

# --- profiles (BENCH_PROFILE) ---------------------------------------------------

# profile_start GROUP WAY: CPU profiles of the inplace programs (the kruise way: kruise-manager)
# and kube-apiserver, in the background, for PROFILE_SECONDS; profile_wait waits for them.
PROFILE_PIDS=()
profile_start() {
  [[ -n "$PROFILE" ]] || return 0
  local g="$1" q="debug/pprof/profile?seconds=$PROFILE_SECONDS"
  if [[ "$2" == kruise ]]; then
    curl -sf -o "$PROFILE/$g.kruise-manager.pprof" "http://127.0.0.1:10482/$q" & PROFILE_PIDS+=($!)
    "$KUBECTL" get --raw "/$q" > "$PROFILE/$g.kube-apiserver.pprof" & PROFILE_PIDS+=($!)
    return 0
  fi
  curl -sf -o "$PROFILE/$g.controller.pprof" "http://127.0.0.1:10390/$q" & PROFILE_PIDS+=($!)
  curl -sf -o "$PROFILE/$g.daemon.pprof" "http://127.0.0.1:10391/$q" & PROFILE_PIDS+=($!)
  "$KUBECTL" --server=https://10.77.0.1:8443 get --raw "/$q" > "$PROFILE/$g.apiserver.pprof" & PROFILE_PIDS+=($!)
  "$KUBECTL" get --raw "/$q" > "$PROFILE/$g.kube-apiserver.pprof" & PROFILE_PIDS+=($!)
}
profile_wait() {
  ((${#PROFILE_PIDS[@]} > 0)) || return 0
  wait "${PROFILE_PIDS[@]}" || log "a profile failed (is --profiling on?); see $PROFILE"
  PROFILE_PIDS=()
  log "profiles of $1 in $PROFILE"
}

trace_stop() {
  local p
  for p in "${trace_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${trace_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  trace_pids=()
}

# --- one measured rollout --------------------------------------------------------

# patch_pod NAME: the app image of the Pod to v2 (core API).
patch_pod() {
  "$KUBECTL" -n "$NS" patch pod "$1" --type=json \
    -p "[{\"op\":\"replace\",\"path\":\"/spec/containers/0/image\",\"value\":\"$IMAGE_NEW\"}]" >/dev/null
}

# roll_floor GROUP: patch the Pods wave by wave, each wave waited for.
roll_floor() {
  local g="$1" w i pids
  for ((w = 0; w * WAVE < N; w++)); do
    pids=()
    for ((i = w * WAVE; i < N && i < (w + 1) * WAVE; i++)); do
      patch_pod "$g-$i" &
      pids+=($!)
    done
    for i in "${pids[@]}"; do wait "$i" || die "patching a Pod of $g failed"; done
    trace_mark "$g" "wave$w-sent" "$(now)"
    bench_poll "$TIMEOUT" "$g: wave $w" all_on "bench=$g,wave=$w" "${#pids[@]}" "$IMAGE_NEW"
    trace_mark "$g" "wave$w-ready" "$(now)"
  done
}

declare -A TIMES UIDS IPS CPU
# run_way SHAPE WAY ROUND: one measured rollout; its time, changed UIDs and
# IPs, and CPU busy percentage are appended to TIMES, UIDS, IPS and CPU [SHAPE/WAY].
run_way() {
  local shape="$1" way="$2" round="$3" g resource before after t0 t1 t c0 c1 p0 p1 r0 r1 gates
  g="$shape-$way-r$round"
  resource="$(workload_resource "$way")"
  [[ "$way" != kruise ]] || kruise_up
  if [[ "$way" == floor ]]; then floor_yaml "$g" "$shape"; else workload_yaml "$g" "$shape" "$way"; fi |
    "$KUBECTL" -n "$NS" create -f - >/dev/null
  bench_poll "$TIMEOUT" "$g: creating the Pods on v1" all_on "bench=$g" "$N" "$IMAGE_OLD" "$resource"
  [[ "$way" != budget ]] || create_budget "$g"
  if [[ "$way" == inplace || "$way" == kruise || "$way" == budget ]]; then
    # Both CloneSet controllers add the InPlaceUpdateReady gate to the Pods: the same Pods.
    gates="$("$KUBECTL" -n "$NS" get pods -l "bench=$g" -o 'jsonpath={.items[*].spec.readinessGates[*].conditionType}')"
    [[ "$(grep -o InPlaceUpdateReady <<< "$gates" | wc -l)" -eq "$N" ]] ||
      die "$g: not every Pod has the readiness gate InPlaceUpdateReady ($gates)"
  fi
  sleep "$SETTLE" # not synchronisation: the same settled start for every way
  before="$(pod_ids "$g")"
  trace_start "$g" "$way"

  r0="" r1=""
  [[ "$way" == kruise ]] || r0="$(inplace_requests)"
  p0="$(proc_cpu)"
  c0="$(cpu_ticks)"
  t0="$(now)"
  trace_mark "$g" t0 "$t0"
  [[ "$way" == floor ]] || profile_start "$g" "$way"
  if [[ "$way" == floor ]]; then
    roll_floor "$g"
  else
    "$KUBECTL" -n "$NS" patch "$resource" "$g" --type=json \
      -p "[{\"op\":\"replace\",\"path\":\"/spec/template/spec/containers/0/image\",\"value\":\"$IMAGE_NEW\"}]" >/dev/null
    trace_mark "$g" patched "$(now)"
  fi
  bench_poll "$TIMEOUT" "$g: rolling out v2" all_on "bench=$g" "$N" "$IMAGE_NEW" "$resource"
  t1="$(now)"
  c1="$(cpu_ticks)"
  p1="$(proc_cpu)"
  [[ "$way" == kruise ]] || r1="$(inplace_requests)"
  trace_mark "$g" t1 "$t1"
  trace_stop
  profile_wait "$g"

  t="$(elapsed "$t0" "$t1")"
  after="$(pod_ids "$g")"
  TIMES[$shape/$way]+="$t "
  UIDS[$shape/$way]+="$(changed "$before" "$after" 1) "
  IPS[$shape/$way]+="$(changed "$before" "$after" 2) "
  CPU[$shape/$way]+="$(cpu_busy "$c0" "$c1") "
  delta "$p0" "$p1" >> "$WORK/$shape-$way.cpu"
  delta "$r0" "$r1" >> "$WORK/$shape-$way.requests"
  log "round $round shape $shape ${WAY_NAME[$way]}: ${t}s (Pod UIDs changed: $(changed "$before" "$after" 1)/$N, IPs changed: $(changed "$before" "$after" 2)/$N, CPU busy $(cpu_busy "$c0" "$c1")%)"

  # The next way starts on a quiet node.
  [[ -z "$resource" ]] || "$KUBECTL" -n "$NS" delete "$resource" "$g" --wait=true --timeout="${TIMEOUT}s" >/dev/null
  "$KUBECTL" -n "$NS" delete pods,replicasets.apps -l "bench=$g" --ignore-not-found \
    --wait=true --timeout="${TIMEOUT}s" >/dev/null
  [[ "$way" != kruise ]] || kruise_down
}

log "benchmark: $N Pods, $ROUNDS round(s), shapes ${shapes[*]}, ways ${ways[*]}, maxUnavailable $MAX_UNAVAILABLE, sidecar probes $PROBE, settle ${SETTLE}s, namespace $NS${TRACE:+, trace in $TRACE}"
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
  printf '  %-38s %8s  %8s  %8s  %9s  %9s  %5s  %s\n' way time "/deploy" "/floor" "UIDs chg" "IPs chg" "CPU%" rounds
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
    read -r -a ts <<< "${TIMES[$shape/$way]}"
    t="$(mean "${ts[@]}")"
    read -r -a cs <<< "${CPU[$shape/$way]}"
    printf '  %-38s %7ss  %8s  %8s  %9s  %9s  %5s  [%s]\n' "${WAY_NAME[$way]}" "$t" \
      "$([[ -n "$deploy" ]] && ratio "$t" "$deploy" || echo -)" "$([[ -n "$floor" ]] && ratio "$t" "$floor" || echo -)" \
      "$(counts "${UIDS[$shape/$way]}")" "$(counts "${IPS[$shape/$way]}")" "$(mean "${cs[@]}" | cut -d. -f1)" "${ts[*]}"
  done
  if [[ -n "${TIMES[$shape/budget]:-}" && -n "${TIMES[$shape/inplace]:-}" ]]; then
    read -r -a ts <<< "${TIMES[$shape/budget]}"
    t="$(mean "${ts[@]}")"
    read -r -a ts <<< "${TIMES[$shape/inplace]}"
    echo "  rollout time, with the budget / without: $(ratio "$t" "$(mean "${ts[@]}")") (both with PodUnavailableBudgetUpdateGate)"
  fi
done

# What each rollout cost the control plane: CPU seconds per process (mean over the rounds), their
# sum and its ratio to the floor's, the project's own programs' milliseconds per Pod (inplace's, or
# OpenKruise's for the kruise way), and the requests each inplace program sent to kube-apiserver
# per Pod of the rollout.
# cpu_all FILE: the mean sum of a way's CPU seconds.
cpu_all() { awk -v r="$ROUNDS" '{ all += $2 } END { printf "%.4f", all / r }' "$1"; }
# cpu_row FILE FLOOR_ALL OFF: the table's numbers for one way ("-" for the ratio without a floor,
# and for the processes matching the regular expression OFF: not running in that way).
cpu_row() {
  awk -v r="$ROUNDS" -v n="$N" -v names="${CONTROL_PLANE[*]}" -v floor="$2" -v off="$3" '
    { s[$1] += $2; all += $2; if ($1 ~ /^(inplace|kruise)-/) own += $2 }
    END {
      k = split(names, p, " ")
      for (i = 1; i <= k; i++) {
        if (off != "" && p[i] ~ off) printf " %12s", "-"; else printf " %12.2f", s[p[i]] / r
      }
      printf " %8.2f %7s %9.0fms\n", all / r, (floor > 0 ? sprintf("%.2f", all / r / floor) : "-"), 1000 * own / r / n
    }' "$1"
}
declare -A CPU_LABEL=([kube-apiserver]=kube-api [etcd]=etcd [kube-controller-manager]=kube-cm
  [kube-scheduler]=kube-sched [inplace-apiserver]=inplace-api [inplace-controller]=inplace-ctrl
  [inplace-daemon]=inplace-dmn [kruise-manager]=kruise-mgr [kruise-daemon]=kruise-dmn)
for shape in "${shapes[@]}"; do
  echo
  echo "shape $shape: control plane CPU seconds per rollout of $N Pods (mean of $ROUNDS round(s), /proc/PID/stat;"
  echo "  kube-cm: kube-controller-manager; own/Pod: CPU ms per Pod of inplace's three programs, or OpenKruise's two)"
  printf '  %-38s' way
  for p in "${CONTROL_PLANE[@]}"; do printf ' %12s' "${CPU_LABEL[$p]}"; done
  printf ' %8s %7s %11s\n' all /floor own/Pod
  floor_all=0
  [[ ! -s "$WORK/$shape-floor.cpu" ]] || floor_all="$(cpu_all "$WORK/$shape-floor.cpu")"
  for way in "${ways[@]}"; do
    [[ -s "$WORK/$shape-$way.cpu" ]] || continue
    off=""
    if [[ "$way" == kruise ]]; then off="^inplace-"; elif $KRUISE; then off="^kruise-"; fi
    printf '  %-38s%s\n' "${WAY_NAME[$way]}" "$(cpu_row "$WORK/$shape-$way.cpu" "$floor_all" "$off")"
  done
  if [[ -s "$WORK/$shape-inplace.cpu" && -s "$WORK/$shape-kruise.cpu" ]]; then
    echo "  control plane CPU, inplace / OpenKruise: $(ratio "$(cpu_all "$WORK/$shape-inplace.cpu")" \
      "$(cpu_all "$WORK/$shape-kruise.cpu")") (all above; issue 43's goal: <= 0.70)"
  fi
  for way in "${ways[@]}"; do
    [[ "$way" != floor && -s "$WORK/$shape-$way.requests" ]] || continue
    echo "  ${WAY_NAME[$way]}: requests to kube-apiserver per Pod (inplace_kube_requests_total), by program, verb, resource"
    awk -v r="$ROUNDS" -v n="$N" '{ c[$1 " " $2 " " $3] += $4 }
      END { for (k in c) { split(k, f, " "); printf "    %-20s %-7s %-42s %6.2f\n", f[1], f[2], f[3], c[k] / r / n } }' \
      "$WORK/$shape-$way.requests" | sort
  done
done
if [[ " ${ways[*]} " == *" asts "* && " ${ways[*]} " == *" sts "* ]]; then
  echo
  for shape in "${shapes[@]}"; do
    read -r -a ta <<< "${TIMES[$shape/asts]}"
    read -r -a tn <<< "${TIMES[$shape/sts]}"
    echo "shape $shape: Advanced StatefulSet in place / native StatefulSet: $(ratio "$(mean "${ta[@]}")" "$(mean "${tn[@]}")")"
  done
fi
