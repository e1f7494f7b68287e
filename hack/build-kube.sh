#!/usr/bin/env bash
# Builds the Kubernetes v1.35.4 binaries and an etcd 3.6 server from the Go
# module proxy into _output/bin/, using the separate module in hack/kube/
# (see the comment in hack/kube/go.mod for why it is separate).
#
#   hack/build-kube.sh             # all: kube-apiserver kube-controller-manager
#                                  #      kube-scheduler kubelet kubectl etcd minicri
#                                  #      hostpath (the local cluster's volume provisioner)
#                                  #      coredns (its DNS server, module hack/coredns)
#                                  #      inplace-registry (its image registry, module
#                                  #      hack/registry)
#   hack/build-kube.sh kubectl     # only the named binaries
#   hack/build-kube.sh kwok        # kwok (fake nodes of hack/bench-scale.sh); not
#                                  # in the default set, and built as its own module
#
# Cached: each binary has a stamp (_output/bin/.stamp/NAME) holding the
# Kubernetes version, the Go version and a hash of hack/kube's go.mod and
# go.sum (and, for etcd, minicri and hostpath, of their sources; for coredns and
# inplace-registry, of their modules hack/coredns and hack/registry); a binary
# whose stamp matches is not rebuilt.
set -euo pipefail
cd "$(dirname "$0")/.."

KUBE_VERSION=v1.35.4
KUBE_MAJOR=1
KUBE_MINOR=35
# sigs.k8s.io/kwok is built with `go install module@version`, outside hack/kube:
# it requires Kubernetes libraries of its own (v0.36), which would move the
# cluster's binaries off v1.35 if they shared a module.
KWOK_VERSION=v0.8.0
# The local cluster's DNS server is CoreDNS with a handful of plugins, built from its own module
# (hack/coredns) for the same reason: CoreDNS's libraries are not the cluster's; so is its image
# registry (hack/registry: go-containerregistry's).
ALL=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl etcd minicri hostpath coredns inplace-registry)

OUT="$PWD/_output/bin"
STAMPS="$OUT/.stamp"
MODDIR="$PWD/hack/kube"

# Go package of each binary.
pkg_of() {
  case "$1" in
    kube-apiserver|kube-controller-manager|kube-scheduler|kubelet|kubectl)
      echo "k8s.io/kubernetes/cmd/$1" ;;
    etcd|minicri|hostpath) echo "github.com/inplace-dev/inplace/hack/kube/$1" ;;
    kwok) echo "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" ;;
    coredns) echo "github.com/inplace-dev/inplace/hack/coredns" ;;
    inplace-registry) echo "github.com/inplace-dev/inplace/hack/registry" ;;
    *) echo "build-kube: unknown binary '$1' (known: ${ALL[*]} kwok)" >&2; return 1 ;;
  esac
}

if (($# == 0)); then set -- "${ALL[@]}"; fi
for b in "$@"; do pkg_of "$b" >/dev/null; done

# own_module NAME: the module directory of a binary built from a module of its own, apart from
# hack/kube.
own_module() {
  case "$1" in
    coredns) echo hack/coredns ;;
    inplace-registry) echo hack/registry ;;
  esac
}

# stamp_of NAME: everything that determines the binary: the module's go.mod and go.sum, and for
# the programs of hack/kube (etcd, minicri, hostpath) their own sources; a change to minicri does not
# rebuild kube-apiserver.
go_version="$(go env GOVERSION)"
stamp_of() {
  local own=""
  if [[ "$1" == kwok ]]; then
    echo "$KWOK_VERSION $go_version"
    return
  fi
  if [[ -n "$(own_module "$1")" ]]; then
    local m
    m="$(own_module "$1")"
    echo "$go_version $(cat "$m/go.mod" "$m/go.sum" "$m"/*.go | sha256sum | cut -c1-16)"
    return
  fi
  case "$1" in
    etcd|minicri|hostpath) own="$1" ;;
  esac
  echo "$KUBE_VERSION $go_version $(cd "$MODDIR" && cat go.mod go.sum ${own:+"$own"/*.go} | sha256sum | cut -c1-16)"
}

todo=()
for b in "$@"; do
  if [[ -x "$OUT/$b" && -f "$STAMPS/$b" && "$(cat "$STAMPS/$b")" == "$(stamp_of "$b")" ]]; then
    continue
  fi
  todo+=("$b")
done
if ((${#todo[@]} == 0)); then
  exit 0
fi

# Version information, for both the server binaries and client-go (kubectl).
ldflags="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=$KUBE_MAJOR -X $p.gitMinor=$KUBE_MINOR"
  ldflags+=" -X $p.gitTreeState=clean"
done

mkdir -p "$OUT" "$STAMPS"
if [[ " ${todo[*]} " == *" kwok "* ]]; then
  echo "build-kube: building kwok $KWOK_VERSION" >&2
  tmp="$(mktemp -d "$OUT/.build.XXXXXX")"
  (cd "$tmp" && GOBIN="$tmp" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" "$(pkg_of kwok)")
  mv -f "$tmp/kwok" "$OUT/kwok"
  rm -rf "$tmp"
  stamp_of kwok > "$STAMPS/kwok"
  todo=("${todo[@]/kwok/}")
  read -ra todo <<< "${todo[*]}"
  ((${#todo[@]} > 0)) || exit 0
fi
for b in coredns inplace-registry; do
  [[ " ${todo[*]} " == *" $b "* ]] || continue
  m="$(own_module "$b")"
  echo "build-kube: building $b (module $m)" >&2
  start=$SECONDS
  tmp="$(mktemp -d "$OUT/.build.XXXXXX")"
  (cd "$m" && CGO_ENABLED=0 go build -mod=readonly -trimpath -ldflags "-s -w" -o "$tmp/$b" .)
  mv -f "$tmp/$b" "$OUT/$b"
  rm -rf "$tmp"
  stamp_of "$b" > "$STAMPS/$b"
  echo "build-kube: $b done in $((SECONDS - start))s" >&2
  rest=()
  for t in "${todo[@]}"; do [[ "$t" == "$b" ]] || rest+=("$t"); done
  todo=("${rest[@]}")
done
((${#todo[@]} > 0)) || exit 0

pkgs=()
for b in "${todo[@]}"; do pkgs+=("$(pkg_of "$b")"); done

echo "build-kube: building ${todo[*]} ($KUBE_VERSION)" >&2
start=$SECONDS
# One `go build` for all packages so the compiler shares work between them.
# Build into a temporary directory and move into place, so an interrupted
# build never leaves a half-written binary behind a valid stamp.
tmp="$(mktemp -d "$OUT/.build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
(
  cd "$MODDIR"
  CGO_ENABLED=0 go build -mod=readonly -trimpath -ldflags "$ldflags" -o "$tmp/" "${pkgs[@]}"
)
for b in "${todo[@]}"; do
  mv -f "$tmp/$b" "$OUT/$b"
  stamp_of "$b" > "$STAMPS/$b"
done
echo "build-kube: done in $((SECONDS - start))s" >&2
