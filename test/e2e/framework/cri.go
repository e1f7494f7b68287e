package framework

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CRIStartedAt asks the node's container runtime when each container instance started.
func CRIStartedAt(t *testing.T, ctx context.Context, ids ...string) []time.Time {
	t.Helper()
	return criTimes(t, ctx, "started", func(st *runtimeapi.ContainerStatus) int64 { return st.StartedAt }, ids)
}

// criTimes reads one timestamp of each container instance's CRI status; a zero one fails the test.
func criTimes(t *testing.T, ctx context.Context, what string, at func(*runtimeapi.ContainerStatus) int64, ids []string) []time.Time {
	t.Helper()
	var out []time.Time
	for _, st := range CRIStatuses(t, ctx, ids...) {
		if at(st) == 0 {
			t.Fatalf("CRI reports container %s (%s) not %s", st.Id, st.Metadata.GetName(), what)
		}
		out = append(out, time.Unix(0, at(st)))
	}
	return out
}

// CRIClient connects to the local cluster's container runtime; the caller closes the connection.
func CRIClient(t *testing.T) (runtimeapi.RuntimeServiceClient, *grpc.ClientConn) {
	t.Helper()
	vars, err := ReadEnvFile(Repo + "/_output/local/env")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(vars["CONTAINER_RUNTIME_ENDPOINT"], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("connecting to the CRI runtime: %v", err)
	}
	return runtimeapi.NewRuntimeServiceClient(conn), conn
}

// CRIStatuses asks the node's container runtime for the status of container instances.
func CRIStatuses(t *testing.T, ctx context.Context, ids ...string) []*runtimeapi.ContainerStatus {
	t.Helper()
	rs, conn := CRIClient(t)
	defer conn.Close()
	var out []*runtimeapi.ContainerStatus
	for _, id := range ids {
		_, raw, _ := strings.Cut(id, "://")
		resp, err := rs.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: raw})
		if err != nil {
			t.Fatalf("CRI ContainerStatus %s: %v", id, err)
		}
		out = append(out, resp.Status)
	}
	return out
}

// WatchCRIFinished follows container instances through the node's container runtime from now on,
// every 50 ms, and records when each one finished; the function it returns waits until all have
// and returns their finish times, in the order of ids. The kubelet may remove a dead instance from
// the runtime a second after it stopped (its pod container deletor), so the times cannot be asked
// for once the test has waited for something else.
func WatchCRIFinished(t *testing.T, ctx context.Context, ids ...string) func() []time.Time {
	t.Helper()
	rs, conn := CRIClient(t)
	finished := make([]time.Time, len(ids))
	gone := map[string]bool{}
	done := make(chan error, 1)
	go func() {
		defer conn.Close()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			left := 0
			for i, id := range ids {
				if !finished[i].IsZero() || gone[id] {
					continue
				}
				_, raw, _ := strings.Cut(id, "://")
				resp, err := rs.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: raw})
				switch {
				case status.Code(err) == codes.NotFound:
					gone[id] = true
				case err != nil:
					done <- fmt.Errorf("CRI ContainerStatus %s: %w", id, err)
					return
				case resp.Status.FinishedAt != 0:
					finished[i] = time.Unix(0, resp.Status.FinishedAt)
				default:
					left++
				}
			}
			if left == 0 {
				if len(gone) > 0 {
					done <- fmt.Errorf("container instances %v left the runtime before they were seen finished", slices.Sorted(maps.Keys(gone)))
				} else {
					done <- nil
				}
				return
			}
			select {
			case <-ctx.Done():
				done <- ctx.Err()
				return
			case <-tick.C:
			}
		}
	}()
	return func() []time.Time {
		t.Helper()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(CRRTimeout):
			t.Fatalf("container instances %v not all finished within %v", ids, CRRTimeout)
		}
		return finished
	}
}

// LocalNode is a node of the local cluster and its container runtime's CRI endpoint.
type LocalNode struct{ Name, Endpoint string }

// RegistryNodes returns the registry's name and the nodes of the local cluster: both, or node 1
// alone with inplace installed in the cluster.
func RegistryNodes(t *testing.T) (string, []LocalNode) {
	t.Helper()
	vars, err := ReadEnvFile(Repo + "/_output/local/env")
	if err != nil {
		t.Fatal(err)
	}
	reg := vars["INPLACE_REGISTRY"]
	if reg == "" {
		t.Fatal("_output/local/env has no INPLACE_REGISTRY: the local cluster runs no registry (hack/local-up.d/05-registry.sh)")
	}
	nodes := []LocalNode{{vars["NODE_NAME"], vars["CONTAINER_RUNTIME_ENDPOINT"]}}
	if Node2Name == "" && InClusterMode() {
		return reg, nodes // inplace in the cluster: one node (see SecondNode)
	}
	return reg, append(nodes, LocalNode{SecondNode(t), vars["NODE2_RUNTIME_ENDPOINT"]})
}

// CRIImage is the node's image of that reference, nil when it has none (CRI ImageStatus).
func CRIImage(t *testing.T, ctx context.Context, node LocalNode, ref string) *runtimeapi.Image {
	t.Helper()
	images, conn := CRIImageClient(t, node)
	defer conn.Close()
	resp, err := images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		t.Fatalf("CRI ImageStatus %s on %s: %v", ref, node.Name, err)
	}
	return resp.GetImage()
}

// RemoveCRIImage removes the node's image of that reference. containerd's CRI removes every
// reference of the same image ID, so only images no other test uses by another name may go.
func RemoveCRIImage(ctx context.Context, node LocalNode, ref string) error {
	conn, err := grpc.NewClient(node.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = runtimeapi.NewImageServiceClient(conn).RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	return err
}

func CRIImageClient(t *testing.T, node LocalNode) (runtimeapi.ImageServiceClient, *grpc.ClientConn) {
	t.Helper()
	conn, err := grpc.NewClient(node.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("connecting to the CRI runtime of %s: %v", node.Name, err)
	}
	return runtimeapi.NewImageServiceClient(conn), conn
}
