// Package fakecri is an in-process CRI runtime for tests: a runtime/v1 RuntimeService served over
// gRPC on a unix socket, holding containers in memory. It answers Version, ListContainers,
// ContainerStatus (verbose info shaped like containerd's), StopContainer and ExecSync, and records
// calls; its image service answers ImageStatus from images added with AddImage (or pulled), and
// PullImage from a fake registry of images added with AddRemoteImage.
package fakecri

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Container is a container the fake runtime holds.
type Container struct {
	ID          string
	PodUID      string
	Name        string
	Attempt     uint32
	State       runtimeapi.ContainerState
	Created     time.Time
	ImageRef    string            // the image id, as ListContainers reports it
	Env         []string          // "K=V", as in the OCI spec's process.env
	Labels      map[string]string // extra labels besides the kubelet's pod/container labels
	Annotations map[string]string
	// InfoMode selects the verbose status: "" = containerd-like runtimeSpec + config,
	// "config" = config.envs only, "none" = no info entry.
	InfoMode string
}

// Server is the fake runtime.
type Server struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	images imageService

	// Path is the unix socket the server listens on.
	Path string

	runtimeName string
	grpcServer  *grpc.Server

	mu         sync.Mutex
	containers map[string]*Container
	stopped    []string // ids passed to StopContainer, in order
	stopGrace  []int64
	imageIDs   map[string]string // image reference -> id
	statuses   int               // ContainerStatus calls
	lists      int               // ListContainers calls
	execs      []Exec            // ExecSync calls, in order
	execFunc   ExecFunc
	stopHook   func(id string) error
	remote     map[string]string // the fake registry: image reference -> id
	pulls      []Pull            // PullImage calls, in order
	pullHook   PullHook
}

// Pull is one PullImage call.
type Pull struct {
	Ref  string
	Auth *runtimeapi.AuthConfig // nil: anonymous
	// SandboxAnnotations and SandboxLabels are the pull's sandbox config.
	SandboxAnnotations, SandboxLabels map[string]string
}

// PullHook runs at the start of every PullImage call, without the server's lock held, with the
// call's context (cancelled when the client gives up): it may block, e.g. until ctx ends, to model
// a slow pull. An error fails the call (a gRPC status error keeps its code).
type PullHook func(ctx context.Context, p Pull) error

// Exec is one ExecSync call.
type Exec struct {
	ID      string
	Cmd     []string
	Timeout int64 // seconds
}

// ExecFunc answers an ExecSync call: what the command printed and its exit code, or an error (as
// gRPC status) for a call the runtime refuses.
type ExecFunc func(id string, cmd []string) (stdout, stderr []byte, exitCode int32, err error)

// Serve starts a fake runtime reporting runtimeName on a unix socket at path.
func Serve(path, runtimeName string) (*Server, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	s := &Server{Path: path, runtimeName: runtimeName, grpcServer: grpc.NewServer(), containers: map[string]*Container{},
		imageIDs: map[string]string{}, remote: map[string]string{}}
	s.images.s = s
	runtimeapi.RegisterRuntimeServiceServer(s.grpcServer, s)
	runtimeapi.RegisterImageServiceServer(s.grpcServer, &s.images)
	go func() { _ = s.grpcServer.Serve(l) }()
	return s, nil
}

// Stop stops serving and removes the socket.
func (s *Server) Stop() {
	s.grpcServer.Stop()
	_ = os.Remove(s.Path)
}

// Endpoint is the server's endpoint in unix:// form.
func (s *Server) Endpoint() string { return "unix://" + s.Path }

// Add adds (or replaces) a container.
func (s *Server) Add(c Container) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.Created.IsZero() {
		c.Created = time.Now()
	}
	s.containers[c.ID] = &c
}

// AddImage makes ref (and the id itself) resolve to the image id in ImageStatus.
func (s *Server) AddImage(ref, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.imageIDs[ref] = id
	s.imageIDs[id] = id
}

// AddRemoteImage puts ref, of image id, in the fake registry: PullImage of ref succeeds and then
// the runtime has it.
func (s *Server) AddRemoteImage(ref, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.remote[ref] = id
}

// RemoveImage drops the runtime's image of ref (not the registry's).
func (s *Server) RemoveImage(ref string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.imageIDs, ref)
}

// SetPullHook sets the hook every PullImage call runs first (nil: none).
func (s *Server) SetPullHook(hook PullHook) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pullHook = hook
}

// Pulls is the PullImage calls, in order.
func (s *Server) Pulls() []Pull {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.pulls)
}

// SetState changes a container's state.
func (s *Server) SetState(id string, state runtimeapi.ContainerState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.containers[id]; ok {
		c.State = state
	}
}

// SetExecFunc sets how ExecSync answers; by default a command in a known container prints
// nothing and exits 0.
func (s *Server) SetExecFunc(f ExecFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.execFunc = f
}

// SetStopHook makes StopContainer call hook with the container id before it stops the container
// (without the server's lock held: hook may block, e.g. until several stops arrived). An error
// from hook fails the call (a gRPC status error keeps its code) and leaves the container as it is.
func (s *Server) SetStopHook(hook func(id string) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopHook = hook
}

// Execs is the ExecSync calls, in order.
func (s *Server) Execs() []Exec {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.execs)
}

// Stopped is the ids passed to StopContainer, in order, with the timeouts asked for.
func (s *Server) Stopped() (ids []string, timeouts []int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.stopped), slices.Clone(s.stopGrace)
}

// StatusCalls is how many ContainerStatus calls were answered.
func (s *Server) StatusCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.statuses
}

// ListCalls is how many ListContainers calls were answered.
func (s *Server) ListCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lists
}

// Version answers with the runtime name given to Serve.
func (s *Server) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: s.runtimeName, RuntimeVersion: "fake", RuntimeApiVersion: "v1"}, nil
}

func (c *Container) labels() map[string]string {
	l := map[string]string{
		"io.kubernetes.pod.uid":        c.PodUID,
		"io.kubernetes.container.name": c.Name,
	}
	for k, v := range c.Labels {
		l[k] = v
	}
	return l
}

func (c *Container) toCRI() *runtimeapi.Container {
	return &runtimeapi.Container{
		Id:          c.ID,
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: c.Attempt},
		State:       c.State,
		CreatedAt:   c.Created.UnixNano(),
		ImageRef:    c.ImageRef,
		Labels:      c.labels(),
		Annotations: c.Annotations,
	}
}

// ListContainers filters by id, state and labels, as a CRI runtime does.
func (s *Server) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists++
	resp := &runtimeapi.ListContainersResponse{}
	f := req.GetFilter()
next:
	for _, c := range s.containers {
		if f.GetId() != "" && f.GetId() != c.ID {
			continue
		}
		if f.GetState() != nil && f.GetState().State != c.State {
			continue
		}
		labels := c.labels()
		for k, v := range f.GetLabelSelector() {
			if labels[k] != v {
				continue next
			}
		}
		resp.Containers = append(resp.Containers, c.toCRI())
	}
	return resp, nil
}

// ContainerStatus answers with a containerd-like verbose info entry.
func (s *Server) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statuses++
	c, ok := s.containers[req.ContainerId]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "container %q not found", req.ContainerId)
	}
	resp := &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{
		Id: c.ID, Metadata: &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: c.Attempt},
		State: c.State, CreatedAt: c.Created.UnixNano(), Labels: c.labels(), Annotations: c.Annotations,
	}}
	if !req.Verbose || c.InfoMode == "none" {
		return resp, nil
	}
	type kv struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	}
	var envs []kv
	for _, e := range c.Env {
		if k, v, ok := strings.Cut(e, "="); ok {
			envs = append(envs, kv{k, v})
		}
	}
	info := map[string]any{
		"sandboxID": "sandbox-" + c.PodUID,
		"pid":       4242,
		"config":    map[string]any{"metadata": map[string]any{"name": c.Name, "attempt": c.Attempt}, "envs": envs},
	}
	if c.InfoMode == "" {
		info["runtimeSpec"] = map[string]any{"ociVersion": "1.0.2", "process": map[string]any{
			"env": append([]string{"PATH=/usr/bin:/bin", "HOSTNAME=fake"}, c.Env...),
		}}
	}
	b, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	resp.Info = map[string]string{"info": string(b)}
	return resp, nil
}

// StopContainer calls the stop hook, then marks the container exited and records the call.
func (s *Server) StopContainer(_ context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	s.mu.Lock()
	hook := s.stopHook
	s.mu.Unlock()
	if hook != nil {
		if err := hook(req.ContainerId); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.containers[req.ContainerId]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "container %q not found", req.ContainerId)
	}
	s.stopped = append(s.stopped, req.ContainerId)
	s.stopGrace = append(s.stopGrace, req.Timeout)
	c.State = runtimeapi.ContainerState_CONTAINER_EXITED
	return &runtimeapi.StopContainerResponse{}, nil
}

// ExecSync records the call and answers with the ExecFunc; NotFound for an unknown container.
func (s *Server) ExecSync(_ context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	s.mu.Lock()
	_, ok := s.containers[req.ContainerId]
	s.execs = append(s.execs, Exec{ID: req.ContainerId, Cmd: slices.Clone(req.Cmd), Timeout: req.Timeout})
	f := s.execFunc
	s.mu.Unlock()
	if !ok {
		return nil, status.Errorf(codes.NotFound, "container %q not found", req.ContainerId)
	}
	if f == nil {
		return &runtimeapi.ExecSyncResponse{}, nil
	}
	stdout, stderr, code, err := f(req.ContainerId, req.Cmd)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ExecSyncResponse{Stdout: stdout, Stderr: stderr, ExitCode: code}, nil
}

// imageService is the fake's CRI image service (a separate type: its method names would clash
// with the runtime service's).
type imageService struct {
	runtimeapi.UnimplementedImageServiceServer
	s *Server
}

// ImageStatus answers with the id AddImage gave the reference; no image when it is unknown, as a
// CRI runtime does.
func (is *imageService) ImageStatus(_ context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	is.s.mu.Lock()
	defer is.s.mu.Unlock()
	id, ok := is.s.imageIDs[req.GetImage().GetImage()]
	if !ok {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	var tags []string
	for ref, refID := range is.s.imageIDs {
		if refID == id && ref != id {
			tags = append(tags, ref)
		}
	}
	slices.Sort(tags)
	return &runtimeapi.ImageStatusResponse{Image: &runtimeapi.Image{Id: id, RepoTags: tags}}, nil
}

// PullImage records the call, runs the pull hook, then "pulls" the image from the fake registry:
// the runtime has it afterwards under ref. A reference the registry lacks fails with NotFound and
// containerd's words ("failed to resolve reference ...: not found").
func (is *imageService) PullImage(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	ref := req.GetImage().GetImage()
	p := Pull{Ref: ref, Auth: req.GetAuth(), SandboxAnnotations: req.GetSandboxConfig().GetAnnotations(),
		SandboxLabels: req.GetSandboxConfig().GetLabels()}
	is.s.mu.Lock()
	is.s.pulls = append(is.s.pulls, p)
	hook := is.s.pullHook
	is.s.mu.Unlock()
	if hook != nil {
		if err := hook(ctx, p); err != nil {
			return nil, err
		}
	}
	is.s.mu.Lock()
	defer is.s.mu.Unlock()
	id, ok := is.s.remote[ref]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "failed to pull and unpack image %q: failed to resolve reference %q: %s: not found", ref, ref, ref)
	}
	is.s.imageIDs[ref] = id
	is.s.imageIDs[id] = id
	return &runtimeapi.PullImageResponse{ImageRef: id}, nil
}

// String describes the server.
func (s *Server) String() string { return fmt.Sprintf("fake CRI %s at %s", s.runtimeName, s.Path) }
