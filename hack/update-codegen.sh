#!/usr/bin/env bash
# Regenerates everything under pkg/generated and the zz_generated.* files of pkg/apis with the
# Kubernetes code generators pinned in go.mod. Downloads what it reads first (a fresh machine has an
# empty module cache, and `go list -m -f {{.Dir}}` prints nothing for a module not downloaded);
# works offline once the module cache is warm.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"

THIS_PKG=github.com/inplace-dev/inplace
BOILERPLATE="${ROOT}/hack/boilerplate.go.txt"
# module_dir MODULE: the module's directory in the module cache, downloading it first.
module_dir() {
    go mod download "$1"
    local dir
    dir=$(go list -m -f '{{.Dir}}' "$1")
    if [[ -z "${dir}" || ! -d "${dir}" ]]; then
        echo "update-codegen: module $1 has no directory in the module cache after go mod download" >&2
        return 1
    fi
    echo "${dir}"
}
CODEGEN_PKG=$(module_dir k8s.io/code-generator)
# kube_codegen.sh go-installs its generators; keep them inside the project, not in ~/go/bin.
export GOBIN="${ROOT}/_output/tools"
mkdir -p "${GOBIN}"

source "${CODEGEN_PKG}/kube_codegen.sh"

# Protobuf: go-to-protobuf writes generated.proto and generated.pb.go for the versioned kinds (and
# the pub types they hold) and adds protobuf struct tags to their Go types. It runs protoc (Debian's
# protobuf-compiler, installed here when missing) with the gogo plugin pinned in go.mod, and wants
# the packages laid out by import path under one directory, as in a GOPATH: a temporary tree of
# symbolic links to this repository and to the modules whose .proto files ours import. Those
# modules are inputs only (the "-" prefix): nothing is written into the module cache.
if ! command -v protoc >/dev/null 2>&1; then
    "${ROOT}/hack/install-deps.sh" protobuf-compiler
fi
go install k8s.io/code-generator/cmd/go-to-protobuf \
    k8s.io/code-generator/cmd/go-to-protobuf/protoc-gen-gogo \
    golang.org/x/tools/cmd/goimports
proto_tree=$(mktemp -d)
trap 'rm -rf "${proto_tree}"' EXIT
mkdir -p "${proto_tree}/github.com/inplace-dev" "${proto_tree}/k8s.io" "${proto_tree}/github.com/gogo"
ln -s "${ROOT}" "${proto_tree}/${THIS_PKG}"
ln -s "$(module_dir k8s.io/api)" "${proto_tree}/k8s.io/api"
ln -s "$(module_dir k8s.io/apimachinery)" "${proto_tree}/k8s.io/apimachinery"
gogo_dir=$(module_dir github.com/gogo/protobuf)
ln -s "${gogo_dir}" "${proto_tree}/github.com/gogo/protobuf"
proto_inputs=(
    k8s.io/apimachinery/pkg/util/intstr
    k8s.io/apimachinery/pkg/api/resource
    k8s.io/apimachinery/pkg/runtime/schema
    k8s.io/apimachinery/pkg/runtime
    k8s.io/apimachinery/pkg/apis/meta/v1
    k8s.io/api/core/v1
    k8s.io/api/apps/v1
    k8s.io/api/autoscaling/v1
)
PATH="${GOBIN}:${PATH}" go-to-protobuf \
    --go-header-file "${BOILERPLATE}" \
    --output-dir "${proto_tree}" \
    --proto-import "${gogo_dir}/protobuf" \
    --apimachinery-packages "$(printf -- '-%s,' "${proto_inputs[@]}" | sed 's/,$//')" \
    --packages "${THIS_PKG}/pkg/apis/apps/pub,${THIS_PKG}/pkg/apis/apps/v1alpha1,${THIS_PKG}/pkg/apis/apps/v1beta1,${THIS_PKG}/pkg/apis/policy/v1alpha1,${THIS_PKG}/pkg/apis/policy/v1beta1"

kube::codegen::gen_helpers \
    --boilerplate "${BOILERPLATE}" \
    "${ROOT}/pkg/apis"

kube::codegen::gen_openapi \
    --output-dir "${ROOT}/pkg/generated/openapi" \
    --output-pkg "${THIS_PKG}/pkg/generated/openapi" \
    --output-model-name-file "zz_generated.model_name.go" \
    --report-filename "${ROOT}/hack/api-rules-violations.list" \
    --update-report \
    --extra-pkgs k8s.io/api/core/v1 \
    --extra-pkgs k8s.io/api/apps/v1 \
    --extra-pkgs k8s.io/api/autoscaling/v1 \
    --extra-pkgs k8s.io/apimachinery/pkg/api/resource \
    --extra-pkgs k8s.io/apimachinery/pkg/util/intstr \
    --boilerplate "${BOILERPLATE}" \
    "${ROOT}/pkg/apis"

# Core types our kinds embed or reference (SidecarContainer inlines a whole corev1.Container) are
# applied with client-go's own apply configurations: map every core/v1 type client-go has one for.
core_ac=k8s.io/client-go/applyconfigurations/core/v1
core_ac_dir=$(module_dir k8s.io/client-go)/applyconfigurations/core/v1
externals=""
for t in $(sed -n 's/^type \([A-Za-z0-9]*\)ApplyConfiguration struct.*/\1/p' "${core_ac_dir}"/*.go | sort -u); do
    externals+="${externals:+,}k8s.io/api/core/v1.${t}:${core_ac}"
done
# and the apps/v1 types the Advanced StatefulSet and DaemonSet hold (their conditions).
apps_ac=k8s.io/client-go/applyconfigurations/apps/v1
for t in StatefulSetCondition DaemonSetCondition; do
    externals+=",k8s.io/api/apps/v1.${t}:${apps_ac}"
done

kube::codegen::gen_client \
    --with-watch \
    --applyconfig-externals "${externals}" \
    --with-applyconfig \
    --applyconfig-openapi-schema <(go run "${THIS_PKG}/pkg/generated/openapi/cmd/models-schema") \
    --output-dir "${ROOT}/pkg/generated" \
    --output-pkg "${THIS_PKG}/pkg/generated" \
    --boilerplate "${BOILERPLATE}" \
    "${ROOT}/pkg/apis"

# applyconfiguration-gen names inplace's kinds after their Go package (models-schema printed them
# so); the type converter asks for their OpenAPI model names (io.kruise.<group>.*): rename them.
{ grep -rlE 'com\.github\.inplace-dev\.inplace\.pkg\.apis\.(apps|policy)\.' "${ROOT}/pkg/generated/applyconfiguration" || true; } |
    xargs -r sed -i -E 's/com\.github\.inplace-dev\.inplace\.pkg\.apis\.(apps|policy)\./io.kruise.\1./g'
