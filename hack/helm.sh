#!/usr/bin/env bash
# Prints the path of a helm binary (helm.sh/helm/v3), built once from the Go module proxy at the
# pinned version into _output/tools/helm-<version>/helm, as hack/staticcheck.sh builds
# staticcheck: the directory carries the version, so a bump rebuilds it, and a second run only
# prints the path. `go install module@version` checks the download against the checksum database
# and needs no entry in go.mod.
#
#   "$(hack/helm.sh)" template inplace charts/inplace
#
# $HELM_VERSION overrides the pin (any v3 release the proxy serves).
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

HELM_VERSION=${HELM_VERSION:-v3.22.0}
dir=$PWD/_output/tools/helm-${HELM_VERSION}
bin=${dir}/helm
if [[ ! -x "${bin}" ]]; then
    tmp=$(mktemp -d)
    trap 'rm -rf "${tmp}"' EXIT
    echo "building helm ${HELM_VERSION} into ${bin}" >&2
    # The Kubernetes version helm assumes without a cluster (helm template, helm lint: the
    # .Capabilities.KubeVersion a chart's kubeVersion is checked against) is linked in, as helm's
    # own Makefile does, from the k8s.io/client-go its go.mod requires (v0.N.x: Kubernetes 1.N);
    # without it a go-installed helm says 1.20. The version it prints is linked in the same way.
    gomod=$(go mod download -json "helm.sh/helm/v3@${HELM_VERSION}" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
    k8s_minor=$(sed -n 's#^\s*k8s.io/client-go v0\.\([0-9]*\)\..*#\1#p' "${gomod}")
    [[ -n "${k8s_minor}" ]] || { echo "helm.sh: no k8s.io/client-go in ${gomod}" >&2; exit 1; }
    pkg=helm.sh/helm/v3
    ldflags="-X ${pkg}/internal/version.version=${HELM_VERSION}"
    for p in pkg/chartutil pkg/lint/rules; do
        ldflags+=" -X ${pkg}/${p}.k8sVersionMajor=1 -X ${pkg}/${p}.k8sVersionMinor=${k8s_minor}"
    done
    # CGO off: a static binary, as helm's release builds are.
    CGO_ENABLED=0 GOBIN=${tmp} go install -ldflags "${ldflags}" "${pkg}/cmd/helm@${HELM_VERSION}" >&2
    mkdir -p "${dir}"
    mv "${tmp}/helm" "${bin}"
fi
echo "${bin}"
