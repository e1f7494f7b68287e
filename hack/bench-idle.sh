#!/usr/bin/env bash
# Measures what the inplace programs cost while nothing happens: each program's CPU (user +
# system, /proc/PID/stat) in mCPU and its context switches per second (all its threads',
# /proc/PID/task/*/status: about one per wakeup), over BENCH_WINDOW seconds, BENCH_ROUNDS times,
# each window once the programs are quiet.
#
#   bash hack/bench-idle.sh                      # the local cluster's programs, as they run
#   bash hack/bench-idle.sh "" "--enable-priority-and-fairness"     # ways: see below
#   BENCH_IDLE_MODE=standalone bash hack/bench-idle.sh "" "--embedded-etcd-heartbeat-interval=100ms"
#
# Modes (BENCH_IDLE_MODE):
#   cluster (default): the local cluster's inplace-apiserver, inplace-controller and
#     inplace-daemon(s), host processes (not INPLACE_IN_CLUSTER). The script holds the e2e lock
#     (/tmp/inplace-e2e.lock; BENCH_LOCKED=1 when the caller already holds it) for the whole
#     session; it uses the cluster when it runs, else brings it up (root) and down again at the
#     end (hack/lib/bench.sh). It starts nothing else and creates no object.
#   standalone: no cluster, no lock: one standalone inplace-apiserver per way (embedded etcd in a
#     temporary directory, ports from BENCH_PORT, 18443, up), all measured in the same windows.
#
# Ways: each argument is a way to run inplace-apiserver, as extra flags (split on spaces; "" for
# none). In cluster mode inplace-apiserver is restarted with each way in turn before each window
# (hack/local-up.d/10-inplace-apiserver.sh, keeping its data; the way's flags after
# $INPLACE_APISERVER_FLAGS), rounds interleaved, and at the end restarted with
# $INPLACE_APISERVER_FLAGS alone. With no argument nothing is restarted in cluster mode, and
# standalone mode runs the defaults.
#
# Settings (environment): BENCH_ROUNDS (3), BENCH_WINDOW (60 s), BENCH_SETTLE (60 s after a
# (re)start before looking for quiet: kube-apiserver's aggregator first downloads a restarted
# server's OpenAPI within about a minute, and building it once costs inplace-apiserver ~0.1 CPU s,
# which a window must not catch), BENCH_QUIET (20: quiet is every measured program under this
# many mCPU over 5 s; after BENCH_QUIET_WAIT, 120 s, the window starts anyway, with a warning),
# BENCH_PROFILE=DIR (cluster mode: a CPU profile, /debug/pprof/profile, of inplace-apiserver over
# each window, kept in DIR).
set -euo pipefail
cd "$(dirname "$0")/.."

MODE="${BENCH_IDLE_MODE:-cluster}"
ROUNDS="${BENCH_ROUNDS:-3}"
WINDOW="${BENCH_WINDOW:-60}"
SETTLE="${BENCH_SETTLE:-60}"
QUIET="${BENCH_QUIET:-20}"
QUIET_WAIT="${BENCH_QUIET_WAIT:-120}"
PROFILE="${BENCH_PROFILE:-}"
for v in ROUNDS WINDOW QUIET_WAIT; do
  [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || { echo "BENCH_$v must be > 0" >&2; exit 2; }
done
[[ "$SETTLE" =~ ^[0-9]+$ && "$QUIET" =~ ^[0-9]+$ ]] || { echo "BENCH_SETTLE and BENCH_QUIET must be numbers" >&2; exit 2; }
case "$MODE" in
  cluster)
    if [[ -z "${BENCH_LOCKED:-}" ]]; then
      echo "[$(date +%T)] waiting for the e2e lock (/tmp/inplace-e2e.lock)" >&2
      exec env BENCH_LOCKED=1 flock /tmp/inplace-e2e.lock bash "$0" "$@"
    fi
    ;;
  standalone) ;;
  *) echo "BENCH_IDLE_MODE=$MODE: cluster or standalone" >&2; exit 2 ;;
esac
WAYS=("$@")
RESTART=true
if ((${#WAYS[@]} == 0)); then
  WAYS=("")
  RESTART=false
fi

# shellcheck source=hack/lib/bench.sh
source hack/lib/bench.sh
HZ="$(getconf CLK_TCK)"

# cpu_ticks_of PID: its CPU time so far (user + system, clock ticks; dead threads included).
cpu_ticks_of() {
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  stat="${stat##*) }"
  awk '{ print $12 + $13 }' <<< "$stat"
}
# switches_of PID: the context switches of its threads so far (voluntary + involuntary).
switches_of() {
  cat "/proc/$1"/task/*/status 2>/dev/null | awk '/^(non)?voluntary_ctxt_switches:/ { n += $2 } END { print n + 0 }'
}
# mcpu TICKS SECONDS: mCPU, one decimal.
mcpu() { awk -v t="$1" -v s="$2" -v hz="$HZ" 'BEGIN { printf "%.1f", 1000 * t / hz / s }'; }
# per_s N SECONDS: N per second, no decimals.
per_s() { awk -v n="$1" -v s="$2" 'BEGIN { printf "%.0f", n / s }'; }

# TARGETS: "LABEL PID" lines of what is measured now (set by targets_cluster / the standalone start).
TARGETS=""
targets_cluster() {
  local name pid
  TARGETS=""
  for name in inplace-apiserver inplace-controller inplace-daemon inplace-daemon-node2; do
    if pid="$(daemon_pid "$name")"; then TARGETS+="$name $pid"$'\n'; fi
  done
  TARGETS="${TARGETS%$'\n'}"
  [[ -n "$TARGETS" ]] || die "no inplace program runs on the local cluster (INPLACE_IN_CLUSTER is not measured)"
}

# wait_quiet: BENCH_SETTLE seconds, then until every target spent under BENCH_QUIET mCPU in 5 s.
wait_quiet() {
  local deadline label pid before loud
  sleep "$SETTLE"
  deadline=$((SECONDS + QUIET_WAIT))
  while :; do
    declare -A before=()
    while read -r label pid; do before[$pid]="$(cpu_ticks_of "$pid")" || die "$label (pid $pid) is gone"; done <<< "$TARGETS"
    sleep 5
    loud=""
    while read -r label pid; do
      if awk -v m="$(mcpu $(($(cpu_ticks_of "$pid") - ${before[$pid]})) 5)" -v q="$QUIET" 'BEGIN { exit !(m >= q) }'; then
        loud+=" $label"
      fi
    done <<< "$TARGETS"
    [[ -z "$loud" ]] && return 0
    if ((SECONDS >= deadline)); then
      log "WARNING: not quiet after ${QUIET_WAIT}s (over $QUIET mCPU:$loud): measuring anyway"
      return 0
    fi
  done
}

# RESULTS: "WAY|LABEL|MCPU|SWITCHES_PER_S" lines, one per target per window.
RESULTS=""
# measure WAY ROUND: one window over every target; appends to RESULTS.
measure() {
  local way="$1" round="$2" label pid t0 t1 c0 c1 prof_pid=""
  declare -A cpu0=() sw0=()
  if [[ -n "$PROFILE" && "$MODE" == cluster ]]; then
    mkdir -p "$PROFILE"
    "$KUBECTL" --server="https://$NODE_IP:${INPLACE_APISERVER_PORT:-8443}" get --raw \
      "/debug/pprof/profile?seconds=$WINDOW" > "$PROFILE/idle-way$way-r$round.pprof" 2>/dev/null &
    prof_pid=$!
  fi
  t0="$(now)"
  while read -r label pid; do
    cpu0[$pid]="$(cpu_ticks_of "$pid")" || die "$label (pid $pid) is gone"
    sw0[$pid]="$(switches_of "$pid")"
  done <<< "$TARGETS"
  sleep "$WINDOW"
  t1="$(now)"
  while read -r label pid; do
    c1="$(cpu_ticks_of "$pid")" || die "$label (pid $pid) ended during the window"
    c0="$(switches_of "$pid")"
    RESULTS+="$way|$label|$(mcpu $((c1 - ${cpu0[$pid]})) "$(elapsed "$t0" "$t1")")|$(per_s $((c0 - ${sw0[$pid]})) "$(elapsed "$t0" "$t1")")"$'\n'
  done <<< "$TARGETS"
  [[ -z "$prof_pid" ]] || wait "$prof_pid" || log "WARNING: no profile of round $round"
}

# report: per way and program, each round's "mCPU (switches/s)" and the means.
report() {
  echo
  echo "idle, $ROUNDS x ${WINDOW}s windows ($MODE): mCPU (context switches per s) per round, then the means"
  printf '%s' "$RESULTS" | awk -F'|' -v ways="$(printf '%s\n' "${WAYS[@]}" | awk '{ printf "%s%s", (NR > 1 ? "\t" : ""), ($0 == "" ? "(defaults)" : $0) }')" '
    { k = $1 SUBSEP $2; if (!(k in n)) order[++m] = k; n[k]++; cpu[k] += $3; sw[k] += $4
      cell[k] = cell[k] sprintf(" %6.1f (%4d)", $3, $4) }
    END {
      split(ways, w, "\t")
      printf "%-22s %-15s  %s\n", "program", "mean", "rounds | way"
      for (i = 1; i <= m; i++) {
        split(order[i], p, SUBSEP)
        printf "%-22s %6.1f (%4.0f) %s | %s\n", p[2], cpu[order[i]] / n[order[i]], sw[order[i]] / n[order[i]], cell[order[i]], w[p[1] + 1]
      }
    }'
}

if [[ "$MODE" == cluster ]]; then
  bench_cluster_up
  BASE_FLAGS="${INPLACE_APISERVER_FLAGS:-}"
  restore() {
    log "restarting inplace-apiserver with its usual flags (INPLACE_APISERVER_FLAGS='$BASE_FLAGS')"
    INPLACE_APISERVER_FLAGS="$BASE_FLAGS" hack/local-up.d/10-inplace-apiserver.sh >/dev/null 2>&1 ||
      log "WARNING: inplace-apiserver did not start again: run hack/local-up.d/10-inplace-apiserver.sh"
  }
  if $RESTART; then trap 'rc=$?; restore; (exit "$rc"); bench_cleanup' EXIT; fi
  for ((r = 1; r <= ROUNDS; r++)); do
    for i in "${!WAYS[@]}"; do
      if $RESTART; then
        log "round $r: inplace-apiserver with '${WAYS[$i]}'"
        INPLACE_APISERVER_FLAGS="$BASE_FLAGS ${WAYS[$i]}" hack/local-up.d/10-inplace-apiserver.sh >/dev/null 2>&1 ||
          die "inplace-apiserver did not start with '${WAYS[$i]}' (see $LOGS/inplace-apiserver.log)"
      fi
      targets_cluster
      if $RESTART || ((r == 1)); then wait_quiet; fi
      log "round $r: measuring ${WINDOW}s"
      measure "$i" "$r"
    done
  done
else
  make build >/dev/null
  WORK="$(mktemp -d /tmp/bench-idle.XXXXXX)"
  SERVERS=()
  stop_servers() {
    local pid
    for pid in "${SERVERS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${SERVERS[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
  }
  trap stop_servers EXIT
  port="${BENCH_PORT:-18443}"
  for i in "${!WAYS[@]}"; do
    # shellcheck disable=SC2086 # the way's flags, split on purpose
    _output/bin/inplace-apiserver --mode=standalone --data-dir="$WORK/data$i" --secure-port=$((port + i)) \
      --embedded-etcd-port=0 ${WAYS[$i]} > "$WORK/server$i.log" 2>&1 &
    SERVERS+=($!)
    TARGETS+="inplace-apiserver $!"$'\n'
  done
  TARGETS="${TARGETS%$'\n'}"
  for i in "${!WAYS[@]}"; do
    ready() { "$KUBECTL" --server="https://127.0.0.1:$((port + i))" --insecure-skip-tls-verify --token=x get --raw /readyz >/dev/null 2>&1; }
    bench_poll 60 "standalone inplace-apiserver '${WAYS[$i]}' ready" ready
  done
  wait_quiet
  for ((r = 1; r <= ROUNDS; r++)); do
    log "round $r: measuring ${WINDOW}s"
    # One window measures every way's server; RESULTS is rewritten per way below.
    measure all "$r"
  done
  # Label each server's lines with its way (TARGETS lists them in the ways' order).
  RESULTS="$(printf '%s' "$RESULTS" | awk -F'|' -v n="${#WAYS[@]}" '{ i = (NR - 1) % n; print i "|" $2 "|" $3 "|" $4 }')"$'\n'
fi
report
