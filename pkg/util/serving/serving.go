// Package serving is what inplace-controller and inplace-daemon both need to run as cluster
// components: clients from --kubeconfig, an Event recorder, and a plain-HTTP endpoint serving
// /healthz, /readyz and /metrics.
package serving

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	kubescheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/metrics/legacyregistry"
	// client-go's request metrics (rest_client_requests_total by code and method, request and
	// rate-limiter latency) on /metrics: how many requests a program sends, and whether its
	// --kube-api-qps holds it back or kube-apiserver answers 429.
	_ "k8s.io/component-base/metrics/prometheus/restclient"
	_ "k8s.io/component-base/metrics/prometheus/workqueue" // workqueue depth and latency on /metrics
	"k8s.io/klog/v2"

	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	inplacescheme "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned/scheme"
)

// RESTConfig loads the client configuration: kubeconfig, or the in-cluster one when empty. Its
// clients count their requests (CountRequests).
func RESTConfig(kubeconfig string, qps float32, burst int, userAgent string) (*rest.Config, error) {
	var config *rest.Config
	var err error
	if kubeconfig == "" {
		config, err = rest.InClusterConfig()
	} else {
		config, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	if err != nil {
		return nil, fmt.Errorf("loading the client configuration (--kubeconfig=%q): %w", kubeconfig, err)
	}
	config.QPS, config.Burst = qps, burst
	config.UserAgent = userAgent
	PreferProtobuf(config)
	CountRequests(config)
	return config, nil
}

// PreferProtobuf makes the clients built from config send protobuf and ask for it first, with
// JSON as the fallback, as kube-controller-manager does: both kube-apiserver and
// inplace-apiserver serve their kinds as protobuf, which is smaller and several times cheaper to
// decode than JSON (hack/bench-api.sh). Clients that cannot use protobuf (dynamic, apply) keep
// their own content types.
func PreferProtobuf(config *rest.Config) {
	config.ContentType = runtime.ContentTypeProtobuf
	config.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
}

// Checks are the health checks; a nil check always passes.
type Checks struct {
	// Healthz fails when the process should be restarted.
	Healthz func(*http.Request) error
	// Readyz fails while the process cannot do its work yet.
	Readyz func(*http.Request) error
	// Profiling also serves Go's profiles on /debug/pprof/ (--profiling).
	Profiling bool
}

// Handler serves /healthz, /readyz (503 with the check's error when it fails), /metrics and, with
// checks.Profiling, /debug/pprof/.
func Handler(checks Checks) http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("/healthz", endpoint(checks.Healthz, http.StatusInternalServerError))
	m.HandleFunc("/readyz", endpoint(checks.Readyz, http.StatusServiceUnavailable))
	m.Handle("/metrics", legacyregistry.Handler())
	if checks.Profiling {
		m.HandleFunc("/debug/pprof/", pprof.Index)
		m.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		m.HandleFunc("/debug/pprof/profile", pprof.Profile)
		m.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		m.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return m
}

func endpoint(check func(*http.Request) error, failure int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if check != nil {
			if err := check(r); err != nil {
				http.Error(w, err.Error(), failure)
				return
			}
		}
		fmt.Fprintln(w, "ok")
	}
}

// Serve listens on addr and serves Handler(checks) until ctx ends. It returns once listening.
func Serve(ctx context.Context, addr string, checks Checks) (net.Addr, error) {
	listener, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on --bind-address=%s: %w", addr, err)
	}
	server := &http.Server{Handler: Handler(checks), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := server.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.FromContext(ctx).Error(err, "Health and metrics server stopped")
		}
	}()
	go func() {
		<-ctx.Done()
		_ = server.Close()
	}()
	return listener.Addr(), nil
}

// Syncing is a readiness check that fails while informer caches sync.
type Syncing struct {
	mu      sync.Mutex
	syncing bool
}

// Set says whether caches are syncing now.
func (s *Syncing) Set(syncing bool) {
	s.mu.Lock()
	s.syncing = syncing
	s.mu.Unlock()
}

// Syncing tells whether caches are syncing now.
func (s *Syncing) Syncing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.syncing
}

// Check fails while caches sync.
func (s *Syncing) Check(*http.Request) error {
	if s.Syncing() {
		return errors.New("informer caches not synced yet")
	}
	return nil
}

// Clients are the clients every inplace component uses: core Kubernetes and apps.kruise.io,
// both from the same configuration.
type Clients struct {
	Kube    kubernetes.Interface
	Inplace clientset.Interface
}

// NewClients loads the configuration (see RESTConfig) and creates the clients.
func NewClients(kubeconfig string, qps float32, burst int, userAgent string) (Clients, error) {
	config, err := RESTConfig(kubeconfig, qps, burst, userAgent)
	if err != nil {
		return Clients{}, err
	}
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return Clients{}, fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	inplace, err := clientset.NewForConfig(config)
	if err != nil {
		return Clients{}, fmt.Errorf("creating the inplace client: %w", err)
	}
	return Clients{Kube: kube, Inplace: inplace}, nil
}

// EventRecorder writes Events as source until the returned stop is called. Its scheme knows the
// core kinds and this group's (CloneSets...), so Events can be about either.
func EventRecorder(ctx context.Context, kube kubernetes.Interface, source corev1.EventSource) (record.EventRecorder, func()) {
	eventScheme := runtime.NewScheme()
	utilruntime.Must(kubescheme.AddToScheme(eventScheme))
	utilruntime.Must(inplacescheme.AddToScheme(eventScheme))
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartStructuredLogging(3)
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	return broadcaster.NewRecorder(eventScheme, source), broadcaster.Shutdown
}
