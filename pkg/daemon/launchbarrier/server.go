// Package launchbarrier answers the postStart barrier hooks of ordered containers (see package
// github.com/inplace-dev/inplace/pkg/launchpriority): the kubelet sends GET
// http://127.0.0.1:<port>/launch-barrier/v1/<namespace>/<pod>/<container> when it has started the
// last container of a priority, and starts the next container only once that answers. The server
// answers once every container of that priority and above is ready, as the kubelet would judge
// it (package containerprobe), since the kubelet publishes nothing of the Pod meanwhile.
//
// It answers 200 on every path but the wait itself: any other answer would make the kubelet kill
// the container. So it lets the Pod go on at once when there is nothing to hold back (the Pod is
// not on this node or unknown, its lower containers started before: a later restart, an in-place
// update) or nothing to wait for (a container it waits on does not run, or its startup probe
// failed: the kubelet cannot start it again while the hook runs), when the Pod is being deleted
// (the kubelet sends the hook with no deadline and cannot stop the Pod before it is answered),
// and after MaxWait at most. It listens on loopback only.
package launchbarrier

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/daemon/containerprobe"
	"github.com/inplace-dev/inplace/pkg/daemon/criruntime"
	"github.com/inplace-dev/inplace/pkg/launchpriority"
)

// Name is the server's name among the daemon's controllers.
const Name = "launchbarrier"

// Config is the server's settings.
type Config struct {
	// Address is the loopback host:port the kubelet's hooks reach (the port the Pod webhook
	// writes in them); empty: no hook is answered.
	Address string
	// NodeName is this daemon's node.
	NodeName string
	// MaxWait bounds a hook's wait: then it answers anyway.
	MaxWait time.Duration
	// MaxInFlight bounds the hooks waiting at once; one more is answered at once.
	MaxInFlight int
}

// DefaultConfig is the daemon's default.
func DefaultConfig() Config {
	return Config{
		Address:     net.JoinHostPort(launchpriority.HookHost, fmt.Sprint(launchpriority.DefaultHookPort)),
		MaxWait:     10 * time.Minute,
		MaxInFlight: 1024,
	}
}

// Server answers barrier hooks.
type Server struct {
	cfg     Config
	pods    corelisters.PodLister
	kube    kubernetes.Interface
	runtime criruntime.Runtime
	prober  *containerprobe.Prober
	slots   chan struct{}
}

// New returns the server; it reads Pods from the node's Pod informer, else from kube.
func New(pods coreinformers.PodInformer, kube kubernetes.Interface, runtime criruntime.Runtime, cfg Config) (*Server, error) {
	if err := loopback(cfg.Address); cfg.Address != "" && err != nil {
		return nil, fmt.Errorf("launch barrier address %q: %w", cfg.Address, err)
	}
	exec := func(ctx context.Context, id string, cmd []string, timeout time.Duration) (int32, error) {
		res, err := runtime.ExecSync(ctx, id, cmd, timeout)
		return res.ExitCode, err
	}
	return &Server{
		cfg:     cfg,
		pods:    pods.Lister(),
		kube:    kube,
		runtime: runtime,
		prober:  containerprobe.New(exec),
		slots:   make(chan struct{}, max(cfg.MaxInFlight, 1)),
	}, nil
}

// loopback checks that address is a loopback IP and port: the kubelet calls it from the node.
func loopback(address string) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return errors.New("want a loopback IP")
	}
	return nil
}

// Run serves until ctx ends (workers is unused: every hook has its own goroutine, up to
// MaxInFlight).
func (s *Server) Run(ctx context.Context, _ int) {
	logger := klog.FromContext(ctx)
	if s.cfg.Address == "" {
		logger.Info("Not answering launch barrier hooks (no address)")
		return
	}
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", s.cfg.Address)
	if err != nil {
		logger.Error(err, "Not answering launch barrier hooks: the kubelet will count them as failed", "address", s.cfg.Address)
		return
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	logger.Info("Answering launch barrier hooks", "address", l.Addr().String())
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Error(err, "Serving launch barrier hooks")
	}
}

// ServeHTTP answers one hook: 200 once the wait is over, whatever ended it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	namespace, pod, container, ok := launchpriority.ParseHookPath(r.URL.Path)
	logger := klog.FromContext(r.Context()).WithValues("namespace", namespace, "pod", pod, "container", container)
	switch {
	case !ok:
		logger.Info("Not a launch barrier hook: let it go", "path", r.URL.Path)
	case !s.take():
		logger.Info("Too many launch barrier hooks waiting: let this one go", "maxInFlight", s.cfg.MaxInFlight)
	default:
		defer s.give()
		ctx, cancel := context.WithTimeout(klog.NewContext(r.Context(), logger), s.cfg.MaxWait)
		defer cancel()
		start := time.Now()
		why, err := s.wait(ctx, namespace, pod, container)
		switch {
		case r.Context().Err() != nil:
			logger.V(2).Info("The kubelet gave up the launch barrier hook", "after", time.Since(start))
			return
		case err != nil:
			logger.Error(err, "Launch barrier released without waiting further", "after", time.Since(start))
		default:
			logger.V(2).Info("Launch barrier released", "why", why, "after", time.Since(start))
		}
	}
	w.WriteHeader(http.StatusOK)
}

func (s *Server) take() bool {
	select {
	case s.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

func (s *Server) give() { <-s.slots }

// wait returns when the hook of the container may answer, saying why; an error says what cut
// the wait short.
func (s *Server) wait(ctx context.Context, namespace, name, container string) (string, error) {
	pod, err := s.pod(ctx, namespace, name)
	if err != nil {
		return "", err
	}
	if pod == nil {
		return "the Pod is unknown", nil
	}
	if pod.Spec.NodeName != s.cfg.NodeName {
		return "the Pod is not on this node", nil
	}
	gate, ok := launchpriority.GateOf(pod, container)
	if !ok {
		return "the container has no launch barrier", nil
	}
	containers, err := s.runtime.ListPodContainers(ctx, string(pod.UID))
	if err != nil {
		return "", err
	}
	if criruntime.Current(containers, container) == nil {
		// The informer's Pod is an older one of the same name (a StatefulSet's, recreated): the
		// API has the one the kubelet runs.
		return s.waitFresh(ctx, namespace, name, container)
	}
	return s.waitGate(ctx, pod, gate)
}

// waitGate waits until every container of the gate is ready.
func (s *Server) waitGate(ctx context.Context, pod *corev1.Pod, gate launchpriority.Gate) (string, error) {
	containers, err := s.runtime.ListPodContainers(ctx, string(pod.UID))
	if err != nil {
		return "", err
	}
	if started := anyCreated(containers, gate.Later); started != "" {
		return "container " + started + " of a lower priority started before", nil
	}
	ip, err := s.runtime.PodIP(ctx, string(pod.UID))
	if err != nil {
		return "", err
	}
	for _, c := range gate.Wait {
		if err := s.waitReady(ctx, pod, c, ip); err != nil {
			return "", err
		}
	}
	return "every container of its priority and above is ready", nil
}

// waitFresh is wait with the Pod read from the API.
func (s *Server) waitFresh(ctx context.Context, namespace, name, container string) (string, error) {
	pod, err := s.podFromAPI(ctx, namespace, name)
	if err != nil || pod == nil {
		return "the Pod is unknown", err
	}
	gate, ok := launchpriority.GateOf(pod, container)
	if !ok || pod.Spec.NodeName != s.cfg.NodeName {
		return "the container has no launch barrier on this node", nil
	}
	return s.waitGate(ctx, pod, gate)
}

// pod is the Pod from the node's informer, else from the API (not seen yet, or an older Pod of
// the same name); nil when it does not exist.
func (s *Server) pod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	if pod, err := s.pods.Pods(namespace).Get(name); err == nil && pod.DeletionTimestamp == nil {
		return pod, nil
	}
	return s.podFromAPI(ctx, namespace, name)
}

// podFromAPI reads the Pod from the API; nil when it does not exist.
func (s *Server) podFromAPI(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	pod, err := s.kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading pod %s/%s: %w", namespace, name, err)
	}
	return pod, nil
}

// anyCreated is the first of names the runtime has a container of, "" when none.
func anyCreated(containers []criruntime.Container, names []string) string {
	for _, n := range names {
		if criruntime.Current(containers, n) != nil {
			return n
		}
	}
	return ""
}

// waitReady waits until the Pod's container is ready, as the kubelet judges it.
func (s *Server) waitReady(ctx context.Context, pod *corev1.Pod, name, podIP string) error {
	spec := specOf(pod, name)
	containers, err := s.runtime.ListPodContainers(ctx, string(pod.UID))
	if err != nil {
		return err
	}
	cur := criruntime.Current(containers, name)
	if cur == nil || cur.State != criruntime.StateRunning {
		return fmt.Errorf("container %s: %w", name, containerprobe.ErrNotRunning)
	}
	id := cur.ID
	// initialDelaySeconds counts from the container's start, as the kubelet counts it (the
	// runtime's list has only the creation, which can come hundreds of milliseconds earlier on a
	// busy node); the creation when the runtime does not say.
	started := cur.CreatedAt
	if at, err := s.runtime.ContainerStartedAt(ctx, id); err == nil && !at.IsZero() {
		started = at
	}
	return s.prober.WaitReady(ctx, containerprobe.Target{
		Container: spec,
		ID:        id,
		PodIP:     podIP,
		StartedAt: started,
		Running: func(ctx context.Context) (bool, error) {
			// The kubelet sends the hook without a deadline and cannot stop the Pod before it
			// is answered: a Pod being deleted ends the wait.
			if s.deleted(ctx, pod) {
				return false, errDeleted
			}
			containers, err := s.runtime.ListPodContainers(ctx, string(pod.UID))
			if err != nil {
				return false, err
			}
			c := criruntime.Current(containers, name)
			return c != nil && c.ID == id && c.State == criruntime.StateRunning, nil
		},
	})
}

// errDeleted ends the wait of a Pod being deleted.
var errDeleted = errors.New("the Pod is being deleted")

// deleted is true when the Pod is being deleted, or gone (asked to the API when the node's
// informer does not have it: it may not have seen it yet).
func (s *Server) deleted(ctx context.Context, pod *corev1.Pod) bool {
	cur, err := s.pods.Pods(pod.Namespace).Get(pod.Name)
	if apierrors.IsNotFound(err) || (err == nil && cur.UID != pod.UID) {
		if cur, err = s.podFromAPI(ctx, pod.Namespace, pod.Name); err != nil {
			return false
		}
		if cur == nil || cur.UID != pod.UID {
			return true
		}
	}
	return err == nil && cur.DeletionTimestamp != nil
}

func specOf(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return &corev1.Container{Name: name}
}
