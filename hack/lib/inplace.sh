# shellcheck shell=bash
# Helpers of the inplace hooks in hack/local-up.d/ (sourced after hack/lib/local.sh:
# $PKI, $BIN, $STATE, log, die are set).
#
# The inplace programs run on the host as ServiceAccounts of artifacts/deploy: each has a
# client certificate, signed by the cluster CA, whose user name is the ServiceAccount's
# (CN=system:serviceaccount:inplace-system:NAME, O=system:serviceaccounts,
# O=system:serviceaccounts:inplace-system). kube-apiserver's RBAC matches ServiceAccount
# subjects by user name, so the bindings of artifacts/deploy apply to them unchanged.

# shellcheck disable=SC2034 # used by the hooks
INPLACE_NAMESPACE=inplace-system
INPLACE_STATE="$STATE/inplace"
INPLACE_FIELD_MANAGER=inplace-local-up

# inplace_hook_mode HOOK_PATH: "fresh" when sourced by hack/local-up.sh (a new cluster),
# "restart" when the hook runs on its own against the running cluster.
inplace_hook_mode() {
  if [[ "$1" == "$0" ]]; then echo restart; else echo fresh; fi
}

# inplace_binary NAME: path of _output/bin/inplace-NAME, built from cmd/NAME when missing
# (hack/run.sh and the e2e harness build it up to date).
inplace_binary() {
  local bin="$BIN/inplace-$1"
  if [[ ! -x "$bin" ]]; then
    log "inplace: $bin missing, building it"
    go build -o "$bin" "./cmd/$1" >&2
  fi
  echo "$bin"
}

# inplace_cert NAME SUBJECT EXT_KEY_USAGE [SUBJECT_ALT_NAMES]: $PKI/NAME.{crt,key} signed by
# the cluster CA, kept while it still matches the CA and these settings.
inplace_cert() {
  local name="$1" subj="$2" eku="$3" san="${4:-}" settings
  settings="$subj|$eku|$san"
  if [[ -f "$PKI/$name.key" && -f "$PKI/$name.crt" && "$(cat "$PKI/$name.settings" 2>/dev/null)" == "$settings" ]] &&
    openssl verify -CAfile "$PKI/ca.crt" "$PKI/$name.crt" >/dev/null 2>&1; then
    return 0
  fi
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$PKI/$name.key" 2>/dev/null
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$eku"
    [[ -z "$san" ]] || echo "subjectAltName=$san"
  } > "$PKI/$name.ext"
  openssl req -new -key "$PKI/$name.key" -subj "$subj" |
    openssl x509 -req -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -set_serial "0x$(openssl rand -hex 16)" \
      -days 3650 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null
  rm -f "$PKI/$name.ext"
  echo "$settings" > "$PKI/$name.settings"
  log "inplace: wrote certificate $PKI/$name.crt ($subj)"
}

# inplace_sa_kubeconfig SERVICEACCOUNT: writes $INPLACE_STATE/SERVICEACCOUNT.kubeconfig, a
# kubeconfig authenticating as inplace-system/SERVICEACCOUNT, and prints its path.
inplace_sa_kubeconfig() {
  local sa="$1" kubeconfig="$INPLACE_STATE/$1.kubeconfig"
  mkdir -p "$INPLACE_STATE"
  inplace_cert "$sa-client" \
    "/O=system:serviceaccounts/O=system:serviceaccounts:$INPLACE_NAMESPACE/CN=system:serviceaccount:$INPLACE_NAMESPACE:$sa" \
    clientAuth
  write_kubeconfig "$kubeconfig" "$sa-client"
  echo "$kubeconfig"
}

# inplace_start_host_program NAME[@INSTANCE] MODE READY_WHAT READY_FN [FLAG...]: (re)starts the
# host process _output/bin/inplace-NAME as the ServiceAccount inplace-system/inplace-NAME
# (--kubeconfig) with the flags and --v=1, then waits until READY_FN succeeds. The process is
# recorded as inplace-NAME, or inplace-NAME-INSTANCE for a second one of the same program (the
# second node's daemon). MODE "fresh" (hook sourced by local-up.sh) has nothing to stop first.
# Skipped when the tree has no cmd/NAME.
inplace_start_host_program() {
  local name="${1%@*}" process="inplace-${1/@/-}" mode="$2" what="$3" ready="$4" bin kubeconfig
  shift 4
  if [[ ! -d "cmd/$name" ]]; then
    log "inplace: no cmd/$name in this tree, $process not started"
    return 0
  fi
  [[ "$mode" == fresh ]] || local_stop "$process"
  bin="$(inplace_binary "$name")"
  kubeconfig="$(inplace_sa_kubeconfig "inplace-$name")"
  local_start "$process" "$bin" --kubeconfig="$kubeconfig" "$@" --v=1
  local_wait "$process" 60 "$what" "$ready"
}

# --- in-cluster mode (INPLACE_IN_CLUSTER=1 or =ha hack/local-up.sh) ----------------------------
# The programs run in the cluster from artifacts/deploy, installed by hack/deploy.sh as a user
# installs them: inplace's image built and imported by hack/build-image.sh, its own CA and
# serving certificate, and
#   - INPLACE_IN_CLUSTER=1 (or base): the base, the apiserver's embedded etcd on a PVC of the
#     local StorageClass;
#   - INPLACE_IN_CLUSTER=ha: artifacts/deploy/ha, a 3-member etcd StatefulSet (the etcd of
#     hack/build-kube.sh as image inplace.local/etcd, in place of registry.k8s.io/etcd; the
#     members find each other through the cluster DNS) and two apiservers.
# The shape is recorded in $INPLACE_STATE/in-cluster ("base" or "ha"), so a hook run on its own
# later knows it.

# inplace_in_cluster_shape: base or ha from $INPLACE_IN_CLUSTER; empty for host processes.
inplace_in_cluster_shape() {
  case "${INPLACE_IN_CLUSTER:-}" in
    "" | 0) ;;
    1 | base) echo base ;;
    ha) echo ha ;;
    *) die "INPLACE_IN_CLUSTER=$INPLACE_IN_CLUSTER: want 1 (or base), ha, or nothing (host processes)" ;;
  esac
}

# inplace_in_cluster: the programs run in the cluster (this local-up's choice).
inplace_in_cluster() {
  [[ -f "$INPLACE_STATE/in-cluster" ]]
}

# inplace_local_patches FILE: what this cluster needs beyond the base. It has no kube-proxy, so
# no Service IP answers: the programs reach kube-apiserver at the node IP, where the host's
# kube-apiserver listens (client-go's in-cluster config reads KUBERNETES_SERVICE_HOST/PORT; a
# container's own env wins over the kubelet's service variables). Extra flags, as for the host
# programs: $INPLACE_CONTROLLER_ARGS, $INPLACE_DAEMON_FLAGS and $INPLACE_APISERVER_FLAGS (split
# on spaces).
inplace_local_patches() {
  local workload kind name container flags flag
  for workload in Deployment/inplace-apiserver/apiserver Deployment/inplace-controller/controller \
    DaemonSet/inplace-daemon/daemon; do
    IFS=/ read -r kind name container <<<"$workload"
    cat <<EOF
- patch: |-
    apiVersion: apps/v1
    kind: $kind
    metadata: {name: $name, namespace: $INPLACE_NAMESPACE}
    spec:
      template:
        spec:
          containers:
          - name: $container
            env:
            - {name: KUBERNETES_SERVICE_HOST, value: "$NODE_IP"}
            - {name: KUBERNETES_SERVICE_PORT, value: "6443"}
EOF
    case "$container" in
      controller) flags="${INPLACE_CONTROLLER_ARGS:-}" ;;
      daemon) flags="${INPLACE_DAEMON_FLAGS:-}" ;;
      apiserver) flags="${INPLACE_APISERVER_FLAGS:-}" ;;
      *) flags="" ;;
    esac
    [[ -n "$flags" ]] || continue
    echo "- target: {kind: $kind, name: $name}"
    echo "  patch: |-"
    for flag in $flags; do # word splitting wanted: a list of flags
      echo "    - {op: add, path: /spec/template/spec/containers/0/args/-, value: \"$flag\"}"
    done
  done > "$1"
}

# inplace_deploy_in_cluster MODE [WORKLOAD]: builds and imports the image, installs (or
# updates) inplace with hack/deploy.sh, in the shape of $INPLACE_IN_CLUSTER (MODE "fresh") or
# the recorded one. MODE "restart" (a hook run on its own) then restarts WORKLOAD (default
# deployment/inplace-apiserver) unless the install already rolled it out (new image or flags),
# and waits until it is ready again.
inplace_deploy_in_cluster() {
  local mode="$1" workload="${2:-deployment/inplace-apiserver}" ref shape before=""
  local args=()
  mkdir -p "$INPLACE_STATE"
  if [[ "$mode" == fresh ]]; then
    shape="$(inplace_in_cluster_shape)"
    echo "$shape" > "$INPLACE_STATE/in-cluster"
  else
    shape="$(cat "$INPLACE_STATE/in-cluster")"
    before="$(kubectl -n "$INPLACE_NAMESPACE" get "$workload" -o 'jsonpath={.metadata.generation}')"
  fi
  ref="$(hack/build-image.sh --import)"
  if [[ "$shape" == ha ]]; then
    args+=(--base artifacts/deploy/ha --etcd-image "$(hack/build-image.sh --import etcd)")
  fi
  inplace_local_patches "$INPLACE_STATE/local-patches.yaml"
  KUBECTL="$BIN/kubectl" DEPLOY_DIR="$INPLACE_STATE/deploy-in-cluster" \
    hack/deploy.sh --image "$ref" "${args[@]}" --patches "$INPLACE_STATE/local-patches.yaml" >&2
  [[ "$mode" == restart ]] || return 0
  if [[ "$(kubectl -n "$INPLACE_NAMESPACE" get "$workload" -o 'jsonpath={.metadata.generation}')" == "$before" ]]; then
    kubectl -n "$INPLACE_NAMESPACE" rollout restart "$workload" >/dev/null
  fi
  kubectl -n "$INPLACE_NAMESPACE" rollout status "$workload" --timeout=180s >/dev/null
  if [[ "$workload" == deployment/inplace-apiserver ]]; then
    kubectl wait --for=condition=Available apiservice/v1alpha1.apps.kruise.io apiservice/v1beta1.apps.kruise.io \
      apiservice/v1alpha1.policy.kruise.io apiservice/v1beta1.policy.kruise.io --timeout=120s >/dev/null
  fi
  log "inplace: restarted $workload in the cluster"
}
