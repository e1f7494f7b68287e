#!/usr/bin/env bash
# Runs staticcheck (honnef.co/go/tools) on the project's packages and on hack/registry, with its
# default checks (no staticcheck.conf: no check class needed turning off). The binary is built
# once from the Go module proxy at the pinned version into _output/tools (its name carries the
# version, so a bump rebuilds it); `go install module@version` checks the download against the
# checksum database and needs no entry in go.mod.
#
#   hack/staticcheck.sh [packages]   (default: ./... without the generated code)
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# 2026.2.2: the release that knows Go 1.26 (go.mod's go line).
STATICCHECK_VERSION=v0.8.2
bin=$PWD/_output/tools/staticcheck-${STATICCHECK_VERSION}
if [[ ! -x "${bin}" ]]; then
    tmp=$(mktemp -d)
    trap 'rm -rf "${tmp}"' EXIT
    echo "building staticcheck ${STATICCHECK_VERSION} into ${bin}" >&2
    GOBIN=${tmp} go install "honnef.co/go/tools/cmd/staticcheck@${STATICCHECK_VERSION}"
    mkdir -p "$(dirname "${bin}")"
    mv "${tmp}/staticcheck" "${bin}"
fi

if [[ $# -gt 0 ]]; then
    exec "${bin}" "$@"
fi
# pkg/generated is written by the code generators: its findings are theirs to fix.
"${bin}" $(go list ./... | grep -v '/pkg/generated/')
# The local cluster's image registry, a module of its own.
(cd hack/registry && "${bin}" ./...)
