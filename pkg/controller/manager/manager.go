package manager

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/features"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	inplaceinformers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
	"github.com/inplace-dev/inplace/pkg/util/serving"
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
	// Namespace is inplace's own namespace (Options.Namespace).
	Namespace string
	// RolloutMetrics is Options.RolloutMetrics: per-workload gauges on /metrics.
	RolloutMetrics bool
	// ImagePreDownload is Options.ImagePreDownload: CloneSets and Advanced StatefulSets pre-download the images of their
	// in-place rollouts through ImagePullJobs.
	ImagePreDownload bool
}

// Run connects to the cluster, serves health and metrics, and runs controllers while this replica
// leads. It returns when ctx ends, or with an error when leadership is lost (the process should
// exit and restart, as kube-controller-manager does, so no stale cache keeps acting).
func Run(ctx context.Context, o *Options, controllers []reconcile.Init[*Context]) error {
	features.Log(klog.FromContext(ctx))
	clients, err := serving.NewClients(o.Kubeconfig, o.QPS, o.Burst, "inplace-controller")
	if err != nil {
		return err
	}
	cc := &Context{KubeClient: clients.Kube, InplaceClient: clients.Inplace, Namespace: o.Namespace, RolloutMetrics: o.RolloutMetrics,
		ImagePreDownload: o.ImagePreDownload}

	syncing := &serving.Syncing{}
	checks := serving.Checks{Readyz: func(r *http.Request) error {
		// A standby replica is ready to take over; a leader is not while its caches sync.
		if syncing.Syncing() {
			return errors.New("leading, informer caches not synced yet")
		}
		return nil
	}}
	var elector *leaderelection.HealthzAdaptor
	if o.LeaderElect {
		// Fails when this replica leads but could not renew its lease: restart it.
		elector = leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
		checks.Healthz = elector.Check
	}
	checks.Profiling = o.Profiling
	addr, err := serving.Serve(ctx, o.BindAddress, checks)
	if err != nil {
		return err
	}
	klog.InfoS("Serving health and metrics", "address", addr.String())

	run := func(ctx context.Context) error {
		return runControllers(ctx, cc, o.Workers, controllers, syncing)
	}
	if !o.LeaderElect {
		// A controller that cannot be built, or caches that never sync, end the program with an
		// error (and a restart), not a silent exit 0.
		return run(ctx)
	}
	return runWithLeaderElection(ctx, o, clients.Kube, elector, run)
}

// runWithLeaderElection runs the controllers while this replica holds the Lease. When they fail
// to start, it gives the Lease up and returns their error: a leader that runs nothing must not
// keep the Lease from a replica that could.
func runWithLeaderElection(ctx context.Context, o *Options, kubeClient kubernetes.Interface,
	elector *leaderelection.HealthzAdaptor, run func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var runErr error // written before cancel, read after le.Run returns
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
			OnStartedLeading: func(leading context.Context) {
				klog.InfoS("Started leading", "identity", identity)
				if err := run(leading); err != nil && leading.Err() == nil {
					runErr = err
					cancel() // ReleaseOnCancel gives the Lease up
				}
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
	if runErr != nil {
		return runErr
	}
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("lost the leader election lease %s/%s", o.LeaderElectionNamespace, o.LeaderElectionName)
}

func runControllers(ctx context.Context, cc *Context, workers int, inits []reconcile.Init[*Context], syncing *serving.Syncing) error {
	syncing.Set(true)
	var stopEvents func()
	cc.Recorder, stopEvents = serving.EventRecorder(ctx, cc.KubeClient, corev1.EventSource{Component: "inplace-controller"})
	defer stopEvents()
	cc.KubeInformers = kubeinformers.NewSharedInformerFactoryWithOptions(cc.KubeClient, resync,
		kubeinformers.WithTransform(serving.DropManagedFields))
	cc.InplaceInformers = inplaceinformers.NewSharedInformerFactoryWithOptions(cc.InplaceClient, resync,
		inplaceinformers.WithTransform(serving.DropManagedFields))
	return reconcile.RunAll(ctx, cc, workers, inits,
		[]reconcile.InformerFactory{cc.KubeInformers, cc.InplaceInformers}, func() { syncing.Set(false) })
}
