#!/usr/bin/env bash
# Installs inplace into the cluster of $KUBECONFIG from a kustomize base
# (artifacts/deploy by default), the way users install it, with a serving
# certificate of its own:
#
#   hack/deploy.sh --image registry.example.com/inplace:v0.1.0
#   hack/deploy.sh --image "$(hack/build-image.sh --import)"      # a local node
#   hack/deploy.sh --image REF --base artifacts/deploy --patches my-patches.yaml
#   hack/deploy.sh --image REF --base artifacts/deploy/ha [--etcd-image REF]
#
# 1. Certificates. inplace-apiserver serves TLS under the name
#    inplace-apiserver.inplace-system.svc; kube-apiserver checks it against the
#    caBundle of the APIService and of the Pod webhook. Unless the Secret
#    inplace-system/inplace-apiserver-tls already holds a certificate that is
#    valid for that name for 30 more days, this script makes a CA of the
#    installation (kept in $DEPLOY_DIR/pki, default _output/deploy/pki: keep it
#    to renew) and a serving certificate it signs, and stores certificate, key
#    and CA in that Secret (type kubernetes.io/tls plus ca.crt). cert-manager
#    users skip this: see artifacts/deploy/cert-manager.
# 2. An overlay in $DEPLOY_DIR/overlay: the base, the image (kustomize images:,
#    entry for inplace.local/inplace; --etcd-image: for the ha base's
#    registry.k8s.io/etcd), the CA in both caBundles, and the patches of
#    --patches (a YAML list of kustomize patches, e.g. what a cluster without
#    kube-proxy needs).
# 3. kubectl apply --server-side -k of the overlay, then waits until etcd (the ha
#    base's StatefulSet), inplace-apiserver, inplace-controller and
#    inplace-daemon are rolled out,
#    the APIServices v1alpha1 and v1beta1 of apps.kruise.io and policy.kruise.io are Available and
#    `kubectl get clonesets.apps.kruise.io -A` answers through kube-apiserver.
#
# Idempotent: a second run with the same arguments changes nothing. Needs
# kubectl (or $KUBECTL) and openssl.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"

KUBECTL="${KUBECTL:-kubectl}"
DEPLOY_DIR="${DEPLOY_DIR:-$ROOT/_output/deploy}"
NAMESPACE=inplace-system
SERVICE=inplace-apiserver
SECRET=inplace-apiserver-tls
APISERVICES=(v1alpha1.apps.kruise.io v1beta1.apps.kruise.io v1alpha1.policy.kruise.io v1beta1.policy.kruise.io)
WEBHOOK=inplace-pod-webhook
BUDGET_WEBHOOK=inplace-pod-budget-webhook
PROTECTION_WEBHOOK=inplace-deletion-protection-webhook
FIELD_MANAGER=inplace-deploy
TIMEOUT="${DEPLOY_TIMEOUT:-180}"

IMAGE="" ETCD_IMAGE="" BASE="artifacts/deploy" PATCHES=""
while (($#)); do
  case "$1" in
    --image) IMAGE="$2"; shift 2 ;;
    --etcd-image) ETCD_IMAGE="$2"; shift 2 ;;
    --base) BASE="$2"; shift 2 ;;
    --patches) PATCHES="$2"; shift 2 ;;
    *) echo "usage: $0 --image REF [--etcd-image REF] [--base DIR] [--patches FILE]" >&2; exit 2 ;;
  esac
done
[[ -n "$IMAGE" ]] || { echo "deploy: --image is required (hack/build-image.sh builds one)" >&2; exit 2; }
[[ -f "$BASE/kustomization.yaml" ]] || { echo "deploy: $BASE has no kustomization.yaml" >&2; exit 2; }
[[ -z "$PATCHES" || -f "$PATCHES" ]] || { echo "deploy: --patches $PATCHES: no such file" >&2; exit 2; }

log() { echo "[$(date +%H:%M:%S)] deploy: $*" >&2; }
k() { "$KUBECTL" "$@"; }

# --- 1. certificates ------------------------------------------------------------
PKI="$DEPLOY_DIR/pki"
mkdir -p "$PKI"
chmod 700 "$PKI"
DNS_NAME="$SERVICE.$NAMESPACE.svc"

# secret_cert_ok: the Secret holds a certificate for $DNS_NAME, signed by the CA
# it carries, valid for 30 more days; its files are then in $PKI/current.
secret_cert_ok() {
  local dir="$PKI/current"
  rm -rf "$dir" && mkdir -p "$dir"
  local key
  for key in tls.crt tls.key ca.crt; do
    k -n "$NAMESPACE" get secret "$SECRET" -o "jsonpath={.data.${key//./\\.}}" 2>/dev/null |
      base64 -d > "$dir/$key" 2>/dev/null || return 1
    [[ -s "$dir/$key" ]] || return 1
  done
  openssl verify -CAfile "$dir/ca.crt" "$dir/tls.crt" >/dev/null 2>&1 &&
    openssl x509 -in "$dir/tls.crt" -noout -checkend $((30 * 24 * 3600)) >/dev/null &&
    openssl x509 -in "$dir/tls.crt" -noout -ext subjectAltName 2>/dev/null | grep -q "DNS:$DNS_NAME"
}

k get namespace "$NAMESPACE" >/dev/null 2>&1 || k create namespace "$NAMESPACE" >/dev/null
if secret_cert_ok; then
  log "Secret $NAMESPACE/$SECRET holds a valid certificate for $DNS_NAME: kept"
else
  if [[ ! -f "$PKI/ca.key" ]] || ! openssl x509 -in "$PKI/ca.crt" -noout -checkend $((60 * 24 * 3600)) >/dev/null 2>&1; then
    log "making the installation's CA in $PKI"
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$PKI/ca.key" 2>/dev/null
    openssl req -x509 -new -key "$PKI/ca.key" -subj "/CN=inplace-ca" -days 3650 \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
      -out "$PKI/ca.crt" 2>/dev/null
  fi
  log "signing a serving certificate for $DNS_NAME"
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$PKI/tls.key" 2>/dev/null
  printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
    "extendedKeyUsage=serverAuth" "subjectAltName=DNS:$DNS_NAME,DNS:$DNS_NAME.cluster.local" > "$PKI/tls.ext"
  openssl req -new -key "$PKI/tls.key" -subj "/CN=$DNS_NAME" |
    openssl x509 -req -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -set_serial "0x$(openssl rand -hex 16)" \
      -days 825 -extfile "$PKI/tls.ext" -out "$PKI/tls.crt" 2>/dev/null
  k -n "$NAMESPACE" create secret generic "$SECRET" --type=kubernetes.io/tls \
    --from-file=tls.crt="$PKI/tls.crt" --from-file=tls.key="$PKI/tls.key" --from-file=ca.crt="$PKI/ca.crt" \
    --dry-run=client -o yaml |
    k apply --server-side --force-conflicts --field-manager="$FIELD_MANAGER" -f - >/dev/null
  secret_cert_ok || { echo "deploy: the Secret written does not verify" >&2; exit 1; }
fi
CA_BUNDLE="$(base64 -w0 "$PKI/current/ca.crt")"

# --- 2. overlay -------------------------------------------------------------------
OVERLAY="$DEPLOY_DIR/overlay"
rm -rf "$OVERLAY" && mkdir -p "$OVERLAY"
# image_entry NAME REF: the kustomize images: entry that replaces image NAME by REF
# (registry/name:tag or registry/name@digest).
image_entry() {
  local name="${2%@*}" digest="" tag=""
  [[ "$2" == *@* ]] && digest="${2#*@}"
  if [[ -z "$digest" && "${name##*/}" == *:* ]]; then
    tag="${name##*:}"
    name="${name%:*}"
  fi
  echo "- name: $1"
  echo "  newName: $name"
  [[ -z "$tag" ]] || echo "  newTag: \"$tag\""
  [[ -z "$digest" ]] || echo "  digest: $digest"
}
{
  cat <<EOF
# Generated by hack/deploy.sh: $BASE with this installation's image and CA.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- $(realpath --relative-to="$OVERLAY" "$ROOT/$BASE")
images:
EOF
  image_entry inplace.local/inplace "$IMAGE"
  [[ -z "$ETCD_IMAGE" ]] || image_entry registry.k8s.io/etcd "$ETCD_IMAGE"
  cat <<EOF
patches:
- target: {kind: APIService}
  patch: '[{"op": "add", "path": "/spec/caBundle", "value": "$CA_BUNDLE"}]'
- target: {kind: MutatingWebhookConfiguration, name: $WEBHOOK}
  patch: '[{"op": "add", "path": "/webhooks/0/clientConfig/caBundle", "value": "$CA_BUNDLE"}]'
- target: {kind: ValidatingWebhookConfiguration, name: $BUDGET_WEBHOOK}
  patch: '[{"op": "add", "path": "/webhooks/0/clientConfig/caBundle", "value": "$CA_BUNDLE"}, {"op": "add", "path": "/webhooks/1/clientConfig/caBundle", "value": "$CA_BUNDLE"}, {"op": "add", "path": "/webhooks/2/clientConfig/caBundle", "value": "$CA_BUNDLE"}]'
- target: {kind: ValidatingWebhookConfiguration, name: $PROTECTION_WEBHOOK}
  patch: '[{"op": "add", "path": "/webhooks/0/clientConfig/caBundle", "value": "$CA_BUNDLE"}]'
EOF
  [[ -z "$PATCHES" ]] || cat "$PATCHES"
} > "$OVERLAY/kustomization.yaml"

# --- 3. apply and wait -------------------------------------------------------------
log "applying $BASE (image $IMAGE)"
k apply --server-side --force-conflicts --field-manager="$FIELD_MANAGER" -k "$OVERLAY" >/dev/null
workloads=()
if k -n "$NAMESPACE" get statefulset inplace-etcd >/dev/null 2>&1; then
  workloads+=(statefulset/inplace-etcd)
fi
for w in "${workloads[@]}" deployment/inplace-apiserver deployment/inplace-controller daemonset/inplace-daemon; do
  k -n "$NAMESPACE" rollout status "$w" --timeout="${TIMEOUT}s" >/dev/null ||
    { k -n "$NAMESPACE" get pods -o wide >&2; echo "deploy: $w did not roll out in ${TIMEOUT}s" >&2; exit 1; }
done
log "waiting for the APIServices ${APISERVICES[*]} to be Available"
for a in "${APISERVICES[@]}"; do
  k wait --for=condition=Available "apiservice/$a" --timeout="${TIMEOUT}s" >/dev/null
done
deadline=$((SECONDS + TIMEOUT))
until k get clonesets.apps.kruise.io -A >/dev/null 2>&1; do
  ((SECONDS < deadline)) || { echo "deploy: kubectl get clonesets.apps.kruise.io -A still fails after ${TIMEOUT}s" >&2; exit 1; }
  sleep 1
done
log "inplace is installed: $(k -n "$NAMESPACE" get pods --no-headers | wc -l) Pods in $NAMESPACE"
