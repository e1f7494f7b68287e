#!/usr/bin/env bash
# Builds the local cluster's container images as OCI image layout tarballs,
# with no registry and no docker, into _output/images/:
#
#   inplace.local/pause:1.0      containerd's sandbox_image (hack/images/pause)
#   inplace.local/app:v1|v2|v3   busybox-static rootfs; prints "app version vN",
#                                then sleeps; exits 0 promptly on TERM/INT
#   inplace.local/app:bad        prints a line and exits 1 immediately
#
#   hack/build-images.sh             # build (cached)
#   hack/build-images.sh --import    # build, then import into containerd's
#                                    # k8s.io namespace (needs a running containerd)
#
# Cached: an image is rebuilt only when its inputs (tool sources, busybox
# binary, entrypoint script, image settings) change, and imported only when
# containerd does not already hold the same manifest digest under its name.
# Pods must use imagePullPolicy: Never (there is no registry).
set -euo pipefail
cd "$(dirname "$0")/.."

IMPORT=false
case "${1:-}" in
  --import) IMPORT=true ;;
  "") ;;
  *) echo "usage: $0 [--import]" >&2; exit 2 ;;
esac

CONTAINERD_ADDRESS="${CONTAINERD_ADDRESS:-/run/containerd/containerd.sock}"
BUSYBOX="${BUSYBOX:-/bin/busybox}"
APP_VERSIONS=(v1 v2 v3)
PAUSE_IMAGE=inplace.local/pause:1.0
APP_IMAGE=inplace.local/app
PATH_ENV=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

OUT=_output/images
TOOLS="$OUT/tools"
ROOTFS="$OUT/rootfs"
mkdir -p "$TOOLS" "$ROOTFS"

sha() { sha256sum | cut -c1-16; }

# --- 1. the helper programs (ocibuild, pause), static, rebuilt on change -----
tools_hash="$(cat hack/images/go.mod hack/images/*/*.go | sha)-$(go env GOVERSION)"
if [[ ! -x "$TOOLS/ocibuild" || ! -x "$TOOLS/pause" || "$(cat "$TOOLS/.stamp" 2>/dev/null)" != "$tools_hash" ]]; then
  echo "build-images: building ocibuild and pause" >&2
  (cd hack/images && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$OLDPWD/$TOOLS/" ./ocibuild ./pause)
  echo "$tools_hash" > "$TOOLS/.stamp"
fi

# --- 2. layer directories -----------------------------------------------------
# pause: just /pause.
if ! cmp -s "$TOOLS/pause" "$ROOTFS/pause/pause" 2>/dev/null; then
  rm -rf "$ROOTFS/pause" && mkdir -p "$ROOTFS/pause"
  cp "$TOOLS/pause" "$ROOTFS/pause/pause"
fi

# busybox: /bin/busybox, a relative symlink per applet, the usual empty dirs.
if [[ ! -x "$BUSYBOX" ]]; then
  echo "build-images: $BUSYBOX missing (run hack/install-deps.sh)" >&2
  exit 1
fi
busybox_hash="$(sha < "$BUSYBOX")"
if [[ "$(cat "$ROOTFS/.busybox.stamp" 2>/dev/null)" != "$busybox_hash" ]]; then
  echo "build-images: preparing busybox rootfs" >&2
  rm -rf "$ROOTFS/busybox"
  mkdir -p "$ROOTFS/busybox"/{bin,dev,etc,proc,sys,tmp,root,var/run}
  chmod 1777 "$ROOTFS/busybox/tmp"
  cp "$BUSYBOX" "$ROOTFS/busybox/bin/busybox"
  for applet in $("$BUSYBOX" --list); do
    [[ "$applet" == busybox ]] || ln -sf busybox "$ROOTFS/busybox/bin/$applet"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' > "$ROOTFS/busybox/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' > "$ROOTFS/busybox/etc/group"
  echo "$busybox_hash" > "$ROOTFS/.busybox.stamp"
fi

# write_if_changed FILE MODE: stdin to FILE, leaving it untouched when equal.
write_if_changed() {
  local tmp="$1.tmp"
  cat > "$tmp"
  chmod "$2" "$tmp"
  if cmp -s "$tmp" "$1"; then rm -f "$tmp"; else mv -f "$tmp" "$1"; fi
}

# The app entrypoints: one small layer per tag on top of the busybox layer.
for v in "${APP_VERSIONS[@]}"; do
  mkdir -p "$ROOTFS/app-$v"
  write_if_changed "$ROOTFS/app-$v/app.sh" 0755 <<SCRIPT
#!/bin/sh
# Entrypoint of $APP_IMAGE:$v, the local cluster's test workload.
VERSION=$v
echo "app version \$VERSION"
# Exit 0 promptly on TERM/INT (the container's stop signal).
trap 'kill \$sleeper 2>/dev/null; echo "app version \$VERSION: stopping"; exit 0' TERM INT
while :; do
  sleep 3600 &
  sleeper=\$!
  wait \$sleeper
done
SCRIPT
done
mkdir -p "$ROOTFS/app-bad"
write_if_changed "$ROOTFS/app-bad/app.sh" 0755 <<'SCRIPT'
#!/bin/sh
# Entrypoint of inplace.local/app:bad: fails immediately (for failure tests).
echo "app version bad: exiting with status 1"
exit 1
SCRIPT

# --- 3. image tarballs --------------------------------------------------------
# build_image FILE REF ENTRYPOINT LAYER_DIR...
build_image() {
  local file="$1" ref="$2" entrypoint="$3"
  shift 3
  local args=(-o "$OUT/$file.tar" -name "$ref" -entrypoint "$entrypoint" -env "$PATH_ENV"
    -digest-file "$OUT/$file.digest")
  local layer hash
  for layer in "$@"; do args+=(-layer "$ROOTFS/$layer"); done
  # Inputs: the tool, the layer contents (names, modes, link targets, bytes),
  # and the arguments.
  hash="$(
    {
      echo "$tools_hash ${args[*]}"
      for layer in "$@"; do
        (cd "$ROOTFS/$layer" && find . -printf '%p %m %l\n' | LC_ALL=C sort && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 cat)
      done
    } | sha
  )"
  if [[ -f "$OUT/$file.tar" && -f "$OUT/$file.digest" && "$(cat "$OUT/$file.stamp" 2>/dev/null)" == "$hash" ]]; then
    return 0
  fi
  echo "build-images: building $ref" >&2
  "$TOOLS/ocibuild" "${args[@]}"
  echo "$hash" > "$OUT/$file.stamp"
}

build_image pause "$PAUSE_IMAGE" '["/pause"]' pause
for v in "${APP_VERSIONS[@]}"; do
  build_image "app-$v" "$APP_IMAGE:$v" '["/app.sh"]' busybox "app-$v"
done
build_image app-bad "$APP_IMAGE:bad" '["/app.sh"]' busybox app-bad

# --- 4. import into containerd (k8s.io namespace, used by the CRI plugin) ----
if $IMPORT; then
  ctr_() { ctr --address "$CONTAINERD_ADDRESS" -n k8s.io "$@"; }
  # One listing for all images: "REF TYPE DIGEST ...".
  present="$(ctr_ images ls 2>/dev/null | awk 'NR > 1 {print $1, $3}')"
  import_image() {
    local file="$1" ref="$2" digest
    digest="$(cat "$OUT/$file.digest")"
    if grep -qxF "$ref $digest" <<<"$present"; then
      return 0
    fi
    echo "build-images: importing $ref" >&2
    ctr_ images import --no-unpack=false "$OUT/$file.tar" >/dev/null
  }
  import_image pause "$PAUSE_IMAGE"
  for v in "${APP_VERSIONS[@]}"; do import_image "app-$v" "$APP_IMAGE:$v"; done
  import_image app-bad "$APP_IMAGE:bad"
fi
