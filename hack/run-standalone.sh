#!/usr/bin/env bash
# Runs inplace-apiserver alone: loopback, self-signed certificate, no authentication, embedded etcd
# in _output/standalone. Ctrl-C stops it cleanly (the embedded etcd is flushed and closed).
#
#   hack/run-standalone.sh [more inplace-apiserver flags]
#
# PORT (8443) and DATA_DIR (_output/standalone) move it; the kubeconfig is DATA_DIR/kubeconfig.
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PORT=${PORT:-8443}
DATA_DIR=${DATA_DIR:-_output/standalone}
mkdir -p "${DATA_DIR}"
KUBECONFIG_FILE="${DATA_DIR}/kubeconfig"
# Standalone mode ignores credentials; the token only stops kubectl from prompting for a user.
cat > "${KUBECONFIG_FILE}" <<KC
apiVersion: v1
kind: Config
clusters: [{name: inplace, cluster: {server: "https://127.0.0.1:${PORT}", insecure-skip-tls-verify: true}}]
users: [{name: standalone, user: {token: standalone}}]
contexts: [{name: inplace, context: {cluster: inplace, user: standalone, namespace: default}}]
current-context: inplace
KC
cat <<MSG
inplace-apiserver (standalone) on https://127.0.0.1:${PORT}, data in ${DATA_DIR}. Try:
  export KUBECONFIG=$PWD/${KUBECONFIG_FILE}
  kubectl apply -f artifacts/examples/cloneset.yaml && kubectl get clonesets
  kubectl scale clone/sample --replicas=3 && kubectl explain cloneset.spec.updateStrategy
MSG
exec _output/bin/inplace-apiserver --mode=standalone --data-dir="${DATA_DIR}" --secure-port="${PORT}" "$@"
