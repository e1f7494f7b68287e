#!/usr/bin/env bash
# Starts a real single-node Kubernetes v1.35.4 cluster on this machine:
# etcd, containerd, kube-apiserver (with the aggregation layer wired up),
# kube-controller-manager, kube-scheduler and a kubelet, all as host
# processes (no docker, no registry). Root is required.
#
#   hack/local-up.sh
#   export KUBECONFIG=$PWD/_output/local/admin.kubeconfig   # printed at the end
#   hack/local-down.sh
#
# Each run starts from a clean, empty cluster: it first runs
# hack/local-down.sh (which also cleans up after a crashed earlier run), then
# installs the Debian packages, builds the binaries and images (all cached),
# and starts the daemons, waiting for each to be healthy. Everything lives in
# _output/local/: pids/ (recorded pids), logs/ (one log per daemon; the
# previous run's in logs.prev/), pki/, etcd/, kubelet/ (kubelet root dir),
# containerd/ (config and root: imported images survive restarts), cni/,
# pod-logs/, and env (variables for scripts: `source _output/local/env`).
#
# Test images (imagePullPolicy: Never): inplace.local/app:v1|v2|v3|bad; see
# hack/build-images.sh. The same images are also in the local registry,
# registry.inplace.local:5000 (hack/local-up.d/05-registry.sh), for Pods that
# pull.
#
# INPLACE_IN_CLUSTER=1: the inplace hooks install inplace into the cluster from
# artifacts/deploy (its image, its own CA) instead of starting host processes.
#
# INPLACE_NODES=2: a second node, $NODE2_NAME (hack/lib/local.sh): its own
# kubelet and containerd, node IP 10.77.0.2, pod subnet 10.78.128.0/17 on
# bridge inplace1, kubelet ports 10260/10268, tainted
# inplace.dev/second-node:NoSchedule so that only Pods tolerating it go there;
# the daemon hook runs inplace-daemon-node2 for it. Host processes only.
#
# INPLACE_AUDIT_POLICY=FILE: kube-apiserver writes an audit log with that
# policy (audit.k8s.io/v1 Policy) to $LOGS/audit.log, e.g. to find which client
# sends which writes during a benchmark. Off by default (it costs CPU).
#
# Hooks: at the end, every hack/local-up.d/*.sh (or $LOCAL_UP_HOOKS/*.sh) is
# sourced in name order, with set -euo pipefail and the variables and helpers
# of hack/lib/local.sh available: local_start / local_wait, $KUBECONFIG,
# $PKI, $BIN, $LOGS, $NODE_NAME, $NODE_IP. A failing hook fails local-up
# (the cluster stays up; hack/local-down.sh stops it and the hooks' daemons).
#
# Host state touched outside _output/ (local-down undoes what it can):
#   - address 10.77.0.1/32 on lo (node IP; removed by local-down if added here),
#     and 10.77.0.2/32 with the second node
#   - CNI bridge inplace0, pod subnet 10.78.0.0/17 (deleted by local-down), and
#     inplace1, 10.78.128.0/17 with the second node;
#     net.ipv4.ip_forward=1 (set by the bridge plugin, left as is); no iptables
#   - /run/containerd (containerd state and socket), /var/run/netns (pod netns),
#     /run/inplace-node2 (the second node's containerd, removed by local-down),
#     /var/lib/cni/results (libcni cache; our entries are removed)
#   - /var/lib/kubelet/device-plugins (fixed in the kubelet; removed by
#     local-down when /var/lib/kubelet did not exist before)
#   - /var/log/containers (kubelet log symlinks; ours are removed)
#   - kubepods cgroups in every cgroup v1 controller (removed when empty), and
#     inplace-node2/ (the second node's cgroup root, removed by local-down)
#   - TCP ports 2379 2380 (etcd, loopback), 6443 (kube-apiserver, all
#     addresses), 53 (CoreDNS, TCP and UDP on the node IP), 10054 (its
#     readiness, loopback), 5000 (the image registry, node IP and loopback), 10248 (kubelet healthz, loopback), 10250 (kubelet, all
#     addresses), 10257 (controller-manager), 10259 (scheduler), plus
#     containerd's streaming server on a random loopback port; with the second
#     node 10260 (its kubelet, all addresses) and 10268 (its healthz, loopback).
set -euo pipefail
cd "$(dirname "$0")/.."
source hack/lib/local.sh

[[ $EUID -eq 0 ]] || die "must run as root"
local_lock
if node2_wanted; then
  case "${INPLACE_IN_CLUSTER:-}" in
    "" | 0) ;;
    *) die "INPLACE_NODES=2 needs the inplace programs as host processes (INPLACE_IN_CLUSTER unset):" \
      "in the cluster inplace-daemon reaches containerd through a hostPath, the same path for both nodes of this one machine" ;;
  esac
fi
start_time=$(date +%s.%N)

# --- 0. clean slate, dependencies, binaries, images --------------------------
hack/local-down.sh
hack/install-deps.sh
hack/build-kube.sh
hack/build-images.sh

ports=("${PORTS[@]}")
if node2_wanted; then ports+=("${NODE2_PORTS[@]}"); fi
for p in "${ports[@]}"; do
  if [[ -n "$(ss -Hltn "sport = :$p")" ]]; then
    ss -Hltnp "sport = :$p" >&2
    die "TCP port $p is in use by a process local-up did not start"
  fi
done

# The kubelet taints its node with disk-pressure (and evicts Pods) when the filesystem of its
# state has less than evictionHard's 1% free (step 4): on a machine whose disk is nearly full the
# tests would then fail waiting for Pods that are never scheduled. Say so now instead.
mkdir -p "$STATE"
read -r fs_size fs_avail < <(df -Pk "$STATE" | awk 'NR == 2 { print $2, $4 }')
fs_need=$((fs_size / 100 + 2 * 1024 * 1024)) # the kubelet's 1%, and 2 GiB for the images and Pods
if ((fs_avail < fs_need)); then
  die "the filesystem of $STATE has $((fs_avail / 1024)) MiB free; the local cluster needs $((fs_need / 1024)) MiB" \
    "(its kubelets evict Pods and taint their nodes disk-pressure below 1% free): free some disk space"
fi

mkdir -p "$PIDS" "$STATE/markers" "$STATE/containerd" "$STATE/cni/net.d" "$STATE/cni/ipam" "$STATE/pod-logs"
rm -rf "$LOGS.prev"
[[ -d "$LOGS" ]] && mv "$LOGS" "$LOGS.prev"
mkdir -p "$LOGS"

# --- 1. PKI (openssl; generated once, reused while the node settings hold) ---
# ECDSA P-256 keys: fast to generate, accepted by every component.
pki_settings="v1 $NODE_NAME $NODE_IP $SERVICE_IP $NODE2_NAME $NODE2_IP"
if [[ "$(cat "$PKI/.settings" 2>/dev/null)" != "$pki_settings" ]]; then
  rm -rf "$PKI"
fi
mkdir -p "$PKI"

gen_key() { [[ -f "$PKI/$1.key" ]] || openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$PKI/$1.key" 2>/dev/null; }

# gen_ca NAME CN
gen_ca() {
  [[ -f "$PKI/$1.crt" ]] && return 0
  gen_key "$1"
  openssl req -x509 -new -key "$PKI/$1.key" -subj "/CN=$2" -days 3650 -out "$PKI/$1.crt" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,digitalSignature,keyCertSign,cRLSign"
}

# gen_cert NAME CA SUBJECT EXT_KEY_USAGE [SUBJECT_ALT_NAMES]
gen_cert() {
  local name="$1" ca="$2" subj="$3" eku="$4" san="${5:-}"
  [[ -f "$PKI/$name.crt" ]] && return 0
  gen_key "$name"
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$eku"
    [[ -z "$san" ]] || echo "subjectAltName=$san"
  } > "$PKI/$name.ext"
  openssl req -new -key "$PKI/$name.key" -subj "$subj" -out "$PKI/$name.csr"
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/$ca.crt" -CAkey "$PKI/$ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days 3650 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null
  rm -f "$PKI/$name.csr" "$PKI/$name.ext"
}

gen_ca ca inplace-local-ca
gen_ca front-proxy-ca inplace-local-front-proxy-ca
gen_cert apiserver ca /CN=kube-apiserver serverAuth \
  "IP:$NODE_IP,IP:127.0.0.1,IP:$SERVICE_IP,DNS:localhost,DNS:$NODE_NAME,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
gen_cert apiserver-kubelet-client ca "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
gen_cert front-proxy-client front-proxy-ca /CN=front-proxy-client clientAuth
gen_cert admin ca "/O=system:masters/CN=kubernetes-admin" clientAuth
gen_cert controller-manager ca /CN=system:kube-controller-manager clientAuth
gen_cert scheduler ca /CN=system:kube-scheduler clientAuth
gen_cert kubelet-client ca "/O=system:nodes/CN=system:node:$NODE_NAME" clientAuth
gen_cert kubelet-serving ca "/CN=$NODE_NAME" serverAuth "IP:$NODE_IP,IP:127.0.0.1,DNS:$NODE_NAME,DNS:localhost"
gen_cert node2-kubelet-client ca "/O=system:nodes/CN=system:node:$NODE2_NAME" clientAuth
gen_cert node2-kubelet-serving ca "/CN=$NODE2_NAME" serverAuth "IP:$NODE2_IP,IP:127.0.0.1,DNS:$NODE2_NAME,DNS:localhost"
# Service account token signing key pair.
gen_key sa
[[ -f "$PKI/sa.pub" ]] || openssl pkey -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
echo "$pki_settings" > "$PKI/.settings"

write_kubeconfig "$KUBECONFIG" admin
write_kubeconfig "$PKI/controller-manager.kubeconfig" controller-manager
write_kubeconfig "$PKI/scheduler.kubeconfig" scheduler
write_kubeconfig "$PKI/kubelet.kubeconfig" kubelet-client
write_kubeconfig "$PKI/node2-kubelet.kubeconfig" node2-kubelet-client

# Variables for scripts and humans: `source _output/local/env`.
cat > "$STATE/env" <<EOF
# Written by hack/local-up.sh: source it to talk to the local cluster.
export KUBECONFIG=$KUBECONFIG
export PATH=$BIN:\$PATH
export NODE_NAME=$NODE_NAME
export NODE_IP=$NODE_IP
export CONTAINER_RUNTIME_ENDPOINT=$CONTAINER_RUNTIME_ENDPOINT
export LOCAL_CLUSTER_STATE=$STATE
export LOCAL_CLUSTER_PKI=$PKI
# The image registry (hack/local-up.d/05-registry.sh): images are named $REGISTRY_HOST/...;
# it listens on $REGISTRY_ADDR (inplace-registry push -resolve $REGISTRY_HOST=$REGISTRY_ADDR).
export INPLACE_REGISTRY=$REGISTRY_HOST
export INPLACE_REGISTRY_ADDR=$REGISTRY_ADDR
# Its private repositories, \$INPLACE_REGISTRY/private/..., ask these basic auth credentials.
export INPLACE_REGISTRY_PRIVATE_AUTH=$REGISTRY_PRIVATE_USER:$REGISTRY_PRIVATE_PASSWORD
EOF
if node2_wanted; then
  cat >> "$STATE/env" <<EOF
# The second node (INPLACE_NODES=2); Pods need a toleration of its taint.
export NODE2_NAME=$NODE2_NAME
export NODE2_IP=$NODE2_IP
export NODE2_RUNTIME_ENDPOINT=$NODE2_RUNTIME_ENDPOINT
export NODE2_TAINT=$NODE2_TAINT
EOF
fi

# --- 2. node IP on lo ---------------------------------------------------------
if ! ip -o addr show dev lo | grep -qw "inet $NODE_IP/32"; then
  ip addr add "$NODE_IP/32" dev lo
  touch "$STATE/markers/lo-ip"
fi

# --- 3. containerd + CNI config -------------------------------------------------
# write_containerd_config DIR STATE_DIR SOCKET CNI_CONF_DIR: a containerd of
# its own config file, root (images, snapshots) DIR/root under _output/local,
# state and socket under /run (node 1's at the standard /run/containerd: the
# kubelet and CRI clients expect it). restrict_oom_score_adj: these VMs lack
# CAP_SYS_RESOURCE. Registry hosts in DIR/certs.d (read at each pull): the
# local registry's name $REGISTRY_HOST is served over plain HTTP at
# $REGISTRY_ADDR; other registries as containerd's defaults (HTTPS, unreachable
# here).
write_containerd_config() {
  local dir="$1" state="$2" sock="$3" cni_conf="$4"
  mkdir -p "$dir" "$cni_conf"
  rm -rf "$dir/certs.d"
  mkdir -p "$dir/certs.d/$REGISTRY_HOST"
  cat > "$dir/certs.d/$REGISTRY_HOST/hosts.toml" <<EOF
# Written by hack/local-up.sh: the local cluster's registry (hack/local-up.d/05-registry.sh).
# containerd 1.6 wants a host entry (without one: "invalid \`host\` tree").
server = "http://$REGISTRY_ADDR"
[host."http://$REGISTRY_ADDR"]
  capabilities = ["pull", "resolve"]
EOF
  cat > "$dir/config.toml" <<EOF
version = 2
root = "$dir/root"
state = "$state"
disabled_plugins = ["io.containerd.internal.v1.tracing", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "$sock"

[plugins."io.containerd.internal.v1.opt"]
  path = "$dir/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "inplace.local/pause:1.0"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$dir/certs.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$cni_conf"
    max_conf_num = 1
EOF
}

# write_cni_config CONF_DIR NETWORK BRIDGE SUBNET IPAM_DIR: a plain bridge with
# host-local IPAM (allocations kept under _output/local); no masquerading, so
# no iptables rules: pod IPs are reachable from the host (and, through the
# host's route to each node's bridge, from the other node's pods) and pods
# reach the host (and kube-apiserver) at the node IP.
write_cni_config() {
  local conf="$1" network="$2" bridge="$3" subnet="$4" ipam="$5"
  mkdir -p "$conf" "$ipam"
  cat > "$conf/10-$network.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$network",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$bridge",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$subnet"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$ipam"
      }
    }
  ]
}
EOF
}

write_containerd_config "$STATE/containerd" /run/containerd "$CONTAINERD_SOCK" "$STATE/cni/net.d"
write_cni_config "$STATE/cni/net.d" "$CNI_NETWORK" "$CNI_BRIDGE" "$POD_SUBNET" "$STATE/cni/ipam"

# --- 4. kubelet config ----------------------------------------------------------
# write_kubelet_config FILE CERT PORT HEALTHZ_PORT RUNTIME_ENDPOINT POD_LOGS
#   CGROUP_ROOT [TAINT_KEY]:
# cgroup v1 host: failCgroupV1 false + cgroupfs; oomScoreAdj 0 (no
# CAP_SYS_RESOURCE); 1 s max crash-loop back-off so a container switched back
# to an image it just ran restarts at once; image GC effectively off (the
# images cannot be pulled again); eviction thresholds low (shared machine);
# no iptables chains (there is no kube-proxy); cluster DNS is the host's CoreDNS
# on node 1's IP (step 7); images on the node usable by every Pod
# (imagePullCredentialsVerificationPolicy NeverVerify, as kubelets before 1.35
# by default: with KubeletEnsureSecretPulledImages, on by default since 1.35,
# once the kubelet pulled registry.inplace.local:5000/app:v1,
# an image of the same ID as the imported inplace.local/app:v1, a Pod of
# inplace.local/app:v1 with imagePullPolicy Never was refused
# ErrImageNeverPull). CERT names the serving certificate in $PKI; the node
# registers with TAINT_KEY:NoSchedule when given.
write_kubelet_config() {
  local file="$1" cert="$2" port="$3" healthz="$4" runtime="$5" pod_logs="$6" cgroup_root="$7" taint="${8:-}"
  cat > "$file" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 0.0.0.0
port: $port
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $healthz
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: $PKI/ca.crt
authorization:
  mode: Webhook
tlsCertFile: $PKI/$cert.crt
tlsPrivateKeyFile: $PKI/$cert.key
containerRuntimeEndpoint: $runtime
cgroupDriver: cgroupfs
cgroupRoot: $cgroup_root
failCgroupV1: false
failSwapOn: false
oomScoreAdj: 0
makeIPTablesUtilChains: false
clusterDomain: cluster.local
clusterDNS: [$NODE_IP]
podLogsDir: $pod_logs
serializeImagePulls: false
imagePullCredentialsVerificationPolicy: NeverVerify
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
featureGates:
  KubeletCrashLoopBackOffMax: true
crashLoopBackOff:
  maxContainerRestartPeriod: 1s
EOF
  [[ -z "$taint" ]] || printf 'registerWithTaints:\n- key: %s\n  effect: NoSchedule\n' "$taint" >> "$file"
}
write_kubelet_config "$STATE/kubelet-config.yaml" kubelet-serving 10250 10248 "$CONTAINER_RUNTIME_ENDPOINT" \
  "$STATE/pod-logs" /

[[ -d /var/lib/kubelet ]] || touch "$STATE/markers/var-lib-kubelet"

# --- 5. start etcd and containerd ----------------------------------------------
# etcd: plain HTTP on loopback, short election timeout (ready in well under a
# second), no fsync (a throwaway cluster: every local-up starts empty);
# LOCAL_ETCD_FSYNC=1 keeps etcd's fsync, as a real cluster's etcd does, for
# benchmarks that compare writes through kube's etcd with writes through
# inplace-apiserver's embedded one, which always syncs (hack/bench-api.sh).
rm -rf "$STATE/etcd"
rm -rf "$KUBECACHEDIR"   # a new cluster: nothing of an earlier one's discovery
local_start etcd "$BIN/etcd" --name local --data-dir "$STATE/etcd" \
  --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
  --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
  --initial-cluster local=http://127.0.0.1:2380 --initial-cluster-state new \
  --heartbeat-interval 10 --election-timeout 100 $([[ "${LOCAL_ETCD_FSYNC:-}" == 1 ]] || echo --unsafe-no-fsync) --log-level warn
start_containerd

# Images into containerd (only the missing ones), and a clean node: no pod
# sandboxes of an earlier run (normally already removed by local-down).
hack/build-images.sh --import
"$BIN/minicri" -endpoint "$CONTAINER_RUNTIME_ENDPOINT" -timeout 60s rmp-all >&2

local_wait etcd 30 "etcd" http_ok 127.0.0.1 2379 /health '"health":"true"'

# --- 6. kube-apiserver ----------------------------------------------------------
AUDIT_ARGS=()
if [[ -n "${INPLACE_AUDIT_POLICY:-}" ]]; then
  [[ -r "$INPLACE_AUDIT_POLICY" ]] || die "INPLACE_AUDIT_POLICY: cannot read $INPLACE_AUDIT_POLICY"
  AUDIT_ARGS=(--audit-policy-file="$(realpath "$INPLACE_AUDIT_POLICY")" --audit-log-path="$LOGS/audit.log"
    --audit-log-format=json --audit-log-mode=batch)
fi
local_start kube-apiserver "$BIN/kube-apiserver" \
  --etcd-servers=http://127.0.0.1:2379 \
  --advertise-address="$NODE_IP" --bind-address=0.0.0.0 --secure-port=6443 \
  --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
  --client-ca-file="$PKI/ca.crt" \
  --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
  --allow-privileged=true \
  --service-cluster-ip-range="$SERVICE_CIDR" \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
  --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" \
  --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
  --kubelet-certificate-authority="$PKI/ca.crt" \
  --kubelet-preferred-address-types=InternalIP,Hostname \
  --requestheader-client-ca-file="$PKI/front-proxy-ca.crt" \
  --requestheader-allowed-names=front-proxy-client \
  --requestheader-username-headers=X-Remote-User \
  --requestheader-group-headers=X-Remote-Group \
  --requestheader-extra-headers-prefix=X-Remote-Extra- \
  --proxy-client-cert-file="$PKI/front-proxy-client.crt" \
  --proxy-client-key-file="$PKI/front-proxy-client.key" \
  --enable-aggregator-routing=true \
  "${AUDIT_ARGS[@]}" \
  --v=1
local_wait kube-apiserver 60 "kube-apiserver /readyz" https_ok 6443 /readyz

# --- 7. controller-manager, scheduler, kubelet ---------------------------------
# The controller-manager's default client rate limit (20 qps) makes its start
# (one ServiceAccount and token per controller) take ~5 s; node-monitor-period
# 1 s lifts the node's not-ready taint sooner.
local_start kube-controller-manager "$BIN/kube-controller-manager" \
  --kubeconfig="$PKI/controller-manager.kubeconfig" \
  --authentication-kubeconfig="$PKI/controller-manager.kubeconfig" \
  --authorization-kubeconfig="$PKI/controller-manager.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port=10257 --leader-elect=false \
  --use-service-account-credentials=true \
  --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
  --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
  --service-cluster-ip-range="$SERVICE_CIDR" --allocate-node-cidrs=false \
  --kube-api-qps=200 --kube-api-burst=400 --node-monitor-period=1s \
  --v=1
local_start kube-scheduler "$BIN/kube-scheduler" \
  --kubeconfig="$PKI/scheduler.kubeconfig" \
  --authentication-kubeconfig="$PKI/scheduler.kubeconfig" \
  --authorization-kubeconfig="$PKI/scheduler.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port=10259 --leader-elect=false \
  --v=1
touch "$STATE/markers/kubelet-cgroups"
local_start kubelet "$BIN/kubelet" \
  --config="$STATE/kubelet-config.yaml" \
  --kubeconfig="$PKI/kubelet.kubeconfig" \
  --root-dir="$STATE/kubelet" \
  --hostname-override="$NODE_NAME" --node-ip="$NODE_IP" \
  --v=2

local_wait kubelet 60 "kubelet /healthz" http_ok 127.0.0.1 10248 /healthz ok
local_wait kube-scheduler 60 "kube-scheduler /healthz" https_ok 10259 /healthz
local_wait kube-controller-manager 60 "kube-controller-manager /healthz" https_ok 10257 /healthz

# Node Ready and schedulable (the not-ready taint removed by the node
# lifecycle controller).
node_ready() {
  [[ "$(kubectl get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}/{.spec.taints}')" == "True/" ]]
}
local_wait kubelet 60 "node $NODE_NAME Ready, no taints" node_ready
# Pods need the default ServiceAccount (created by the controller-manager).
local_wait kube-controller-manager 60 "ServiceAccount default/default" kubectl -n default get serviceaccount default

# Cluster DNS: CoreDNS (hack/coredns) on the node IP, port 53, answering
# cluster.local from the API (Services, headless Services' Pods, reverse
# lookups), so Pods resolve names as in any cluster; the kubelet's clusterDNS
# points their resolv.conf at it. Other names are not answered (no upstream).
cat > "$STATE/Corefile" <<EOF
cluster.local:53 in-addr.arpa:53 ip6.arpa:53 {
  bind $NODE_IP
  errors
  ready 127.0.0.1:$DNS_READY_PORT
  cache 5
  kubernetes cluster.local in-addr.arpa ip6.arpa {
    kubeconfig $KUBECONFIG
  }
}
EOF
local_start coredns "$BIN/coredns" -conf "$STATE/Corefile"
local_wait coredns 30 "CoreDNS ready" http_ok 127.0.0.1 "$DNS_READY_PORT" /ready OK

# A default StorageClass: hack/kube/hostpath provisions a hostPath PV (a directory
# under $STATE/volumes) for each PVC of it and deletes it with its claim.
local_start hostpath-provisioner "$BIN/hostpath" -kubeconfig "$KUBECONFIG" -root "$STATE/volumes"
local_wait hostpath-provisioner 30 "StorageClass inplace-hostpath" kubectl get storageclass inplace-hostpath

# --- 7b. the second node (INPLACE_NODES=2) --------------------------------------
# A second kubelet and containerd on this machine: node IP $NODE2_IP (a /32 on
# lo, like node 1's), bridge $NODE2_CNI_BRIDGE with pod subnet
# $NODE2_POD_SUBNET, containerd state and socket under /run/inplace-node2, its
# own images, kubelet ports $NODE2_KUBELET_PORT (API) and
# $NODE2_KUBELET_HEALTHZ_PORT (healthz), kubelet root dir and pod logs under
# $NODE2_STATE, and its own cgroup root /$NODE2_CGROUP_ROOT in every cgroup v1
# hierarchy (two kubelets on one "/kubepods" would remove each other's pods).
# It shares with node 1 only what the kubelet fixes: the device plugin
# directory (no device plugins here) and /var/log/containers (file names are
# unique per container). Registered with the taint $NODE2_TAINT:NoSchedule.
start_node2() {
  if ! ip -o addr show dev lo | grep -qw "inet $NODE2_IP/32"; then
    ip addr add "$NODE2_IP/32" dev lo
    touch "$STATE/markers/lo-ip2"
  fi
  write_containerd_config "$NODE2_STATE/containerd" "$(dirname "$NODE2_CONTAINERD_SOCK")" \
    "$NODE2_CONTAINERD_SOCK" "$NODE2_STATE/cni/net.d"
  write_cni_config "$NODE2_STATE/cni/net.d" "$NODE2_CNI_NETWORK" "$NODE2_CNI_BRIDGE" \
    "$NODE2_POD_SUBNET" "$NODE2_STATE/cni/ipam"
  mkdir -p "$NODE2_STATE/pod-logs"

  # The cgroup root must exist before the kubelet starts; a v1 cpuset cgroup
  # starts with no CPUs and memory nodes, so it gets its parent's.
  local hier
  touch "$STATE/markers/node2-cgroups"
  for hier in /sys/fs/cgroup/*/; do
    [[ "$hier" == */unified/ || -L "${hier%/}" ]] && continue
    mkdir -p "$hier$NODE2_CGROUP_ROOT"
    if [[ -f "${hier}cpuset.cpus" ]]; then
      cat "${hier}cpuset.cpus" > "$hier$NODE2_CGROUP_ROOT/cpuset.cpus"
      cat "${hier}cpuset.mems" > "$hier$NODE2_CGROUP_ROOT/cpuset.mems"
    fi
  done
  write_kubelet_config "$NODE2_STATE/kubelet-config.yaml" node2-kubelet-serving "$NODE2_KUBELET_PORT" \
    "$NODE2_KUBELET_HEALTHZ_PORT" "$NODE2_RUNTIME_ENDPOINT" "$NODE2_STATE/pod-logs" "/$NODE2_CGROUP_ROOT" "$NODE2_TAINT"

  start_containerd node2-containerd "$NODE2_STATE/containerd/config.toml" "$NODE2_CONTAINERD_SOCK"
  CONTAINERD_ADDRESS="$NODE2_CONTAINERD_SOCK" hack/build-images.sh --import
  "$BIN/minicri" -endpoint "$NODE2_RUNTIME_ENDPOINT" -timeout 60s rmp-all >&2

  local_start node2-kubelet "$BIN/kubelet" \
    --config="$NODE2_STATE/kubelet-config.yaml" \
    --kubeconfig="$PKI/node2-kubelet.kubeconfig" \
    --root-dir="$NODE2_STATE/kubelet" \
    --hostname-override="$NODE2_NAME" --node-ip="$NODE2_IP" \
    --v=2
  local_wait node2-kubelet 60 "node 2 kubelet /healthz" http_ok 127.0.0.1 "$NODE2_KUBELET_HEALTHZ_PORT" /healthz ok
  node2_ready() {
    [[ "$(kubectl get node "$NODE2_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}/{.spec.taints[*].key}')" == "True/$NODE2_TAINT" ]]
  }
  local_wait node2-kubelet 60 "node $NODE2_NAME Ready, tainted $NODE2_TAINT only" node2_ready
}
if node2_wanted; then start_node2; fi

# --- 8. hooks -------------------------------------------------------------------
for hook in "${LOCAL_UP_HOOKS:-hack/local-up.d}"/*.sh; do
  [[ -e "$hook" ]] || continue
  log "running hook $hook"
  # shellcheck disable=SC1090
  source "$hook"
done

log "cluster ready in $(awk -v a="$start_time" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')s"
echo "export KUBECONFIG=$KUBECONFIG"
