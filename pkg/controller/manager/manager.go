package manager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	inplaceinformers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions"
)

// resync is how often informers replay their whole cache; controllers requeue on their own, so
// this only bounds how long a missed event can go unnoticed.
const resync = 10 * time.Minute

// Context is what every controller is built from: clients and shared informer factories. The
// manager starts the factories after all controllers registered their informers.
type Context struct {
	KubeClient       kubernetes.Interface
	InplaceClient    clientset.Interface
	KubeInformers    kubeinformers.SharedInformerFactory
	InplaceInformers inplaceinformers.SharedInformerFactory
	// Recorder writes Events as inplace-controller.
	Recorder record.EventRecorder
}

// Controller reconciles until ctx ends, with the given number of workers.
type Controller interface {
	Run(ctx context.Context, workers int)
}

// InitFunc builds one controller; name is used in logs.
type InitFunc struct {
	Name string
	New  func(*Context) (Controller, error)
}

// Run connects to the cluster, serves health and metrics, and runs controllers while this replica
// leads. It returns when ctx ends, or with an error when leadership is lost (the process should
// exit and restart, as kube-controller-manager does, so no stale cache keeps acting).
func Run(ctx context.Context, o *Options, controllers []InitFunc) error {
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
	cc := &Context{KubeClient: kubeClient, InplaceClient: inplaceClient}

	health := &healthChecks{}
	var elector *leaderelection.HealthzAdaptor
	if o.LeaderElect {
		elector = leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
		health.leader = elector
	}
	listener, err := net.Listen("tcp", o.BindAddress)
	if err != nil {
		return fmt.Errorf("listening on --bind-address=%s: %w", o.BindAddress, err)
	}
	server := &http.Server{Handler: health.mux(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := server.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.ErrorS(err, "Health and metrics server stopped")
		}
	}()
	defer server.Close()
	klog.InfoS("Serving health and metrics", "address", listener.Addr().String())

	run := func(ctx context.Context) {
		if err := runControllers(ctx, cc, o.Workers, controllers, health); err != nil {
			klog.ErrorS(err, "Controllers failed")
		}
	}
	if !o.LeaderElect {
		run(ctx)
		return nil
	}
	return runWithLeaderElection(ctx, o, kubeClient, elector, run)
}

func runWithLeaderElection(ctx context.Context, o *Options, kubeClient kubernetes.Interface,
	elector *leaderelection.HealthzAdaptor, run func(context.Context)) error {
	hostname, _ := os.Hostname()
	identity := hostname + "_" + string(uuid.NewUUID())
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, o.LeaderElectionNamespace, o.LeaderElectionName,
		kubeClient.CoreV1(), kubeClient.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: identity})
	if err != nil {
		return fmt.Errorf("creating the leader election lock: %w", err)
	}
	lost := make(chan struct{})
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.LeaseDuration,
		RenewDeadline:   o.RenewDeadline,
		RetryPeriod:     o.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            o.LeaderElectionName,
		WatchDog:        elector,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				klog.InfoS("Started leading", "identity", identity)
				run(ctx)
			},
			OnStoppedLeading: func() { close(lost) },
			OnNewLeader: func(leader string) {
				if leader != identity {
					klog.InfoS("Another replica leads", "leader", leader)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("setting up leader election: %w", err)
	}
	le.Run(ctx)
	<-lost
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("lost the leader election lease %s/%s", o.LeaderElectionNamespace, o.LeaderElectionName)
}

func runControllers(ctx context.Context, cc *Context, workers int, inits []InitFunc, health *healthChecks) error {
	health.setSyncing(true)
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cc.KubeClient.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	cc.Recorder = broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "inplace-controller"})
	cc.KubeInformers = kubeinformers.NewSharedInformerFactory(cc.KubeClient, resync)
	cc.InplaceInformers = inplaceinformers.NewSharedInformerFactory(cc.InplaceClient, resync)
	var built []Controller
	for _, init := range inits {
		c, err := init.New(cc)
		if err != nil {
			return fmt.Errorf("creating controller %s: %w", init.Name, err)
		}
		built = append(built, c)
		klog.InfoS("Created controller", "controller", init.Name)
	}
	cc.KubeInformers.Start(ctx.Done())
	cc.InplaceInformers.Start(ctx.Done())
	for typ, ok := range cc.KubeInformers.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("informer cache of %v did not sync", typ)
		}
	}
	for typ, ok := range cc.InplaceInformers.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("informer cache of %v did not sync", typ)
		}
	}
	health.setSyncing(false)
	var wg sync.WaitGroup
	for _, c := range built {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Run(ctx, workers)
		}()
	}
	wg.Wait()
	cc.KubeInformers.Shutdown()
	cc.InplaceInformers.Shutdown()
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
	config.UserAgent = "inplace-controller"
	return config, nil
}

// healthChecks answers /healthz (alive; and the lease is renewed when leading), /readyz (not
// ready only while leading with caches not synced yet: a standby replica is ready to take over)
// and /metrics.
type healthChecks struct {
	leader  *leaderelection.HealthzAdaptor
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
	m.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if h.leader != nil {
			if err := h.leader.Check(r); err != nil {
				http.Error(w, "leader election: "+err.Error(), http.StatusInternalServerError)
				return
			}
		}
		fmt.Fprintln(w, "ok")
	})
	m.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		h.mu.Lock()
		syncing := h.syncing
		h.mu.Unlock()
		if syncing {
			http.Error(w, "leading, informer caches not synced yet", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	m.Handle("/metrics", legacyregistry.Handler())
	return m
}
