#!/usr/bin/env bash
# Builds OpenKruise's own programs, kruise-manager (its main.go) and kruise-daemon (cmd/daemon),
# from OpenKruise's source at $KRUISE_VERSION, into _output/kruise/, with its CRDs and webhook
# manifests beside them: the comparator of `BENCH_WAYS=...,kruise hack/bench-rollout.sh`, which
# runs it when that way is asked for. Never part of `make test` or the e2e tests.
#
#   KRUISE_GIT_DIR=/path/to/kruise.git hack/build-kruise.sh
#
# Source: git archive of the tag $KRUISE_VERSION from KRUISE_GIT_DIR (a clone or a bare mirror of
# github.com/openkruise/kruise); without it, a bare clone of $KRUISE_GIT_URL into
# _output/kruise/kruise.git (kept for the next time). Its Go modules come through the Go module
# proxy (`-mod=mod`: the tag has no vendor directory).
#
# Output (_output/kruise/):
#   kruise-manager, kruise-daemon   the binaries
#   config/                         the tag's config/ (CRDs in config/crd, webhook manifests in
#                                   config/webhook), for the bench to install
#   stamp                           version + hash of the patches below; the build is skipped
#                                   while it matches and both binaries exist
#
# Two patches, so that the programs run as host processes of the local cluster (neither changes
# what they do to the cluster):
#   - kruise-manager's webhook server listens on $WEBHOOK_HOST (OpenKruise's own setting for a
#     webhook reached at an address rather than at a Service) instead of 0.0.0.0; unset, it is
#     0.0.0.0 as before;
#   - kruise-daemon looks for the CRI socket in /run instead of /hostvarrun, the mount its
#     DaemonSet gives it of the host's /var/run (the path is a const upstream; here a var set
#     with -ldflags -X).
set -euo pipefail
cd "$(dirname "$0")/.."

KRUISE_VERSION="${KRUISE_VERSION:-v1.9.0}"
KRUISE_GIT_URL="${KRUISE_GIT_URL:-https://github.com/openkruise/kruise.git}"
OUT="$PWD/_output/kruise"
RUN_DIR=/run

log() { echo "[$(date +%T.%3N)] build-kruise: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# patch_source DIR: the two patches above (each checked: a tag whose code moved fails loudly).
patch_source() {
  local dir="$1"
  grep -q 'Host:    "0.0.0.0",' "$dir/main.go" || die "main.go: the webhook server's Host line moved"
  sed -i 's|Host:    "0.0.0.0",|Host:    webhookutil.GetHost(), // inplace bench: bind where the webhooks are reached|' "$dir/main.go"
  local f="$dir/pkg/daemon/criruntime/factory_unix.go"
  perl -0pi -e 's/const \(\n(\tvarRunMountPath = "\/hostvarrun"\n\))/var (\n$1/' "$f"
  grep -q '^var ($' "$f" || die "$f: varRunMountPath moved"
}

STAMP="$KRUISE_VERSION $(declare -f patch_source | sha256sum | cut -c1-16) run=$RUN_DIR"
if [[ -x "$OUT/kruise-manager" && -x "$OUT/kruise-daemon" && -d "$OUT/config/crd/bases" &&
  "$(cat "$OUT/stamp" 2>/dev/null)" == "$STAMP" ]]; then
  log "up to date ($STAMP)"
  exit 0
fi

mkdir -p "$OUT"
git_dir="${KRUISE_GIT_DIR:-}"
if [[ -z "$git_dir" ]]; then
  git_dir="$OUT/kruise.git"
  if [[ ! -d "$git_dir" ]]; then
    log "cloning $KRUISE_GIT_URL (set KRUISE_GIT_DIR to use a clone you have)"
    git clone --bare --filter=blob:none "$KRUISE_GIT_URL" "$git_dir" >&2
  fi
fi
git -C "$git_dir" rev-parse -q --verify "$KRUISE_VERSION^{commit}" >/dev/null ||
  die "$git_dir has no $KRUISE_VERSION"

src="$(mktemp -d)"
trap 'rm -rf "$src"' EXIT
git -C "$git_dir" archive "$KRUISE_VERSION" | tar -x -C "$src"
patch_source "$src"

log "building kruise-manager and kruise-daemon $KRUISE_VERSION (first time: ~10 min on 2 cores)"
(
  cd "$src"
  export GOFLAGS=-mod=mod CGO_ENABLED=0
  ldflags="-X github.com/openkruise/kruise/pkg/daemon/criruntime.varRunMountPath=$RUN_DIR"
  go build -ldflags "$ldflags" -o "$OUT/kruise-manager.new" .
  go build -ldflags "$ldflags" -o "$OUT/kruise-daemon.new" ./cmd/daemon
)
mv "$OUT/kruise-manager.new" "$OUT/kruise-manager"
mv "$OUT/kruise-daemon.new" "$OUT/kruise-daemon"
rm -rf "$OUT/config"
cp -a "$src/config" "$OUT/config"
echo "$STAMP" > "$OUT/stamp"
log "built $OUT/kruise-manager, $OUT/kruise-daemon ($STAMP)"
