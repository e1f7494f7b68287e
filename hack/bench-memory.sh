#!/usr/bin/env bash
# Measures inplace-apiserver's memory around a burst, with and without
# --trim-idle-memory: a standalone server (loopback, embedded etcd in a
# temporary directory; no cluster needed) gets N CloneSets created, replaced
# with a new image and deleted by kubectl, then stays idle. Printed for each way,
# as RSS MB (anonymous + file pages): fresh (20 s after it is ready), right after
# the burst, and BENCH_IDLE seconds into idleness; and the ratio of the idle
# figures (trim / no trim).
#
#   bash hack/bench-memory.sh [N]          # default 1000
#
# Anonymous memory is the heaps (the server's, its embedded etcd's); file pages
# are its binary's code and data as far as they were touched and the embedded
# etcd's memory-mapped database, which the kernel may drop and read again.
# Settings (environment): BENCH_IDLE (75 s: the trim comes 30-60 s into
# idleness), BENCH_PORT (18443; the embedded etcd picks a free port).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
N="${1:-1000}"
IDLE="${BENCH_IDLE:-75}"
PORT="${BENCH_PORT:-18443}"
[[ "$N" =~ ^[0-9]+$ && "$N" -gt 0 ]] || { echo "usage: bash hack/bench-memory.sh [N]" >&2; exit 2; }

make build >/dev/null
WORK="$(mktemp -d /tmp/bench-memory.XXXXXX)"
pid=""
cleanup() {
  if [[ -n "$pid" ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# hack/run-standalone.sh writes DATA_DIR/kubeconfig for the server it runs.
kubectl() { "$ROOT/_output/bin/kubectl" --kubeconfig "$WORK/data/kubeconfig" "$@"; }

# clonesets IMAGE_TAG: N CloneSets of 10 replicas (objects only: no controller runs).
clonesets() {
  local i
  for ((i = 1; i <= N; i++)); do
    cat <<EOF
---
apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata: {name: cs-$i, namespace: default, labels: {app: cs-$i}}
spec:
  replicas: 10
  selector: {matchLabels: {app: cs-$i}}
  updateStrategy: {type: InPlaceIfPossible, maxUnavailable: 20%}
  template:
    metadata: {labels: {app: cs-$i}}
    spec:
      containers: [{name: main, image: "inplace.local/app:$1", env: [{name: NOTE, value: "cloneset $i of the memory benchmark"}]}]
EOF
  done
}
clonesets v1 > "$WORK/v1.yaml"
clonesets v2 > "$WORK/v2.yaml"

rss() {
  awk '/^VmRSS:/ { t = $2 } /^RssAnon:/ { a = $2 } /^RssFile:/ { f = $2 }
    END { printf "%.0f (%.0f + %.0f)", t / 1024, a / 1024, f / 1024 }' "/proc/$pid/status"
}
anon() { awk '/^RssAnon:/ { printf "%.0f", $2 / 1024 }' "/proc/$pid/status"; }

# run WAY TRIM: one server's life; sets IDLE_ANON.
run() {
  local way="$1" trim="$2" i
  rm -rf "$WORK/data"
  PORT="$PORT" DATA_DIR="$WORK/data" hack/run-standalone.sh --embedded-etcd-port=0 --trim-idle-memory="$trim" -v=2 \
    > "$WORK/$way.log" 2>&1 &
  pid=$! # the server itself: run-standalone.sh execs it
  for ((i = 0; i < 60; i++)); do
    kubectl get --raw /readyz >/dev/null 2>&1 && break
    kill -0 "$pid" 2>/dev/null || { tail "$WORK/$way.log" >&2; exit 1; }
    sleep 1
  done
  sleep 20
  local fresh after
  fresh="$(rss)"
  kubectl create -f "$WORK/v1.yaml" >/dev/null
  kubectl replace -f "$WORK/v2.yaml" >/dev/null
  kubectl delete clonesets --all --wait=false >/dev/null
  after="$(rss)"
  sleep "$IDLE"
  printf '%-10s %-18s %-18s %-18s\n' "$way" "$fresh" "$after" "$(rss)"
  IDLE_ANON="$(anon)"
  grep -h "Idle after a busy period" "$WORK/$way.log" | sed 's/^/  /' || true
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  pid=""
}

echo "inplace-apiserver RSS MB (anon + file); $N CloneSets created, replaced, deleted"
printf '%-10s %-18s %-18s %-18s\n' way fresh "after the burst" "${IDLE} s idle"
run no-trim false
base="$IDLE_ANON"
run trim true
awk -v a="$IDLE_ANON" -v b="$base" 'BEGIN { printf "idle anonymous memory, trim / no trim: %d / %d MB = %.2f\n", a, b, a / b }'
