// Package criruntime is the daemon's small client of the node's container runtime, spoken over the
// CRI (k8s.io/cri-api runtime/v1, gRPC on a unix socket): list a Pod's containers, read a
// container's environment, stop a container so that the kubelet creates it again, resolve an
// image reference to the runtime's image id, run a command in a container (a preStop hook), pull
// an image (the node's NodeImage).
//
// A container's environment is read from ContainerStatus(verbose=true): containerd (1.6 and
// later) and CRI-O return in info["info"] the OCI runtime spec the container was created with,
// whose process.env is exactly what the process got (the kubelet resolves env fieldRefs before it
// creates the container). This is read-only and needs nothing inside the container, unlike
// running `env` in it through ExecSync.
package criruntime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Labels the kubelet puts on every container it creates through the CRI.
const (
	PodUIDLabel        = "io.kubernetes.pod.uid"
	PodNameLabel       = "io.kubernetes.pod.name"
	PodNamespaceLabel  = "io.kubernetes.pod.namespace"
	ContainerNameLabel = "io.kubernetes.container.name"
)

// DefaultEndpoints are the sockets probed in order when no endpoint is given: containerd, k3s's
// containerd, CRI-O, cri-dockerd.
var DefaultEndpoints = []string{
	"/run/containerd/containerd.sock",
	"/run/k3s/containerd/containerd.sock",
	"/var/run/crio/crio.sock",
	"/var/run/cri-dockerd.sock",
}

const (
	// maxMsgSize is the largest gRPC message accepted, as the kubelet's CRI client.
	maxMsgSize = 16 * 1024 * 1024
	// probeTimeout bounds the Version call that proves a socket is a CRI runtime.
	probeTimeout = 3 * time.Second
	// callTimeout bounds every other call, except StopContainer which waits for the grace period.
	callTimeout = 10 * time.Second
)

// State is a container's state as the runtime reports it.
type State = runtimeapi.ContainerState

// The container states.
const (
	StateCreated = runtimeapi.ContainerState_CONTAINER_CREATED
	StateRunning = runtimeapi.ContainerState_CONTAINER_RUNNING
	StateExited  = runtimeapi.ContainerState_CONTAINER_EXITED
	StateUnknown = runtimeapi.ContainerState_CONTAINER_UNKNOWN
)

// Container is one container of a Pod as the runtime knows it.
type Container struct {
	// ID is the runtime's container id (without the "<runtime>://" prefix of the Pod status).
	ID string
	// Name is the container's name in the Pod spec.
	Name string
	// State is created, running, exited or unknown.
	State State
	// Attempt counts the instances of this container the kubelet created before this one: the
	// kubelet sets it to the container's restart count.
	Attempt uint32
	// CreatedAt is when the runtime created the container.
	CreatedAt time.Time
	// ImageID is the runtime's id of the image the container runs (CRI imageRef; containerd and
	// CRI-O report the image id here, while their ContainerStatus may give a repo digest).
	ImageID string
	// Labels and Annotations are those the kubelet set at creation.
	Labels      map[string]string
	Annotations map[string]string
}

// Image is an image the runtime holds.
type Image struct {
	// ID is the runtime's image id (sha256:... for containerd).
	ID string
	// RepoTags and RepoDigests are the references the runtime knows the image by.
	RepoTags, RepoDigests []string
}

// Auth is the credentials of one pull, as CRI AuthConfig carries them.
type Auth struct {
	Username, Password string
	// IdentityToken and RegistryToken are tokens a registry issued (docker config's
	// identitytoken, registrytoken).
	IdentityToken, RegistryToken string
}

// PullSandbox is the Pod sandbox metadata a pull is made for (a NodeImage's sandboxConfig):
// some runtimes pick a snapshotter or a registry mirror by it.
type PullSandbox struct {
	Labels, Annotations map[string]string
}

// PullingByAnnotation is set on every pull's sandbox config: some runtimes dereference the
// sandbox config of a pull without checking it is there, so it is never empty (as OpenKruise's
// daemon does, with its own name).
const PullingByAnnotation = "apps.kruise.io/pulling-image-by"

// ExecResult is what a command run in a container through ExecSync printed, and how it ended.
type ExecResult struct {
	Stdout, Stderr []byte
	ExitCode       int32
}

// Runtime is what the daemon needs of a container runtime.
type Runtime interface {
	// Name is the runtime's name as it reports it (containerd, cri-o, docker): the kubelet writes
	// container ids in Pod status as "<Name>://<id>".
	Name() string
	// Version is the runtime's version, as reported when connecting.
	Version() string
	// Endpoint is the socket the runtime answers on.
	Endpoint() string
	// Ping asks the runtime for its version; an error means it does not answer.
	Ping(ctx context.Context) error
	// ListPodContainers lists every container (any state) of the Pod with that UID, newest
	// attempt first.
	ListPodContainers(ctx context.Context, podUID string) ([]Container, error)
	// PodIP is the IP of the Pod's ready sandbox, "" when it has none (a Pod of the host's
	// network, or no ready sandbox).
	PodIP(ctx context.Context, podUID string) (string, error)
	// ContainerEnv is the environment the container's process was started with.
	ContainerEnv(ctx context.Context, id string) (map[string]string, error)
	// ContainerStartedAt is when the runtime started the container (zero when not started).
	ContainerStartedAt(ctx context.Context, id string) (time.Time, error)
	// StopContainer stops a container, killing it after timeout. The kubelet then creates a new
	// instance of it (restartPolicy permitting) as it does after a crash. Stopping a stopped
	// container is not an error.
	StopContainer(ctx context.Context, id string, timeout time.Duration) error
	// ExecSync runs cmd in the container and waits for it to end, killing it after timeout
	// (rounded up to whole seconds, at least one, as the runtime counts them). A command that ran
	// and failed is no error: its exit code is in the result.
	ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (ExecResult, error)
	// ImageID is the runtime's id of the image that ref (a name, name:tag, repo digest or id)
	// names on this node; "" when the runtime does not have that image.
	ImageID(ctx context.Context, ref string) (string, error)
	// ImageStatus is the node's image that ref names, nil when the runtime does not have it.
	ImageStatus(ctx context.Context, ref string) (*Image, error)
	// PullImage pulls ref (name:tag or name@digest) with auth (nil: anonymous) and returns the
	// runtime's reference of the pulled image (its id, for containerd). It blocks until the pull
	// ends: the CRI reports no progress. ctx bounds it; no timeout of its own is added.
	PullImage(ctx context.Context, ref string, auth *Auth, sandbox *PullSandbox) (string, error)
	// Close releases the connection.
	Close() error
}

// client is a Runtime over a CRI RuntimeServiceClient.
type client struct {
	name     string
	version  string
	endpoint string
	conn     *grpc.ClientConn
	rs       runtimeapi.RuntimeServiceClient
	is       runtimeapi.ImageServiceClient
}

var _ Runtime = &client{}

// Connect connects to the CRI runtime at endpoint ("unix:///path" or "/path"). With an empty
// endpoint it probes candidates (DefaultEndpoints when nil) in order: the first socket that exists
// and answers Version wins. The error lists every endpoint tried and why it was refused.
func Connect(ctx context.Context, endpoint string, candidates []string) (Runtime, error) {
	if endpoint != "" {
		c, err := dial(ctx, endpoint)
		if err != nil {
			return nil, fmt.Errorf("CRI runtime at --runtime-endpoint=%s: %w", endpoint, err)
		}
		return c, nil
	}
	if candidates == nil {
		candidates = DefaultEndpoints
	}
	var tried []string
	for _, candidate := range candidates {
		path := socketPath(candidate)
		fi, err := os.Stat(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			tried = append(tried, path+": does not exist")
			continue
		case err != nil:
			tried = append(tried, fmt.Sprintf("%s: %v", path, err))
			continue
		case fi.Mode().Type() != os.ModeSocket:
			tried = append(tried, path+": not a socket")
			continue
		}
		c, err := dial(ctx, candidate)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s: %v", path, err))
			continue
		}
		return c, nil
	}
	return nil, fmt.Errorf("no CRI runtime found (set --runtime-endpoint); tried %s", strings.Join(tried, "; "))
}

// socketPath is the file of a "unix://" endpoint.
func socketPath(endpoint string) string {
	if p, ok := strings.CutPrefix(endpoint, "unix://"); ok {
		return p
	}
	return endpoint
}

// dial connects to the socket and checks that a CRI runtime answers there.
func dial(ctx context.Context, endpoint string) (*client, error) {
	path := socketPath(endpoint)
	if path == "" || !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("endpoint %q: want unix:///absolute/path or /absolute/path", endpoint)
	}
	conn, err := grpc.NewClient("unix://"+path,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsgSize), grpc.MaxCallSendMsgSize(maxMsgSize)))
	if err != nil {
		return nil, err
	}
	c := &client{endpoint: "unix://" + path, conn: conn, rs: runtimeapi.NewRuntimeServiceClient(conn),
		is: runtimeapi.NewImageServiceClient(conn)}
	vctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	v, err := c.rs.Version(vctx, &runtimeapi.VersionRequest{})
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("Version: %w", err)
	}
	c.name, c.version = v.RuntimeName, v.RuntimeVersion
	if c.name == "" {
		_ = conn.Close()
		return nil, errors.New("Version: the runtime reports no name")
	}
	return c, nil
}

func (c *client) Name() string     { return c.name }
func (c *client) Endpoint() string { return c.endpoint }
func (c *client) Close() error     { return c.conn.Close() }

func (c *client) Version() string { return c.version }

func (c *client) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	_, err := c.rs.Version(ctx, &runtimeapi.VersionRequest{})
	return err
}

func (c *client) ListPodContainers(ctx context.Context, podUID string) ([]Container, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := c.rs.ListContainers(ctx, &runtimeapi.ListContainersRequest{
		Filter: &runtimeapi.ContainerFilter{LabelSelector: map[string]string{PodUIDLabel: podUID}},
	})
	if err != nil {
		return nil, fmt.Errorf("listing the containers of pod %s: %w", podUID, err)
	}
	containers := make([]Container, 0, len(resp.Containers))
	for _, rc := range resp.Containers {
		if rc.Labels[PodUIDLabel] != podUID {
			continue // a runtime that ignores the filter
		}
		containers = append(containers, fromCRI(rc))
	}
	SortNewestFirst(containers)
	return containers, nil
}

// fromCRI converts a CRI container.
func fromCRI(rc *runtimeapi.Container) Container {
	c := Container{
		ID:          rc.Id,
		Name:        rc.Labels[ContainerNameLabel],
		State:       rc.State,
		ImageID:     rc.ImageRef,
		Labels:      rc.Labels,
		Annotations: rc.Annotations,
	}
	if rc.Metadata != nil {
		c.Attempt = rc.Metadata.Attempt
		if c.Name == "" {
			c.Name = rc.Metadata.Name
		}
	}
	if rc.CreatedAt != 0 {
		c.CreatedAt = time.Unix(0, rc.CreatedAt)
	}
	return c
}

func (c *client) PodIP(ctx context.Context, podUID string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := c.rs.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{PodUIDLabel: podUID},
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
	}})
	if err != nil {
		return "", fmt.Errorf("listing the sandboxes of pod %s: %w", podUID, err)
	}
	for _, sb := range resp.Items {
		if sb.Labels[PodUIDLabel] != podUID || sb.State != runtimeapi.PodSandboxState_SANDBOX_READY {
			continue // a runtime that ignores the filter
		}
		st, err := c.rs.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb.Id})
		if err != nil {
			return "", fmt.Errorf("reading sandbox %s of pod %s: %w", sb.Id, podUID, err)
		}
		if n := st.GetStatus().GetNetwork(); n != nil {
			return n.Ip, nil
		}
		return "", nil
	}
	return "", nil
}

// SortNewestFirst orders containers by name, then newest instance first: higher attempt, then
// later creation.
func SortNewestFirst(containers []Container) {
	slices.SortStableFunc(containers, func(a, b Container) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		if a.Attempt != b.Attempt {
			if a.Attempt > b.Attempt {
				return -1
			}
			return 1
		}
		return b.CreatedAt.Compare(a.CreatedAt)
	})
}

// Current is the instance of the named container that counts: the running one, else the newest.
// containers are sorted newest first (SortNewestFirst, as ListPodContainers returns them).
func Current(containers []Container, name string) *Container {
	var newest *Container
	for i := range containers {
		rc := &containers[i]
		if rc.Name != name {
			continue
		}
		if rc.State == StateRunning {
			return rc
		}
		if newest == nil {
			newest = rc
		}
	}
	return newest
}

func (c *client) ContainerEnv(ctx context.Context, id string) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := c.rs.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		return nil, fmt.Errorf("status of container %s: %w", id, err)
	}
	env, err := EnvFromVerboseInfo(resp.Info)
	if err != nil {
		return nil, fmt.Errorf("environment of container %s (runtime %s): %w", id, c.name, err)
	}
	return env, nil
}

func (c *client) ContainerStartedAt(ctx context.Context, id string) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := c.rs.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		return time.Time{}, fmt.Errorf("status of container %s: %w", id, err)
	}
	if resp.Status == nil || resp.Status.StartedAt == 0 {
		return time.Time{}, nil
	}
	return time.Unix(0, resp.Status.StartedAt), nil
}

func (c *client) StopContainer(ctx context.Context, id string, timeout time.Duration) error {
	seconds := int64(timeout.Round(time.Second) / time.Second)
	// The runtime waits up to timeout for the container to exit, then kills it: leave it time.
	ctx, cancel := context.WithTimeout(ctx, time.Duration(seconds)*time.Second+callTimeout)
	defer cancel()
	if _, err := c.rs.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: seconds}); err != nil {
		return fmt.Errorf("stopping container %s: %w", id, err)
	}
	return nil
}

func (c *client) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (ExecResult, error) {
	seconds := max(int64((timeout+time.Second-1)/time.Second), 1)
	// The runtime kills the command after timeout: leave it that long to answer.
	ctx, cancel := context.WithTimeout(ctx, time.Duration(seconds)*time.Second+callTimeout)
	defer cancel()
	resp, err := c.rs.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: seconds})
	if err != nil {
		return ExecResult{}, fmt.Errorf("running %q in container %s: %w", strings.Join(cmd, " "), id, err)
	}
	return ExecResult{Stdout: resp.Stdout, Stderr: resp.Stderr, ExitCode: resp.ExitCode}, nil
}

func (c *client) ImageID(ctx context.Context, ref string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := c.is.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		return "", fmt.Errorf("status of image %s: %w", ref, err)
	}
	if resp.Image == nil {
		return "", nil
	}
	return resp.Image.Id, nil
}

func (c *client) ImageStatus(ctx context.Context, ref string) (*Image, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := c.is.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		return nil, fmt.Errorf("status of image %s: %w", ref, err)
	}
	if resp.Image == nil {
		return nil, nil
	}
	return &Image{ID: resp.Image.Id, RepoTags: resp.Image.RepoTags, RepoDigests: resp.Image.RepoDigests}, nil
}

func (c *client) PullImage(ctx context.Context, ref string, auth *Auth, sandbox *PullSandbox) (string, error) {
	req := &runtimeapi.PullImageRequest{
		Image:         &runtimeapi.ImageSpec{Image: ref},
		SandboxConfig: pullSandboxConfig(sandbox),
	}
	if auth != nil {
		req.Auth = &runtimeapi.AuthConfig{Username: auth.Username, Password: auth.Password,
			IdentityToken: auth.IdentityToken, RegistryToken: auth.RegistryToken}
	}
	resp, err := c.is.PullImage(ctx, req)
	if err != nil {
		return "", fmt.Errorf("pulling image %s: %w", ref, err)
	}
	return resp.ImageRef, nil
}

// pullSandboxConfig is the CRI sandbox config of a pull: the labels and annotations asked for,
// plus PullingByAnnotation.
func pullSandboxConfig(sandbox *PullSandbox) *runtimeapi.PodSandboxConfig {
	cfg := &runtimeapi.PodSandboxConfig{Annotations: map[string]string{}}
	if sandbox != nil {
		cfg.Labels = maps.Clone(sandbox.Labels)
		maps.Copy(cfg.Annotations, sandbox.Annotations)
	}
	cfg.Annotations[PullingByAnnotation] = "inplace-daemon"
	return cfg
}
