#!/usr/bin/env bash
# Load on inplace's API through kube-apiserver: CLIENTS concurrent clients for
# DURATION send a mix of CloneSet creates (20%), gets (30%), updates (25%, a
# read then a write: concurrent writers get 409s), lists (15%, pages of 50)
# and deletes (10%) in BENCH_NAMESPACES namespaces (hack/benchload,
# hack/benchlib/load.go). It prints per verb the count, rate, p50/p99 and the
# 409s, 404s and other errors, and inplace-apiserver's RSS before and after;
# it fails on any answer but a success or an expected 409/404.
#
#   bash hack/bench-load.sh [CLIENTS] [DURATION]     # default 50 60s
#   BENCH_NAMESPACES=5 bash hack/bench-load.sh 100 5m
#
# A smoke version (10 clients x 10 s) runs in make test (test/e2e TestLoadSmoke).
# The cluster is left as found (hack/lib/bench.sh); the namespaces are deleted.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=hack/lib/bench.sh
source hack/lib/bench.sh

CLIENTS="${1:-50}"
DURATION="${2:-60s}"
[[ "$CLIENTS" =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [CLIENTS] [DURATION]" >&2; exit 2; }
bench_settings 1
bench_start bench-load
NAMESPACES=("$NS")
extra=()
cleanup_load() {
  local rc=$? ns
  for ns in "${extra[@]}"; do "$KUBECTL" delete namespace "$ns" --wait=false >/dev/null 2>&1 || true; done
  (exit "$rc")
  bench_cleanup
}
trap cleanup_load EXIT
for ((i = 1; i < ${BENCH_NAMESPACES:-5}; i++)); do
  extra+=("$NS-$i")
  "$KUBECTL" create namespace "$NS-$i" >/dev/null
done
NAMESPACES+=("${extra[@]}")

go build -o "$WORK/benchload" ./hack/benchload
pid=0
if [[ -f "$PIDS/inplace-apiserver.pid" ]]; then
  read -r pid _ < "$PIDS/inplace-apiserver.pid"
fi
log "load: $CLIENTS clients x $DURATION over ${#NAMESPACES[@]} namespaces"
"$WORK/benchload" -clients "$CLIENTS" -duration "$DURATION" -apiserver-pid "$pid" \
  -namespaces "$(IFS=,; echo "${NAMESPACES[*]}")"
