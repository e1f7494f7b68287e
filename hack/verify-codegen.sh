#!/usr/bin/env bash
# Fails when the committed generated code differs from what hack/update-codegen.sh produces now.
set -o errexit -o nounset -o pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"

generated=(pkg/generated pkg/apis hack/api-rules-violations.list)
tmp=$(mktemp -d)
trap 'rm -rf "${tmp}"' EXIT
# Compare against a copy of the tree regenerated in place, then restore what was there.
for p in "${generated[@]}"; do mkdir -p "${tmp}/before/$(dirname "$p")"; cp -a "$p" "${tmp}/before/$p"; done
restore() { for p in "${generated[@]}"; do rm -rf "$p"; cp -a "${tmp}/before/$p" "$p"; done; rm -rf "${tmp}"; }
trap restore EXIT

hack/update-codegen.sh >/dev/null
stale=0
for p in "${generated[@]}"; do
    if ! diff -ruN "${tmp}/before/$p" "$p" >"${tmp}/diff" 2>&1; then
        echo "generated code under $p is stale:" >&2
        head -50 "${tmp}/diff" >&2
        stale=1
    fi
done
if ((stale)); then
    echo "run hack/update-codegen.sh (make codegen) and commit the result" >&2
    exit 1
fi
echo "verify-codegen: generated code is up to date"
