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
# A function a benchmark sets to undo what it changed in the cluster (run by bench_cleanup in a
# subshell, before $NS is deleted, also when the cluster goes down afterwards).
BENCH_CLEANUP_HOOK=""
# Feature gates a benchmark sets, before bench_start, for inplace-apiserver to run with
# (--feature-gates=...): a cluster bench_start brings up starts it so; in one already running
# bench_start restarts it so, and bench_cleanup restarts it as it was.
BENCH_APISERVER_GATES=""
APISERVER_FLAGS_BEFORE="${INPLACE_APISERVER_FLAGS:-}"
APISERVER_RESTARTED=false

# bench_cleanup (the EXIT trap): kills the script's own background jobs
# (requests still being sent after a failure, watches), runs $BENCH_CLEANUP_HOOK, removes $WORK,
# deletes $NS, and brings the cluster down if bench_start brought it up.
bench_cleanup() {
  local rc=$? job
  for job in $(jobs -p); do kill "$job" 2>/dev/null || true; done
  if [[ -n "$BENCH_CLEANUP_HOOK" ]]; then ("$BENCH_CLEANUP_HOOK") || rc=1; fi
  if $APISERVER_RESTARTED; then
    log "restarting inplace-apiserver as it was"
    INPLACE_APISERVER_FLAGS="$APISERVER_FLAGS_BEFORE" hack/local-up.d/10-inplace-apiserver.sh >&2 ||
      log "WARNING: inplace-apiserver did not start again: run hack/local-up.d/10-inplace-apiserver.sh"
  fi
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

# bench_cluster_up: sets the cleanup trap and starts the local cluster when it
# is not running (bench_cleanup brings it down again then).
bench_cluster_up() {
  trap bench_cleanup EXIT
  if ! cluster_running; then
    [[ $EUID -eq 0 ]] || die "the local cluster is not running and starting it needs root"
    log "the local cluster is not running: starting it with hack/local-up.sh"
    STARTED_CLUSTER=true
    hack/local-up.sh >&2
  fi
  cluster_running || die "the local cluster is not up"
}

# bench_start PREFIX: sets the cleanup trap, starts the local cluster when it
# is not running, creates the namespace $NS (PREFIX-TIME-PID, with its default
# ServiceAccount) and the scratch directory $WORK.
bench_start() {
  if [[ -n "$BENCH_APISERVER_GATES" ]]; then
    # The hook reads this when it starts inplace-apiserver (hack/local-up.d).
    export INPLACE_APISERVER_FLAGS="$APISERVER_FLAGS_BEFORE --feature-gates=$BENCH_APISERVER_GATES"
  fi
  bench_cluster_up
  if [[ -n "$BENCH_APISERVER_GATES" ]] && ! $STARTED_CLUSTER; then
    log "restarting inplace-apiserver with --feature-gates=$BENCH_APISERVER_GATES"
    APISERVER_RESTARTED=true
    hack/local-up.d/10-inplace-apiserver.sh >&2
  fi

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

# The control plane's processes whose CPU time proc_cpu reports, as recorded in $PIDS (the inplace
# programs run as host processes: the default local cluster).
CONTROL_PLANE=(kube-apiserver etcd kube-controller-manager kube-scheduler inplace-apiserver inplace-controller inplace-daemon)

# proc_cpu: "NAME SECONDS" for each process of CONTROL_PLANE that runs: its CPU time (user +
# system) so far, from /proc/PID/stat.
proc_cpu() {
  local name pid stat hz
  hz="$(getconf CLK_TCK)"
  for name in "${CONTROL_PLANE[@]}"; do
    pid="$(daemon_pid "$name")" || continue
    stat="$(cat "/proc/$pid/stat" 2>/dev/null)" || continue
    stat="${stat##*) }" # drop "pid (comm) ": utime and stime are then fields 12 and 13
    awk -v n="$name" -v hz="$hz" '{ printf "%s %.2f\n", n, ($12 + $13) / hz }' <<< "$stat"
  done
}

# http_get HOST:PORT PATH: the body of a plain HTTP GET (no curl needed).
http_get() {
  (
    exec 3<>"/dev/tcp/${1%:*}/${1##*:}" || exit 1
    printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' "$2" "${1%:*}" >&3
    timeout 5 cat <&3
  ) 2>/dev/null | sed '1,/^\r$/d'
}

# inplace_requests: "PROGRAM VERB RESOURCE COUNT" for what each inplace program has sent to
# kube-apiserver so far (its inplace_kube_requests_total, status codes summed).
inplace_requests() {
  {
    "$KUBECTL" --server="https://$NODE_IP:${INPLACE_APISERVER_PORT:-8443}" get --raw /metrics 2>/dev/null | sed 's/^/inplace-apiserver /'
    http_get "${INPLACE_CONTROLLER_HEALTH:-127.0.0.1:10390}" /metrics | sed 's/^/inplace-controller /'
    http_get "${INPLACE_DAEMON_HEALTH:-127.0.0.1:10391}" /metrics | sed 's/^/inplace-daemon /'
  } | awk '$2 ~ /^inplace_kube_requests_total\{/ {
      verb = $2; sub(/.*verb="/, "", verb); sub(/".*/, "", verb)
      res = $2; sub(/.*resource="/, "", res); sub(/".*/, "", res)
      if (res == "") res = "-"
      n[$1 " " verb " " res] += $3
    }
    END { for (k in n) print k, n[k] }' | sort
}

# delta BEFORE AFTER: "KEY... VALUE" lines of AFTER minus BEFORE (same keys: all fields but the
# last), the keys that grew only.
delta() {
  awk 'NR == FNR { v = $NF; $NF = ""; b[$0] = v; next }
    { v = $NF; $NF = ""; d = v - b[$0]; if (d > 0) printf "%s%.2f\n", $0, d }' <(echo "$1") <(echo "$2")
}
