#!/usr/bin/env bash
# Builds inplace's own container image — inplace-apiserver, inplace-controller
# and inplace-daemon, static, in one image — as an OCI image layout tarball,
# with no registry and no docker (the tool hack/build-images.sh builds the test
# images with):
#
#   hack/build-image.sh             # build (cached): _output/images/inplace.tar
#   hack/build-image.sh --import    # build, then import into the local node's
#                                   # containerd (k8s.io namespace)
#
# The image is inplace.local/inplace:<tag>, the tag a hash of the three
# binaries, so a rebuilt tree gets a new reference and a Pod never runs a stale
# image that happens to carry the same tag; the reference is written to
# _output/images/inplace.ref (and printed). The image holds /inplace-apiserver,
# /inplace-controller, /inplace-daemon and an /etc/passwd with the nonroot user
# (65532) the manifests run as; no shell, no libc.
#
# Imported, it is also tagged inplace.local/inplace:latest, the reference
# artifacts/deploy names; one kustomize images: entry points that at this
# reference (hack/deploy.sh does) or at your registry's copy of the image.
set -euo pipefail
cd "$(dirname "$0")/.."

IMPORT=false
case "${1:-}" in
  --import) IMPORT=true ;;
  "") ;;
  *) echo "usage: $0 [--import]" >&2; exit 2 ;;
esac

CONTAINERD_ADDRESS="${CONTAINERD_ADDRESS:-/run/containerd/containerd.sock}"
REPO=inplace.local/inplace
OUT=_output/images
TOOLS="$OUT/tools"
ROOTFS="$OUT/rootfs/inplace"

# ocibuild comes from hack/build-images.sh (cached; it also builds the test images).
hack/build-images.sh

# Static binaries: the image has no libc. -trimpath and no VCS stamp, so the same
# tree gives the same bytes and the same tag.
mkdir -p "$ROOTFS/etc" "$ROOTFS/tmp"
chmod 1777 "$ROOTFS/tmp"
names=()
for dir in cmd/*/; do names+=("inplace-$(basename "$dir")"); done
tmp="$(mktemp -d "$OUT/.build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
pkgs=()
for dir in cmd/*/; do pkgs+=("./$dir"); done
CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "-s -w" -o "$tmp/" "${pkgs[@]}"
for dir in cmd/*/; do
  n="$(basename "$dir")"
  if ! cmp -s "$tmp/$n" "$ROOTFS/inplace-$n"; then
    mv -f "$tmp/$n" "$ROOTFS/inplace-$n"
  fi
done
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > "$ROOTFS/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' > "$ROOTFS/etc/group"

tag="$(cd "$ROOTFS" && cat "${names[@]}" etc/passwd etc/group | sha256sum | cut -c1-16)"
ref="$REPO:$tag"
if [[ "$(cat "$OUT/inplace.ref" 2>/dev/null)" != "$ref" || ! -f "$OUT/inplace.tar" ]]; then
  echo "build-image: building $ref" >&2
  "$TOOLS/ocibuild" -o "$OUT/inplace.tar" -name "$ref" -layer "$ROOTFS" \
    -entrypoint '["/inplace-apiserver"]' -env "PATH=/" -digest-file "$OUT/inplace.digest"
  echo "$ref" > "$OUT/inplace.ref"
fi

if $IMPORT; then
  ctr_() { ctr --address "$CONTAINERD_ADDRESS" -n k8s.io "$@"; }
  digest="$(cat "$OUT/inplace.digest")"
  if ! ctr_ images ls 2>/dev/null | awk 'NR > 1 {print $1, $3}' | grep -qxF "$ref $digest"; then
    echo "build-image: importing $ref" >&2
    ctr_ images import --no-unpack=false "$OUT/inplace.tar" >/dev/null
  fi
  # Also under the reference artifacts/deploy names, for a plain `kubectl apply -k`.
  ctr_ images tag --force "$ref" "$REPO:latest" >/dev/null
fi
echo "$ref"
