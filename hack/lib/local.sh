# Shared settings and helpers of hack/local-up.sh and hack/local-down.sh
# (sourced, not executed; the caller has already cd'ed to the repo root and
# set -euo pipefail). Hooks in hack/local-up.d/*.sh may use them too, for
# example:
#
#   local_start inplace-apiserver "$ROOT/bin/inplace-apiserver" --kubeconfig "$KUBECONFIG" ...
#   local_wait inplace-apiserver 30 "inplace-apiserver ready" kubectl get --raw /apis/apps.kruise.io/v1alpha1
#
# Every daemon started with local_start is recorded in $PIDS/NAME.pid
# ("PID STARTTIME", so a recycled pid is never mistaken for ours), logs to
# $LOGS/NAME.log, and is stopped by hack/local-down.sh.

# shellcheck disable=SC2034 # the variables are used by the sourcing scripts
ROOT="$PWD"
STATE="$ROOT/_output/local"            # everything of the running cluster
BIN="$ROOT/_output/bin"                # hack/build-kube.sh output
PIDS="$STATE/pids"
LOGS="$STATE/logs"
PKI="$STATE/pki"
KUBECONFIG="$STATE/admin.kubeconfig"   # cluster-admin (system:masters)
# kubectl's discovery cache belongs to the cluster (local-up starts it empty): in
# ~/.kube/cache, what an earlier cluster at the same address served (a benchmark's
# CRD named clonesets, say) made `kubectl get clonesets` go there for hours.
KUBECACHEDIR="$STATE/kubectl-cache"

NODE_NAME="${NODE_NAME:-inplace-node}"
NODE_IP="${NODE_IP:-10.77.0.1}"        # a /32 on lo: the kubelet refuses loopback IPs
SERVICE_CIDR=10.96.0.0/16
SERVICE_IP=10.96.0.1                   # kubernetes.default
POD_SUBNET=10.78.0.0/17                # CNI bridge subnet
CNI_BRIDGE=inplace0
CNI_NETWORK=inplace-local
CONTAINERD_SOCK=/run/containerd/containerd.sock
CONTAINER_RUNTIME_ENDPOINT="unix://$CONTAINERD_SOCK"

# The second node (INPLACE_NODES=2): a second kubelet and containerd on this
# machine with their own node IP, pod subnet and bridge (routed by the host:
# pods of both nodes reach each other), ports, state and cgroup root. It
# registers with the taint $NODE2_TAINT, so only Pods that tolerate it (the
# tests that need two nodes, DaemonSets that tolerate everything) run there.
NODE2_NAME=inplace-node2
NODE2_IP=10.77.0.2
NODE2_POD_SUBNET=10.78.128.0/17
NODE2_CNI_BRIDGE=inplace1
NODE2_CNI_NETWORK=inplace-local2
NODE2_STATE="$STATE/node2"
NODE2_CONTAINERD_SOCK=/run/inplace-node2/containerd/containerd.sock
NODE2_RUNTIME_ENDPOINT="unix://$NODE2_CONTAINERD_SOCK"
NODE2_KUBELET_PORT=10260
NODE2_KUBELET_HEALTHZ_PORT=10268
NODE2_CGROUP_ROOT=inplace-node2        # below the root of every cgroup v1 hierarchy
NODE2_TAINT=inplace.dev/second-node
# The local cluster's image registry (hack/local-up.d/05-registry.sh): inplace-registry
# (hack/registry) over plain HTTP on node 1's IP and on loopback, blobs in $REGISTRY_ROOT. Images
# name it $REGISTRY_HOST, a name that only the nodes' containerds know: their registry hosts
# directory (config_path) has a hosts.toml for it whose server is $REGISTRY_ADDR (no DNS, no
# /etc/hosts).
REGISTRY_PORT=5000
REGISTRY_HOST="registry.inplace.local:$REGISTRY_PORT"
REGISTRY_ADDR="$NODE_IP:$REGISTRY_PORT"
REGISTRY_ROOT="$STATE/registry"
# The registry's private repositories, private/*, ask these basic auth credentials for every pull
# and push (serve -auth): the tests' pull secrets hold them. Test credentials of a loopback/node-IP
# registry, not a secret.
REGISTRY_PRIVATE_USER=inplace-puller
REGISTRY_PRIVATE_PASSWORD=e2e-pull-password
# Fixed TCP ports (loopback unless noted): etcd client+peer, kube-apiserver
# (all addresses), kubelet healthz, kubelet (all addresses), controller-manager,
# scheduler, CoreDNS (node IP, also UDP) and its readiness, the registry (node IP
# and loopback).
DNS_READY_PORT=10054
PORTS=(2379 2380 6443 10248 10250 10257 10259 53 "$DNS_READY_PORT" "$REGISTRY_PORT")
NODE2_PORTS=("$NODE2_KUBELET_PORT" "$NODE2_KUBELET_HEALTHZ_PORT")
# Core daemons in the order local-down stops them (anything else in $PIDS,
# e.g. started by a hook, is stopped first).
CORE_DAEMONS=(kube-scheduler kube-controller-manager kubelet node2-kubelet kube-apiserver etcd containerd node2-containerd)

export KUBECONFIG KUBECACHEDIR NODE_NAME NODE_IP CONTAINER_RUNTIME_ENDPOINT
export PATH="$BIN:$PATH"               # our kubectl, not whatever is installed

# local_lock: one hack/local-up.sh or hack/local-down.sh at a time (flock on
# fd 9; local_start closes fd 9 for the daemons so they do not keep the lock).
local_lock() {
  [[ -z "${LOCAL_CLUSTER_LOCKED:-}" ]] || return 0
  mkdir -p "$ROOT/_output"
  exec 9> "$ROOT/_output/local.lock"
  flock -n 9 || die "another hack/local-up.sh or hack/local-down.sh is running"
  export LOCAL_CLUSTER_LOCKED=1
}

# log: to stderr; never fails (a closed stderr must not abort a cleanup).
log() { echo "[$(date +%T.%3N)] $*" >&2 2>/dev/null || true; }
die() { log "ERROR: $*"; exit 1; }

# proc_starttime PID: the process start time (field 22 of /proc/PID/stat),
# empty when the process does not exist or is a zombie.
proc_starttime() {
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 0
  stat="${stat##*) }"            # drop "pid (comm) ", comm may contain spaces
  # shellcheck disable=SC2086 # split into fields on purpose
  set -- $stat                   # fields 3.. of stat
  [[ "$1" == Z || "$1" == X ]] && return 0
  echo "${20}"
}

# daemon_pid NAME: the recorded pid of NAME if that very process still runs.
daemon_pid() {
  local f="$PIDS/$1.pid" pid start
  [[ -f "$f" ]] || return 1
  read -r pid start < "$f" || return 1
  [[ -n "$pid" && -n "$start" && "$(proc_starttime "$pid")" == "$start" ]] || return 1
  echo "$pid"
}

# local_start NAME CMD...: start CMD in its own session (so it outlives this
# script and its process group), log to $LOGS/NAME.log, record its pid.
local_start() {
  local name="$1" pid
  shift
  mkdir -p "$PIDS" "$LOGS"
  if pid="$(daemon_pid "$name")"; then
    die "$name is already running (pid $pid)"
  fi
  echo "=== $(date -Is) $*" >> "$LOGS/$name.log"
  setsid "$@" >> "$LOGS/$name.log" 2>&1 < /dev/null 9>&- &
  pid=$!
  echo "$pid $(proc_starttime "$pid")" > "$PIDS/$name.pid"
  log "started $name (pid $pid)"
}

# local_stop NAME [TIMEOUT_S]: TERM the recorded process, KILL it after the
# deadline, wait until it is gone, forget its pid file. Never touches a
# process that is not the recorded one.
local_stop() {
  local name="$1" timeout="${2:-15}" pid deadline
  if pid="$(daemon_pid "$name")"; then
    log "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    deadline=$((SECONDS + timeout))
    while daemon_pid "$name" >/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
    if daemon_pid "$name" >/dev/null; then
      log "$name did not stop within ${timeout}s, killing it"
      kill -KILL "$pid" 2>/dev/null || true
      deadline=$((SECONDS + 10))
      while daemon_pid "$name" >/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
    fi
  fi
  rm -f "$PIDS/$name.pid"
}

# local_wait NAME TIMEOUT_S DESC CMD...: poll CMD (quietly) every 0.1 s until
# it succeeds. Fails early, with the tail of NAME's log, when daemon NAME has
# died, and at the deadline. NAME may be "" when no daemon is involved.
local_wait() {
  local name="$1" timeout="$2" desc="$3" deadline
  shift 3
  deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if [[ -n "$name" ]] && ! daemon_pid "$name" >/dev/null; then
      tail -n 30 "$LOGS/$name.log" >&2 || true
      die "$name exited while waiting for: $desc (log: $LOGS/$name.log)"
    fi
    if ((SECONDS >= deadline)); then
      [[ -z "$name" ]] || tail -n 30 "$LOGS/$name.log" >&2 || true
      die "timed out after ${timeout}s waiting for: $desc"
    fi
    sleep 0.1
  done
  log "ready: $desc"
}

# http_ok HOST PORT PATH WANT: plain-HTTP GET (bash /dev/tcp, no curl needed)
# whose response contains WANT.
http_ok() {
  local resp
  resp="$(
    exec 3<>"/dev/tcp/$1/$2" || exit 1
    printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' "$3" "$1" >&3
    timeout 2 cat <&3
  )" 2>/dev/null || return 1
  [[ "$resp" == *"$4"* ]]
}

# https_ok PORT PATH: an HTTPS GET on 127.0.0.1:PORT (no client certificate,
# server certificate not verified; openssl, no curl needed) answering 200
# "ok": /readyz, /healthz are always allowed for anonymous requests.
https_ok() {
  local resp
  resp="$(printf 'GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n' "$2" |
    timeout 3 openssl s_client -quiet -connect "127.0.0.1:$1" 2>/dev/null)" || return 1
  [[ "$resp" == "HTTP/1."?" 200 "* && "$resp" == *$'\r\n\r\n'ok ]]
}

# unmount_under DIR: unmount everything mounted below DIR, deepest first.
unmount_under() {
  local dir="$1" m
  [[ -d "$dir" ]] || return 0
  findmnt -rn -o TARGET | awk -v p="$dir/" 'index($0, p) == 1' | sort -r | while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || log "could not unmount $m"
  done
}

# containerd_shims_running [SOCKET]: whether a containerd shim serving our
# containerd socket (default node 1's) is alive (read-only scan of /proc; shims
# are never killed directly: their pods are removed through containerd instead).
containerd_shims_running() {
  local f sock="${1:-$CONTAINERD_SOCK}"
  while read -r f; do
    tr '\0' ' ' 2>/dev/null < "$f" | grep -q '^[^ ]*containerd-shim' && return 0
  done < <(grep -lsaF -- "$sock" /proc/[0-9]*/cmdline)
  return 1
}

# start_containerd [NAME CONFIG SOCKET]: start our containerd (config written
# by local-up; default node 1's) and wait until it answers on its socket.
start_containerd() {
  local name="${1:-containerd}" config="${2:-$STATE/containerd/config.toml}" sock="${3:-$CONTAINERD_SOCK}"
  # (ss: instant, where ctr would wait for a socket that nobody serves)
  if [[ -n "$(ss -Hxl "src = $sock")" ]]; then
    die "a containerd not started by hack/local-up.sh is serving $sock; stop it first"
  fi
  local_start "$name" containerd --config "$config"
  local_wait "$name" 30 "$name" ctr --address "$sock" version
}

# node2_wanted: this local-up runs the second node (INPLACE_NODES=2).
node2_wanted() {
  case "${INPLACE_NODES:-1}" in
    1) return 1 ;;
    2) return 0 ;;
    *) die "INPLACE_NODES=$INPLACE_NODES: want 1 (the default) or 2" ;;
  esac
}

# local_hook_alone: a hack/local-up.d hook run on its own (to restart its program) needs root,
# the lock that local-up and local-down hold, and the cluster running.
local_hook_alone() {
  [[ $EUID -eq 0 ]] || die "must run as root"
  local_lock
  kubectl get --raw /readyz >/dev/null 2>&1 || die "the local cluster is not running (start it with hack/local-up.sh)"
}

# write_kubeconfig FILE CERT_NAME: a kubeconfig for the client cert CERT_NAME,
# everything embedded (the file can be copied anywhere).
write_kubeconfig() {
  cat > "$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority-data: $(base64 -w0 "$PKI/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $(base64 -w0 "$PKI/$2.crt")
    client-key-data: $(base64 -w0 "$PKI/$2.key")
contexts:
- name: local
  context:
    cluster: local
    user: $2
current-context: local
EOF
  chmod 600 "$1"
}
