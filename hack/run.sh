#!/usr/bin/env bash
# `make run`: a real single-node Kubernetes cluster on this machine with inplace
# aggregated into it, then a few commands to try. Root is required.
#
# hack/local-up.sh starts the cluster (from empty; cached binaries and images:
# a few seconds) and then its hooks, hack/local-up.d/*.sh, start every inplace
# program that exists: inplace-apiserver (registered as the APIService
# v1alpha1 and v1beta1.apps.kruise.io), inplace-controller, inplace-daemon. With
# INPLACE_IN_CLUSTER=1 (make run INPLACE_IN_CLUSTER=1) they run in the cluster
# instead, installed from artifacts/deploy by hack/deploy.sh with the image
# hack/build-image.sh builds; INPLACE_IN_CLUSTER=ha installs artifacts/deploy/ha
# (a 3-member etcd StatefulSet, two inplace-apiservers). Everything keeps running after this script returns;
# `make cluster-down` (hack/local-down.sh) stops all of it.
set -euo pipefail
cd "$(dirname "$0")/.."

# The hooks start _output/bin/inplace-NAME for every cmd/NAME: build them up to
# date (a second or so when nothing changed). cmd/kubectl-* is the kubectl plugin, no
# program to start (make build or make install-plugin builds it).
for dir in cmd/*/; do
  name="$(basename "$dir")"
  [[ "$name" == kubectl-* ]] && continue
  go build -o "_output/bin/inplace-$name" "./cmd/$name"
done

hack/local-up.sh

# shellcheck source=/dev/null
source _output/local/env
if [[ -f _output/local/inplace/in-cluster ]]; then
  cat <<EOF

inplace is running in the local cluster, installed from artifacts/deploy$([[ "$(cat _output/local/inplace/in-cluster)" == ha ]] && echo /ha) (hack/deploy.sh):
$(kubectl -n inplace-system get pods 2>&1 | sed 's/^/  /')
  logs: kubectl -n inplace-system logs deploy/inplace-apiserver (or deploy/inplace-controller, ds/inplace-daemon)
  stop: make cluster-down  (or hack/local-down.sh)
EOF
else
  running=()
  for f in _output/local/pids/inplace-*.pid; do
    [[ -e "$f" ]] && running+=("$(basename "$f" .pid)")
  done
  cat <<EOF

inplace is running on the local cluster: ${running[*]:-(no inplace program)}
  logs: _output/local/logs/    stop: make cluster-down  (or hack/local-down.sh)
EOF
fi

cat <<EOF

image registry: $INPLACE_REGISTRY (app:v1|v2|v3|bad, pause:1.0, remote/app:v1|v2, slow/app:v1|v2; for Pods that pull)
  private/app:v1 asks basic auth $INPLACE_REGISTRY_PRIVATE_AUTH (for pull secrets)
  push your own: _output/bin/inplace-registry push IMAGE.tar $INPLACE_REGISTRY/NAME:TAG

export KUBECONFIG=$KUBECONFIG PATH=$PWD/_output/bin:\$PATH
Try this:
  kubectl apply --server-side -f artifacts/examples/cloneset.yaml && kubectl get clonesets
  kubectl apply -f artifacts/examples/pod.yaml && kubectl wait --for=condition=Ready pod/demo && kubectl logs demo
  kubectl create --raw /apis/apps.kruise.io/v1alpha1/namespaces/default/pods/demo/inplaceupdate -f artifacts/examples/inplaceupdate.json
EOF
