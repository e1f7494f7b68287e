#!/usr/bin/env bash
# The local cluster's image registry, for Pods that pull (imagePullPolicy Always/IfNotPresent);
# the tests' other Pods keep using the imported images with imagePullPolicy: Never.
#
# Sourced by hack/local-up.sh once the cluster is ready (before the inplace hooks); also runs on
# its own against a running local cluster, to restart the registry and push the images again:
#
#   hack/local-up.d/05-registry.sh
#
# How it is wired (names in hack/lib/local.sh):
#   - Host process _output/bin/inplace-registry serve (hack/registry: go-containerregistry's OCI
#     distribution server), plain HTTP on $REGISTRY_ADDR (node 1's IP) and on loopback, port
#     $REGISTRY_PORT; pid and log (every request) recorded by local_start, stopped by
#     hack/local-down.sh.
#   - Blobs on disk in $REGISTRY_ROOT (kept across runs, removed by local-down --purge);
#     manifests and tags in memory, so each start pushes the images again (the blobs are already
#     there: nothing is uploaded twice).
#   - Name: $REGISTRY_HOST. Every node's containerd has a hosts.toml for it (written with its
#     config by hack/local-up.sh) whose server is http://$REGISTRY_ADDR, in every mode
#     (INPLACE_IN_CLUSTER too).
#   - Pushed (from hack/build-images.sh's OCI layouts):
#       $REGISTRY_HOST/app:v1|v2|v3|bad   the images imported as inplace.local/app:*
#       $REGISTRY_HOST/pause:1.0          the sandbox image
#       $REGISTRY_HOST/remote/app:v1|v2   app:v1|v2 with the label inplace.dev/registry-only=true:
#                                         other images (other image IDs) with the same layers,
#                                         never imported, so a node has them only once it pulled
#                                         them (and removing them removes no imported image)
#       $REGISTRY_HOST/slow/app:v1|v2     the same plus a 1 MiB layer of their own (-pad-layer),
#                                         served at $REGISTRY_SLOW_KIB KiB/s (-slow; default 256):
#                                         a cold pull takes ~4 s, as a large image's from a
#                                         distant registry would (hack/bench-predownload.sh)
#       $REGISTRY_HOST/private/app:v1     app:v1 labelled inplace.dev/registry-only=private (its own
#                                         image ID): private/* asks basic auth (-auth) with
#                                         $REGISTRY_PRIVATE_USER:$REGISTRY_PRIVATE_PASSWORD, for
#                                         pull secrets (test/e2e TestImagePullJobPullSecrets)

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  set -euo pipefail
  cd "$(dirname "$0")/../.."
  # shellcheck source=hack/lib/local.sh
  source hack/lib/local.sh
  local_hook_alone
  local_stop registry
fi

local_start registry "$BIN/inplace-registry" serve \
  -listen "$REGISTRY_ADDR" -listen "127.0.0.1:$REGISTRY_PORT" -root "$REGISTRY_ROOT" \
  -slow "slow/=${REGISTRY_SLOW_KIB:-256}" -auth "private/=$REGISTRY_PRIVATE_USER:$REGISTRY_PRIVATE_PASSWORD"
local_wait registry 30 "registry /v2/ on $REGISTRY_ADDR" http_ok "$NODE_IP" "$REGISTRY_PORT" /v2/ registry/2.0

# registry_push IMAGE REF [FLAG...]: push _output/images/IMAGE.tar (an OCI layout) as REF (the
# pushed digests go to the registry's log).
registry_push() {
  local src="$1" ref="$2"
  shift 2
  "$BIN/inplace-registry" push -resolve "$REGISTRY_HOST=$REGISTRY_ADDR" "$@" \
    "$ROOT/_output/images/$src.tar" "$ref" >> "$LOGS/registry.log" 2>&1 ||
    { tail -n 5 "$LOGS/registry.log" >&2; die "pushing $src as $ref failed (log: $LOGS/registry.log)"; }
}
registry_push pause "$REGISTRY_HOST/pause:1.0"
for v in v1 v2 v3 bad; do registry_push "app-$v" "$REGISTRY_HOST/app:$v"; done
for v in v1 v2; do
  registry_push "app-$v" "$REGISTRY_HOST/remote/app:$v" -label inplace.dev/registry-only=true
  registry_push "app-$v" "$REGISTRY_HOST/slow/app:$v" -label inplace.dev/registry-only=true -pad-layer 1048576
done
registry_push app-v1 "$REGISTRY_HOST/private/app:v1" -label inplace.dev/registry-only=private \
  -auth "$REGISTRY_PRIVATE_USER:$REGISTRY_PRIVATE_PASSWORD"
log "registry $REGISTRY_HOST: pushed app:v1 v2 v3 bad, pause:1.0, remote/app:v1 v2, slow/app:v1 v2, private/app:v1 (basic auth)"
