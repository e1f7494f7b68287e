#!/usr/bin/env bash
# The checks CI runs before the tests: formatting, vet, and generated code not stale.
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

unformatted=$(gofmt -l $(git ls-files '*.go'))
if [[ -n "${unformatted}" ]]; then
    echo "gofmt -l lists these files; run gofmt -w on them:" >&2
    echo "${unformatted}" >&2
    exit 1
fi
go vet ./...
# The local cluster's image registry, a module of its own.
(cd hack/registry && go vet ./...)
hack/verify-codegen.sh
echo "verify: ok"
