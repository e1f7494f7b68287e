#!/usr/bin/env bash
# The checks CI runs before the tests: formatting, vet, staticcheck (hack/staticcheck.sh, built at
# its pinned version on first use), no hand-written non-test Go file over 600 lines, generated code
# not stale, and the docs not stale (docs/layout.md names every package; the links of README.md and
# docs/ resolve).
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

unformatted=$(gofmt -l $(git ls-files '*.go'))
if [[ -n "${unformatted}" ]]; then
    echo "gofmt -l lists these files; run gofmt -w on them:" >&2
    echo "${unformatted}" >&2
    exit 1
fi
# A file past 600 lines holds several things: split it by what each part is about.
long=$(git ls-files '*.go' | grep -v -e '_test\.go$' -e '/zz_generated\.' -e '\.pb\.go$' -e '^pkg/generated/' |
    xargs wc -l | awk '$2 != "total" && $1 > 600 {print $2 " (" $1 " lines)"}')
if [[ -n "${long}" ]]; then
    echo "hand-written Go files over 600 lines; split them:" >&2
    echo "${long}" >&2
    exit 1
fi
go vet ./...
# The local cluster's image registry, a module of its own.
(cd hack/registry && go vet ./...)
hack/staticcheck.sh
hack/verify-codegen.sh
go test -count=1 ./hack/checkdocs
echo "verify: ok"
