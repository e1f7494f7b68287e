#!/usr/bin/env bash
# Benchmarks ordered container launch on the local cluster: N Pods of three
# containers (first, second, third on inplace.local/app:v1, each ready
# BENCH_WARMUP (1) s after it starts: a tcpSocket probe of a port it serves,
# busybox httpd) that must start one priority after the other, created at
# once, two ways:
#
#   configmap   OpenKruise's barrier: each container reads env
#               KRUISE_CONTAINER_BARRIER from ConfigMap <pod>-barrier, which
#               inplace-controller creates and fills one priority at a time;
#   poststart   inplace's postStart barrier: first and second get a postStart
#               hook that inplace-daemon answers once they are ready; no object.
#
# Both ways run on the same inplace-apiserver, whose gate
# ContainerLaunchPostStartBarrier is on (the default): the configmap Pods ask
# for the same three priorities with KRUISE_CONTAINER_PRIORITY against the spec
# order (third 3, second 2, first 1: third starts first), which the postStart
# barrier cannot keep, so the webhook gives them the ConfigMap barrier, exactly
# as it gives every ordered Pod with the gate off; the poststart Pods are
# annotated apps.kruise.io/container-launch-priority: Ordered. The script checks
# that each Pod got the barrier meant.
#
# It prints, for each way: the wall time from the first create until all N Pods
# are Ready; how many barrier ConfigMaps were created; and the writes to
# kube-apiserver per Pod (its apiserver_request_total, verbs POST PUT PATCH
# DELETE, by resource/subresource, over the whole run: the kubelet's status
# writes, the scheduler's bindings and the barrier's writes alike, the creates
# of the Pods included); then the ratio poststart / configmap.
#
#   bash hack/bench-launch.sh [N]          # N: number of Pods (default 50, or $BENCH_PODS)
#
# N is bounded by the node's maxPods (the kubelet's default, 110, on the local
# cluster, less the Pods already there).
#
# Settings (environment):
#   BENCH_PODS=50          number of Pods when no argument is given
#   BENCH_ROUNDS=1         rounds; each way of each round starts from no Pods
#   BENCH_WAYS=configmap,poststart   ways to run, in this order
#   BENCH_WARMUP=1         seconds after its start a container becomes ready
#   BENCH_TIMEOUT=180      seconds to wait for each phase
#
# The cluster is left as found (see hack/lib/bench.sh); everything lives in a
# namespace of its own, deleted at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=hack/lib/bench.sh
source hack/lib/bench.sh

bench_settings 50 "${1:-}"
WAYS="${BENCH_WAYS:-configmap,poststart}"
WARMUP="${BENCH_WARMUP:-1}"
usage() { echo "$*; settings: see the header of $0" >&2; exit 2; }
[[ "$WARMUP" =~ ^[0-9]+$ ]] || usage "BENCH_WARMUP must be a number of seconds"
IFS=, read -r -a ways <<< "$WAYS"
for w in "${ways[@]}"; do [[ "$w" =~ ^(configmap|poststart)$ ]] || usage "BENCH_WAYS: unknown way '$w'"; done

bench_start bench-launch

# container NAME PORT [PRIORITY]: one container serving PORT, ready WARMUP s after it starts.
container() {
  cat <<EOF
- name: $1
  image: inplace.local/app:v1
  imagePullPolicy: Never
  command: [sh, -c, 'trap "exit 0" TERM; httpd -f -p $2 -h /tmp & wait']
  readinessProbe: {tcpSocket: {port: $2}, initialDelaySeconds: $WARMUP, periodSeconds: 1}
EOF
  [[ -z "${3:-}" ]] || echo "  env: [{name: KRUISE_CONTAINER_PRIORITY, value: \"$3\"}]"
}

indent() { sed "s/^/$(printf "%$1s")/"; }

# pods_yaml WAY: the N Pods of the way.
pods_yaml() {
  local i annotations="{}" containers
  if [[ "$1" == poststart ]]; then
    annotations="{apps.kruise.io/container-launch-priority: Ordered}"
    containers="$({ container first 8081; container second 8082; container third 8083; } | indent 2)"
  else
    containers="$({ container first 8081 1; container second 8082 2; container third 8083 3; } | indent 2)"
  fi
  for ((i = 0; i < N; i++)); do
    cat <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1-$i
  labels: {bench: $1}
  annotations: $annotations
spec:
  terminationGracePeriodSeconds: 1
  containers:
$containers
---
EOF
  done
}

# all_ready WAY: every Pod of the way has its three containers ready.
all_ready() {
  local ready
  ready="$("$KUBECTL" -n "$NS" get pods -l "bench=$1" -o \
    'jsonpath={range .items[*]}{range .status.containerStatuses[*]}{.ready}{" "}{end}{"\n"}{end}' |
    awk '{ n = 0; for (i = 1; i <= NF; i++) if ($i == "true") n++; if (n == 3) r++ } END { print r + 0 }')"
  BENCH_POLL_STATE="$ready/$N Pods ready"
  [[ "$ready" == "$N" ]]
}

# no_pods WAY: the Pods of the way are gone.
no_pods() { [[ -z "$("$KUBECTL" -n "$NS" get pods -l "bench=$1" -o name)" ]]; }

# barriers WAY: "BARRIER COUNT" of the way's Pods, by the webhook's annotation.
barriers() {
  "$KUBECTL" -n "$NS" get pods -l "bench=$1" -o \
    'jsonpath={range .items[*]}{.metadata.annotations.inplace\.dev/container-launch-barrier}{"\n"}{end}' | sort | uniq -c | awk '{ print $2, $1 }'
}

# writes: "RESOURCE/SUBRESOURCE COUNT" of kube-apiserver's write requests so far.
writes() {
  "$KUBECTL" get --raw /metrics | awk '$1 ~ /^apiserver_request_total\{/ {
      verb = $1; sub(/.*verb="/, "", verb); sub(/".*/, "", verb)
      if (verb !~ /^(POST|PUT|PATCH|DELETE|APPLY|CREATE|UPDATE)$/) next
      res = $1; sub(/.*[{,]resource="/, "", res); sub(/".*/, "", res)
      sub_ = ""; if ($1 ~ /subresource="/) { sub_ = $1; sub(/.*subresource="/, "", sub_); sub(/".*/, "", sub_) }
      key = res (sub_ == "" ? "" : "/" sub_)
      n[key] += $2
    }
    END { for (k in n) printf "%s %d\n", k, n[k] }' | sort
}

declare -A TIME CONFIGMAPS WRITES DETAIL
for ((round = 1; round <= ROUNDS; round++)); do
  for way in "${ways[@]}"; do
    pods_yaml "$way" > "$WORK/$way.yaml"
    before="$(writes)"
    t0="$(now)"
    "$KUBECTL" -n "$NS" create -f "$WORK/$way.yaml" >/dev/null
    bench_poll "$TIMEOUT" "$way: all Pods ready" all_ready "$way"
    t1="$(now)"
    sleep 1 # the last status writes
    d="$(delta "$before" "$(writes)")"
    got="$(barriers "$way")"
    want=ConfigMap; [[ "$way" == configmap ]] || want=PostStart
    [[ "$got" == "$want $N" ]] || die "$way: the Pods' barriers are '$got', want $want for all $N"
    cms="$("$KUBECTL" -n "$NS" get configmaps -o name | grep -c -- '-barrier$' || true)"
    total="$(awk '{ s += $NF } END { print s + 0 }' <<< "$d")"
    TIME[$way]+="$(elapsed "$t0" "$t1") "
    CONFIGMAPS[$way]="$cms"
    WRITES[$way]+="$(awk -v s="$total" -v n="$N" 'BEGIN { printf "%.2f", s / n }') "
    DETAIL[$way]="$(awk -v n="$N" '{ printf "    %-28s %8.2f per Pod\n", $1, $2 / n }' <<< "$d")"
    log "$way round $round: all $N Pods ready after $(elapsed "$t0" "$t1") s, $cms barrier ConfigMaps"
    "$KUBECTL" -n "$NS" delete pods -l "bench=$way" --wait=false >/dev/null
    bench_poll "$TIMEOUT" "$way: Pods deleted" no_pods "$way"
    # The barrier ConfigMaps go with their Pods (owner references): wait for the garbage
    # collector, so the next way starts from none.
    bench_poll "$TIMEOUT" "$way: barrier ConfigMaps collected" \
      bash -c "! '$KUBECTL' -n '$NS' get configmaps -o name | grep -q -- '-barrier\$'"
  done
done

echo
echo "Ordered launch of $N Pods x 3 containers (each ready ${WARMUP}s after it starts), $ROUNDS round(s)"
printf '%-10s %12s %18s %22s\n' way "time (s)" "barrier ConfigMaps" "API writes per Pod"
for way in "${ways[@]}"; do
  # shellcheck disable=SC2086 # a list of numbers
  printf '%-10s %12s %18s %22s\n' "$way" "$(mean ${TIME[$way]})" "${CONFIGMAPS[$way]}" "$(mean ${WRITES[$way]})"
done
for way in "${ways[@]}"; do
  echo "  $way, writes per Pod by resource (last round):"
  echo "${DETAIL[$way]}"
done
if [[ -n "${TIME[configmap]:-}" && -n "${TIME[poststart]:-}" ]]; then
  echo "poststart / configmap: time $(ratio "$(mean ${TIME[poststart]})" "$(mean ${TIME[configmap]})")," \
    "writes per Pod $(ratio "$(mean ${WRITES[poststart]})" "$(mean ${WRITES[configmap]})")," \
    "ConfigMaps ${CONFIGMAPS[poststart]} vs ${CONFIGMAPS[configmap]}"
fi
