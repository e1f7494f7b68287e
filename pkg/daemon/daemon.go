// Package daemon runs inplace-daemon, one per node: it connects to the node's CRI runtime and to
// the cluster, watches the Pods of its node, serves health and metrics, and runs the daemon's
// controllers (container meta and env-from-metadata restarts; more to come) until stopped.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/metrics/legacyregistry"
	_ "k8s.io/component-base/metrics/prometheus/workqueue" // workqueue metrics on /metrics
	"k8s.io/klog/v2"

	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	inplaceinformers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions"

	"github.com/inplace-dev/inplace/pkg/daemon/containermeta"
	"github.com/inplace-dev/inplace/pkg/daemon/criruntime"
)

// resync is how often informers replay their whole cache; controllers requeue on their own, so
// this only bounds how long a missed event can go unnoticed.
const resync = 10 * time.Minute

// Context is what every daemon controller is built from. KubeInformers sees only the Pods of
// this node (field selector spec.nodeName); InplaceInformers sees whole kinds, so a controller
// filters by node itself (e.g. the crr.apps.kruise.io/node-name label). The daemon starts the
// factories after all controllers registered their informers.
type Context struct {
	NodeName         string
	Runtime          criruntime.Runtime
	KubeClient       kubernetes.Interface
	InplaceClient    clientset.Interface
	KubeInformers    kubeinformers.SharedInformerFactory
	InplaceInformers inplaceinformers.SharedInformerFactory
	Recorder         record.EventRecorder
	Options          *Options
}

// Controller reconciles until ctx ends, with the given number of workers.
type Controller interface {
	Run(ctx context.Context, workers int)
}

// InitFunc builds one controller; Name is used in logs.
type InitFunc struct {
	Name string
	New  func(*Context) (Controller, error)
}

// Controllers are the daemon's controllers.
func Controllers() []InitFunc {
	return []InitFunc{
		{Name: containermeta.Name, New: func(cc *Context) (Controller, error) {
			cfg := containermeta.DefaultConfig()
			cfg.MaxStopGracePeriod = cc.Options.MaxStopGracePeriod
			cfg.EnvRestartDelay = cc.Options.EnvRestartDelay
			return containermeta.New(cc.KubeInformers.Core().V1().Pods(), cc.KubeClient, cc.Runtime, cc.Recorder, cfg)
		}},
	}
}

// Run connects to the runtime and the cluster, serves health and metrics, and runs controllers
// until ctx ends (SIGTERM); it returns once the controllers stopped.
func Run(ctx context.Context, o *Options, controllers []InitFunc) error {
	logger := klog.FromContext(ctx)
	runtime, err := criruntime.Connect(ctx, o.RuntimeEndpoint, nil)
	if err != nil {
		return err
	}
	defer runtime.Close()
	logger.Info("Connected to the container runtime", "runtime", runtime.Name(), "version", runtime.Version(), "endpoint", runtime.Endpoint())

	config, err := o.restConfig()
	if err != nil {
		return err
	}
	kubeClient, err := kubernetes.NewForConfig(config)
	if err != nil {
		return fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	inplaceClient, err := clientset.NewForConfig(config)
	if err != nil {
		return fmt.Errorf("creating the inplace client: %w", err)
	}

	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartStructuredLogging(3)
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kubeClient.CoreV1().Events("")})
	defer broadcaster.Shutdown()

	cc := &Context{
		NodeName:      o.NodeName,
		Runtime:       runtime,
		KubeClient:    kubeClient,
		InplaceClient: inplaceClient,
		KubeInformers: kubeinformers.NewSharedInformerFactoryWithOptions(kubeClient, resync,
			kubeinformers.WithTweakListOptions(func(lo *metav1.ListOptions) {
				lo.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", o.NodeName).String()
			})),
		InplaceInformers: inplaceinformers.NewSharedInformerFactory(inplaceClient, resync),
		Recorder:         broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "inplace-daemon", Host: o.NodeName}),
		Options:          o,
	}

	health := &healthChecks{runtime: runtime, syncing: true}
	listener, err := net.Listen("tcp", o.BindAddress)
	if err != nil {
		return fmt.Errorf("listening on --bind-address=%s: %w", o.BindAddress, err)
	}
	server := &http.Server{Handler: health.mux(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := server.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error(err, "Health and metrics server stopped")
		}
	}()
	defer server.Close()
	logger.Info("Serving health and metrics", "address", listener.Addr().String(), "node", o.NodeName)

	return runControllers(ctx, cc, o.Workers, controllers, health)
}

func runControllers(ctx context.Context, cc *Context, workers int, inits []InitFunc, health *healthChecks) error {
	logger := klog.FromContext(ctx)
	var built []Controller
	for _, init := range inits {
		c, err := init.New(cc)
		if err != nil {
			return fmt.Errorf("creating controller %s: %w", init.Name, err)
		}
		built = append(built, c)
		logger.Info("Created controller", "controller", init.Name)
	}
	cc.KubeInformers.Start(ctx.Done())
	cc.InplaceInformers.Start(ctx.Done())
	defer cc.KubeInformers.Shutdown()
	defer cc.InplaceInformers.Shutdown()
	synced := map[string]bool{}
	for typ, ok := range cc.KubeInformers.WaitForCacheSync(ctx.Done()) {
		synced[typ.String()] = ok
	}
	for typ, ok := range cc.InplaceInformers.WaitForCacheSync(ctx.Done()) {
		synced[typ.String()] = ok
	}
	for typ, ok := range synced {
		if !ok {
			if ctx.Err() != nil {
				return nil // stopped before the caches synced
			}
			return fmt.Errorf("informer cache of %s did not sync", typ)
		}
	}
	health.setSyncing(false)
	var wg sync.WaitGroup
	for _, c := range built {
		wg.Go(func() { c.Run(ctx, workers) })
	}
	wg.Wait()
	logger.Info("Controllers stopped")
	return nil
}

func (o *Options) restConfig() (*rest.Config, error) {
	var config *rest.Config
	var err error
	if o.Kubeconfig == "" {
		config, err = rest.InClusterConfig()
	} else {
		config, err = clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	}
	if err != nil {
		return nil, fmt.Errorf("loading the client configuration (--kubeconfig=%q): %w", o.Kubeconfig, err)
	}
	config.QPS, config.Burst = o.QPS, o.Burst
	config.UserAgent = "inplace-daemon"
	return config, nil
}

// healthChecks answers /healthz (the process is alive), /readyz (informer caches synced and
// the container runtime answers) and /metrics.
type healthChecks struct {
	runtime criruntime.Runtime
	mu      sync.Mutex
	syncing bool
}

func (h *healthChecks) setSyncing(syncing bool) {
	h.mu.Lock()
	h.syncing = syncing
	h.mu.Unlock()
}

func (h *healthChecks) mux() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	m.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		syncing := h.syncing
		h.mu.Unlock()
		if syncing {
			http.Error(w, "informer caches not synced yet", http.StatusServiceUnavailable)
			return
		}
		if err := h.runtime.Ping(r.Context()); err != nil {
			http.Error(w, fmt.Sprintf("container runtime %s at %s does not answer: %v", h.runtime.Name(), h.runtime.Endpoint(), err),
				http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	m.Handle("/metrics", legacyregistry.Handler())
	return m
}
