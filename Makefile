# inplace — the two commands a fresh machine needs are `make run` and `make test`.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
GO ?= go
BIN := _output/bin
GO_TEST_FLAGS ?= -count=1

# One way to compile for every go command here: static (no cgo) and -trimpath, as the container
# image (hack/build-image.sh) and the cluster's binaries are built. The tests, go vet, the host
# programs and the image then share one build cache entry per package instead of compiling the
# module's dependency tree twice (cgo changes net and everything above it; -trimpath changes
# every package).
export CGO_ENABLED := 0
GOFLAGS += -trimpath
export GOFLAGS

.PHONY: all build install-plugin image run run-standalone test test-unit test-fuzz test-integration test-e2e test-e2e-in-cluster test-e2e-ha \
        verify codegen kube-binaries images deps cluster-up cluster-down clean

# INPLACE_IN_CLUSTER=1 (make run / make cluster-up): the inplace programs run in the cluster,
# installed from artifacts/deploy with inplace's image, instead of as host processes; =ha: from
# artifacts/deploy/ha (three etcd members, two inplace-apiservers).
export INPLACE_IN_CLUSTER

all: build

## build: the inplace programs into _output/bin as inplace-<name> for every cmd/<name>; a kubectl
## plugin, cmd/kubectl-<name>, keeps its own name (kubectl finds plugins by it); and the local
## cluster's image registry, inplace-registry (its own module, hack/registry; cached)
build:
	for d in cmd/*/; do n=$$(basename $$d); case $$n in kubectl-*) o=$$n ;; *) o=inplace-$$n ;; esac; \
		$(GO) build -o $(BIN)/$$o ./cmd/$$n; done
	hack/build-kube.sh inplace-registry

## install-plugin: kubectl-inplace into $(PREFIX) (default /usr/local/bin), so that `kubectl inplace` runs it
PREFIX ?= /usr/local/bin
install-plugin:
	$(GO) build -o $(BIN)/kubectl-inplace ./cmd/kubectl-inplace
	install -d $(PREFIX)
	install -m 0755 $(BIN)/kubectl-inplace $(PREFIX)/kubectl-inplace

## image: inplace's container image (OCI tarball in _output/images; imported into the local
## node's containerd when it runs), inplace.local/inplace:<hash of the binaries>
image:
	hack/build-image.sh $$([[ -S /run/containerd/containerd.sock ]] && echo --import)

## run: a real local cluster with inplace aggregated into it (see README)
run: build deps kube-binaries
	hack/run.sh

## run-standalone: inplace-apiserver alone on loopback with embedded etcd (no cluster)
run-standalone: build
	hack/run-standalone.sh

## test: everything CI runs — unit, fuzz, integration (real etcd, real kubectl), e2e (real cluster) with
## inplace as host processes, then installed in the cluster from artifacts/deploy/ha with its faults.
## test-e2e-in-cluster (the whole suite against artifacts/deploy installed) is not in it: with it
## CI took over an hour on a fresh 2-core machine.
test: test-unit test-fuzz test-integration test-e2e test-e2e-ha

# hack/registry is a module of its own (the local cluster's image registry). The chart's tests
# (./charts) run helm and kubectl: both are built first, here, so that a fresh machine builds them
# outside the tests' timeout.
test-unit:
	hack/build-kube.sh kubectl
	hack/helm.sh >/dev/null
	KUBECTL=$(CURDIR)/$(BIN)/kubectl $(GO) test $(GO_TEST_FLAGS) ./pkg/... ./cmd/... ./charts/...
	cd hack/registry && $(GO) test $(GO_TEST_FLAGS) ./...

# Go's native fuzzing of what parses outside input, FUZZ_TIME each (their seeds also run in
# test-unit); a crasher is written to the package's testdata/fuzz/ and fails the target.
FUZZ_TIME ?= 10s
FUZZ_TARGETS := pkg/inplaceupdate:FuzzPodUpdate pkg/apis/apps/validation:FuzzValidate \
	pkg/admission/podwebhook:FuzzAdmissionReview pkg/admission/podwebhook:FuzzBudgetReview pkg/resourceexpr:FuzzParse \
	pkg/admission/deletionwebhook:FuzzDeletionReview
test-fuzz:
	for t in $(FUZZ_TARGETS); do \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZ_TIME) ./$${t%%:*} || exit 1; \
	done

# The kubectl tests of the standalone server use the kubectl built from the module proxy.
# All the cluster's binaries are built here, in one go build that shares the compiling (kubectl
# alone first, then the rest, compiled much of Kubernetes twice); test-e2e finds them built.
test-integration: build
	hack/build-kube.sh
	KUBECTL=$(CURDIR)/$(BIN)/kubectl INPLACE_APISERVER=$(CURDIR)/$(BIN)/inplace-apiserver \
		$(GO) test $(GO_TEST_FLAGS) -timeout 20m ./test/integration/...

# The e2e harness brings the local cluster up and down itself; it needs root.
# kwok (fake nodes) for TestScaleSmoke, built here so that its cold build (minutes) is not
# spent inside the e2e run's timeout.
test-e2e: build deps kube-binaries
	hack/build-kube.sh kwok
	INPLACE_REPO_ROOT=$(CURDIR) $(GO) test $(GO_TEST_FLAGS) -timeout 40m -v ./test/e2e/... 2>&1 | tee _output/e2e.log | awk -f hack/e2e-filter.awk ; \
		exit $${PIPESTATUS[0]}

# The same e2e suite with inplace installed in the cluster from artifacts/deploy (hack/deploy.sh).
test-e2e-in-cluster: build deps kube-binaries
	INPLACE_E2E_IN_CLUSTER=1 INPLACE_REPO_ROOT=$(CURDIR) $(GO) test $(GO_TEST_FLAGS) -timeout 40m -v ./test/e2e/... 2>&1 | tee _output/e2e-in-cluster.log | awk -f hack/e2e-filter.awk ; \
		exit $${PIPESTATUS[0]}

# inplace installed from artifacts/deploy/ha (hack/deploy.sh --base artifacts/deploy/ha): its
# faults (ha_test.go: an inplace-apiserver of two, the etcd leader, two etcd members of three,
# each during a CloneSet rollout, a sidecar upgrade and a CRR), and the tests of what differs
# once installed: the programs in their containers (apiserver restart on shared etcd, controller
# failover, daemon killed mid-recreate), rights, manifests. The rest of the suite, the same API,
# runs in test-e2e. E2E_HA_TESTS=. runs all of it against this installation.
E2E_HA_TESTS := TestHA|TestHelm|TestInplacePrograms|TestRestartKeepsObjects|TestCloneSetControllerKilledMidRollout|TestCRRDaemonKilledMidRecreate|TestRBAC|TestDeploy
test-e2e-ha: build deps kube-binaries
	INPLACE_E2E_IN_CLUSTER=ha INPLACE_REPO_ROOT=$(CURDIR) $(GO) test $(GO_TEST_FLAGS) -timeout 30m -v -run '$(E2E_HA_TESTS)' ./test/e2e/... 2>&1 | tee _output/e2e-ha.log | awk -f hack/e2e-filter.awk ; \
		exit $${PIPESTATUS[0]}

## verify: gofmt, go vet, generated code up to date, docs not stale (hack/checkdocs)
verify:
	hack/verify.sh

## codegen: regenerate deepcopy, defaults, conversion, openapi, clientset, listers, informers, applyconfigurations
codegen:
	hack/update-codegen.sh

deps:
	hack/install-deps.sh

kube-binaries:
	hack/build-kube.sh

images:
	hack/build-images.sh

cluster-up: deps kube-binaries build
	hack/local-up.sh

cluster-down:
	hack/local-down.sh

clean:
	rm -rf _output/bin _output/tools
