# shellcheck shell=bash
# Shared parts of the benchmarks hack/bench-*.sh (sourced, not executed; the
# caller has already cd'ed to the repo root and set -euo pipefail):
#
#   source hack/lib/bench.sh
#   bench_settings 10 "${1:-}"     # N, ROUNDS, TIMEOUT, SETTLE (BENCH_*)
#   bench_start bench-foo          # cluster up if needed; namespace $NS; scratch dir $WORK
#   bench_poll 60 "what" check ARGS...   # run check every 0.1 s until it succeeds
#
# The cluster is left as found: bench_start brings it up with hack/local-up.sh
# (root needed) when it is not running, and the EXIT trap it sets brings it
# down again with hack/local-down.sh; the namespace is deleted at the end, and
# the script's background jobs are killed.

# The local cluster's settings and helpers: $ROOT, $STATE, $BIN, $KUBECONFIG and $KUBECACHEDIR
# (exported), $NODE_IP, $PIDS, log, die, ...
# shellcheck source=hack/lib/local.sh
source hack/lib/local.sh
# shellcheck disable=SC2034 # the variables are used by the sourcing scripts
KUBECTL="$BIN/kubectl"

now() { date +%s.%N; }
# elapsed T0 T1: seconds from T0 to T1 (both from now), two decimals.
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
# mean X...: the mean of the numbers, two decimals.
mean() { printf '%s\n' "$@" | awk '{ s += $1 } END { printf "%.2f", s / NR }'; }
# ratio A B: A / B, two decimals ("-" when B is 0).
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "-"; else printf "%.2f", a / b }'; }

# bench_settings DEFAULT_PODS [PODS]: sets and checks the settings every
# benchmark has: N (PODS, else $BENCH_PODS, else DEFAULT_PODS), ROUNDS
# ($BENCH_ROUNDS, 1), TIMEOUT ($BENCH_TIMEOUT, 180 seconds) and SETTLE
# ($BENCH_SETTLE, 3 seconds).
bench_settings() {
  N="${2:-${BENCH_PODS:-$1}}"
  ROUNDS="${BENCH_ROUNDS:-1}"
  TIMEOUT="${BENCH_TIMEOUT:-180}"
  SETTLE="${BENCH_SETTLE:-3}"
  [[ "$N" =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [N]   (N: number of Pods, > 0)" >&2; exit 2; }
  [[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "BENCH_ROUNDS must be > 0" >&2; exit 2; }
  [[ "$TIMEOUT" =~ ^[1-9][0-9]*$ ]] || { echo "BENCH_TIMEOUT must be > 0" >&2; exit 2; }
}

# cluster_running: kube-apiserver recorded by local-up runs and answers, and so
# does inplace-apiserver (the in-place subresource).
cluster_running() {
  local f pid start stat
  for f in kube-apiserver inplace-apiserver; do
    read -r pid start < "$PIDS/$f.pid" 2>/dev/null || return 1
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

# bench_cleanup (the EXIT trap): kills the script's own background jobs
# (requests still being sent after a failure, watches), removes $WORK, deletes
# $NS, and brings the cluster down if bench_start brought it up.
bench_cleanup() {
  local rc=$? job
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

# bench_start PREFIX: sets the cleanup trap, starts the local cluster when it
# is not running, creates the namespace $NS (PREFIX-TIME-PID, with its default
# ServiceAccount) and the scratch directory $WORK.
bench_start() {
  trap bench_cleanup EXIT
  if ! cluster_running; then
    [[ $EUID -eq 0 ]] || die "the local cluster is not running and starting it needs root"
    log "the local cluster is not running: starting it with hack/local-up.sh"
    STARTED_CLUSTER=true
    hack/local-up.sh >&2
  fi
  cluster_running || die "the local cluster is not up"

  NS="$1-$(date +%s)-$$"
  "$KUBECTL" create namespace "$NS" >/dev/null
  until "$KUBECTL" -n "$NS" get serviceaccount default >/dev/null 2>&1; do sleep 0.1; done

  WORK="$(mktemp -d)"
}

# bench_poll TIMEOUT WHAT CHECK [ARGS...]: runs CHECK ARGS until it succeeds,
# every 0.1 s; after TIMEOUT seconds dies with "WHAT: $BENCH_POLL_STATE after
# TIMEOUTs" (CHECK may set BENCH_POLL_STATE to say how far it got).
BENCH_POLL_STATE=""
bench_poll() {
  local timeout="$1" what="$2" deadline
  shift 2
  deadline=$((SECONDS + timeout))
  BENCH_POLL_STATE="not done"
  until "$@"; do
    ((SECONDS < deadline)) || die "$what: $BENCH_POLL_STATE after ${timeout}s"
    sleep 0.1
  done
}

# pod_ids GROUP: "uid ip" of each active Pod labelled bench=GROUP in $NS.
pod_ids() {
  "$KUBECTL" -n "$NS" get pods -l "bench=$1" -o \
    'jsonpath={range .items[*]}{.metadata.deletionTimestamp}|{.metadata.uid}|{.status.podIP}{"\n"}{end}' |
    awk -F'|' '$1 == "" { print $2, $3 }'
}

# changed BEFORE AFTER FIELD: how many lines of AFTER (pod_ids) have a FIELD
# (1 uid, 2 ip) that no line of BEFORE has.
changed() {
  awk -v f="$3" 'NR == FNR { seen[$f] = 1; next } !($f in seen) { n++ } END { print n + 0 }' <(echo "$1") <(echo "$2")
}

# cpu_ticks: "BUSY IDLE" jiffies of all CPUs so far (/proc/stat).
cpu_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6 }' /proc/stat; }
# cpu_busy BEFORE AFTER: percentage of CPU time busy between two cpu_ticks.
cpu_busy() {
  awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " "); busy = y[1] - x[1]; idle = y[2] - x[2]
    if (busy + idle > 0) printf "%.0f", 100 * busy / (busy + idle); else print 0 }'
}

# counts LIST: "X/N" when every round gave X, else "X,Y,.../N".
counts() {
  local uniq
  uniq="$(tr ' ' '\n' <<< "$1" | sed '/^$/d' | sort -nu | paste -sd,)"
  if [[ "$uniq" == *,* ]]; then echo "$(tr ' ' ',' <<< "${1% }")/$N"; else echo "$uniq/$N"; fi
}
