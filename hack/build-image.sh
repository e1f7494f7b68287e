#!/usr/bin/env bash
# Builds inplace's own container image — inplace-apiserver, inplace-controller
# and inplace-daemon, static, in one image — as an OCI image layout tarball,
# with no registry and no docker (the tool hack/build-images.sh builds the test
# images with):
#
#   hack/build-image.sh             # build (cached): _output/images/inplace.tar
#   hack/build-image.sh --import    # build, then import into the local node's
#                                   # containerd (k8s.io namespace)
#   hack/build-image.sh [--import] etcd
#                                   # the etcd server of hack/build-kube.sh as an
#                                   # image, for artifacts/deploy/ha on a node with
#                                   # no registry (users run registry.k8s.io/etcd)
#
# The image is inplace.local/inplace:<tag> (inplace.local/etcd:<tag>), the tag
# a hash of its files, so a rebuilt tree gets a new reference and a Pod never
# runs a stale image that happens to carry the same tag; the reference is
# written to _output/images/NAME.ref (and printed). The inplace image holds
# /inplace-apiserver, /inplace-controller, /inplace-daemon, the etcd image
# /usr/local/bin/etcd (on PATH, as in the upstream image), and both an
# /etc/passwd with the nonroot user (65532) the manifests run as; no shell, no
# libc.
#
# Imported, it is also tagged inplace.local/NAME:latest, the reference
# artifacts/deploy names for inplace; one kustomize images: entry points that at
# this reference (hack/deploy.sh does) or at your registry's copy of the image.
set -euo pipefail
cd "$(dirname "$0")/.."

IMPORT=false NAME=inplace
while (($#)); do
  case "$1" in
    --import) IMPORT=true ;;
    inplace|etcd) NAME="$1" ;;
    *) echo "usage: $0 [--import] [inplace|etcd]" >&2; exit 2 ;;
  esac
  shift
done

CONTAINERD_ADDRESS="${CONTAINERD_ADDRESS:-/run/containerd/containerd.sock}"
REPO="inplace.local/$NAME"
OUT=_output/images
TOOLS="$OUT/tools"
ROOTFS="$OUT/rootfs/$NAME"

# ocibuild comes from hack/build-images.sh (cached; it also builds the test images).
hack/build-images.sh

# install_file SRC DEST: DEST replaced by SRC unless they are the same bytes (an unchanged file
# keeps its place, the tag stays).
install_file() {
  if ! cmp -s "$1" "$2"; then
    mkdir -p "$(dirname "$2")"
    cp -f "$1" "$2.tmp" && mv -f "$2.tmp" "$2"
  fi
}

mkdir -p "$ROOTFS/etc" "$ROOTFS/tmp"
chmod 1777 "$ROOTFS/tmp"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > "$ROOTFS/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' > "$ROOTFS/etc/group"
files=(etc/passwd etc/group)
case "$NAME" in
  inplace)
    # Static binaries: the image has no libc. -trimpath and no VCS stamp, so the same
    # tree gives the same bytes and the same tag.
    tmp="$(mktemp -d "$OUT/.build.XXXXXX")"
    trap 'rm -rf "$tmp"' EXIT
    # The programs, not the kubectl plugin (cmd/kubectl-*): it runs on an operator's machine.
    programs=()
    for dir in cmd/*/; do
      n="$(basename "$dir")"
      [[ "$n" == kubectl-* ]] || programs+=("$n")
    done
    pkgs=()
    for n in "${programs[@]}"; do pkgs+=("./cmd/$n"); done
    CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "-s -w" -o "$tmp/" "${pkgs[@]}"
    for n in "${programs[@]}"; do
      install_file "$tmp/$n" "$ROOTFS/inplace-$n"
      files+=("inplace-$n")
    done
    entrypoint='["/inplace-apiserver"]' path=/
    ;;
  etcd)
    # hack/build-kube.sh builds it static (CGO_ENABLED=0), from the etcd module Kubernetes pins.
    hack/build-kube.sh etcd
    install_file _output/bin/etcd "$ROOTFS/usr/local/bin/etcd"
    mkdir -p "$ROOTFS/var/lib/etcd"
    files+=(usr/local/bin/etcd)
    entrypoint='["/usr/local/bin/etcd"]' path=/usr/local/bin
    ;;
esac

tag="$(cd "$ROOTFS" && cat "${files[@]}" | sha256sum | cut -c1-16)"
ref="$REPO:$tag"
if [[ "$(cat "$OUT/$NAME.ref" 2>/dev/null)" != "$ref" || ! -f "$OUT/$NAME.tar" ]]; then
  echo "build-image: building $ref" >&2
  "$TOOLS/ocibuild" -o "$OUT/$NAME.tar" -name "$ref" -layer "$ROOTFS" \
    -entrypoint "$entrypoint" -env "PATH=$path" -digest-file "$OUT/$NAME.digest"
  echo "$ref" > "$OUT/$NAME.ref"
fi

if $IMPORT; then
  ctr_() { ctr --address "$CONTAINERD_ADDRESS" -n k8s.io "$@"; }
  digest="$(cat "$OUT/$NAME.digest")"
  if ! ctr_ images ls 2>/dev/null | awk 'NR > 1 {print $1, $3}' | grep -qxF "$ref $digest"; then
    echo "build-image: importing $ref" >&2
    ctr_ images import --no-unpack=false "$OUT/$NAME.tar" >/dev/null
  fi
  # Also under a fixed reference, for a plain `kubectl apply -k` of artifacts/deploy.
  ctr_ images tag --force "$ref" "$REPO:latest" >/dev/null
fi
echo "$ref"
