// Package daemon runs inplace-daemon, one per node: it connects to the node's CRI runtime and to
// the cluster, watches the Pods of its node, serves health and metrics, and runs the daemon's
// controllers (container meta and env-from-metadata restarts; InPlaceUpdateReady as soon as the
// kubelet took an in-place update's new images over; the node's side of ContainerRecreateRequests;
// the image pulls its NodeImage asks for; the postStart launch barriers of ordered containers)
// until stopped.
package daemon

import (
	"context"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	inplaceinformers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/daemon/containermeta"
	"github.com/inplace-dev/inplace/pkg/daemon/containerrecreator"
	"github.com/inplace-dev/inplace/pkg/daemon/criruntime"
	"github.com/inplace-dev/inplace/pkg/daemon/imagepuller"
	"github.com/inplace-dev/inplace/pkg/daemon/inplaceready"
	"github.com/inplace-dev/inplace/pkg/daemon/launchbarrier"
	"github.com/inplace-dev/inplace/pkg/daemon/skewclock"
	"github.com/inplace-dev/inplace/pkg/features"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
	"github.com/inplace-dev/inplace/pkg/util/serving"
)

// resync is how often informers replay their whole cache; controllers requeue on their own, so
// this only bounds how long a missed event can go unnoticed.
const resync = 10 * time.Minute

// Context is what every daemon controller is built from. KubeInformers sees only the Pods of
// this node (field selector spec.nodeName); NodeCRRInformers only this node's active
// ContainerRecreateRequests (label selector, on the server); NodeImageInformers only this node's
// NodeImage (field selector metadata.name, on the server); InplaceInformers sees whole kinds, so a
// controller filters by node itself. The daemon starts the factories after all controllers
// registered their informers. Clock is the daemon's clock (shifted by --clock-skew).
type Context struct {
	NodeName         string
	Runtime          criruntime.Runtime
	KubeClient       kubernetes.Interface
	InplaceClient    clientset.Interface
	KubeInformers    kubeinformers.SharedInformerFactory
	InplaceInformers inplaceinformers.SharedInformerFactory
	NodeCRRInformers inplaceinformers.SharedInformerFactory
	// NodeImageInformers sees only the NodeImage named after this node.
	NodeImageInformers inplaceinformers.SharedInformerFactory
	Recorder           record.EventRecorder
	Clock              clock.WithTicker
	Options            *Options
}

// Controllers are the daemon's controllers.
func Controllers() []reconcile.Init[*Context] {
	return []reconcile.Init[*Context]{
		{Name: containermeta.Name, New: func(cc *Context) (reconcile.Runner, error) {
			cfg := containermeta.DefaultConfig()
			cfg.MaxStopGracePeriod = cc.Options.MaxStopGracePeriod
			cfg.EnvRestartDelay = cc.Options.EnvRestartDelay
			cfg.Clock = cc.Clock
			return containermeta.New(cc.KubeInformers.Core().V1().Pods(), cc.KubeClient, cc.Runtime, cc.Recorder, cfg)
		}},
		{Name: inplaceready.Name, New: func(cc *Context) (reconcile.Runner, error) {
			cfg := inplaceready.DefaultConfig()
			cfg.PollInterval = cc.Options.InPlaceReadyPollInterval
			cfg.Clock = cc.Clock
			return inplaceready.New(cc.KubeInformers.Core().V1().Pods(), cc.KubeClient, cc.Runtime, cfg)
		}},
		{Name: containerrecreator.Name, New: func(cc *Context) (reconcile.Runner, error) {
			cfg := containerrecreator.DefaultConfig()
			cfg.Workers = cc.Options.CRRWorkers
			cfg.MaxStopGracePeriod = cc.Options.MaxStopGracePeriod
			cfg.Clock = cc.Clock
			return containerrecreator.New(cc.NodeCRRInformers.Apps().V1alpha1().ContainerRecreateRequests(),
				cc.KubeInformers.Core().V1().Pods(), cc.KubeClient, cc.InplaceClient, cc.Runtime, cc.Recorder, cfg)
		}},
		{Name: launchbarrier.Name, New: func(cc *Context) (reconcile.Runner, error) {
			cfg := launchbarrier.DefaultConfig()
			cfg.Address = cc.Options.LaunchBarrierAddress
			cfg.NodeName = cc.NodeName
			cfg.MaxWait = cc.Options.LaunchBarrierMaxWait
			return launchbarrier.New(cc.KubeInformers.Core().V1().Pods(), cc.KubeClient, cc.Runtime, cfg)
		}},
		{Name: imagepuller.Name, New: func(cc *Context) (reconcile.Runner, error) {
			cfg := imagepuller.DefaultConfig()
			cfg.NodeName = cc.NodeName
			cfg.MaxWorkers = cc.Options.MaxPullWorkers
			cfg.Clock = cc.Clock
			return imagepuller.New(cc.NodeImageInformers.Apps().V1alpha1().NodeImages(), cc.InplaceClient, cc.KubeClient,
				cc.Runtime, cc.Recorder, cfg)
		}},
	}
}

// NodeImageInformers is an informer factory of the node's own NodeImage only: the API server
// filters NodeImages by name, so a daemon never lists or watches those of other nodes (each is
// rewritten at every pull on its node).
func NodeImageInformers(client clientset.Interface, nodeName string) inplaceinformers.SharedInformerFactory {
	selector := fields.OneTermEqualSelector("metadata.name", nodeName).String()
	return inplaceInformers(client, func(lo *metav1.ListOptions) { lo.FieldSelector = selector })
}

// NodeCRRInformers is an informer factory of the node's active ContainerRecreateRequests only:
// the API server filters them by the node-name and active labels, so the daemon never lists or
// watches the requests of the whole cluster.
func NodeCRRInformers(client clientset.Interface, nodeName string) inplaceinformers.SharedInformerFactory {
	selector := labels.SelectorFromSet(labels.Set{
		v1alpha1.ContainerRecreateRequestNodeNameKey: nodeName,
		v1alpha1.ContainerRecreateRequestActiveKey:   "true",
	}).String()
	return inplaceInformers(client, func(lo *metav1.ListOptions) { lo.LabelSelector = selector })
}

// inplaceInformers is an informer factory of apps.kruise.io kinds without managedFields, whose
// lists and watches carry what tweak sets (nil: whole kinds).
func inplaceInformers(client clientset.Interface, tweak func(*metav1.ListOptions)) inplaceinformers.SharedInformerFactory {
	opts := []inplaceinformers.SharedInformerOption{inplaceinformers.WithTransform(serving.DropManagedFields)}
	if tweak != nil {
		opts = append(opts, inplaceinformers.WithTweakListOptions(tweak))
	}
	return inplaceinformers.NewSharedInformerFactoryWithOptions(client, resync, opts...)
}

// Run connects to the runtime and the cluster, serves health and metrics, and runs controllers
// until ctx ends (SIGTERM); it returns once the controllers stopped.
func Run(ctx context.Context, o *Options, controllers []reconcile.Init[*Context]) error {
	logger := klog.FromContext(ctx)
	features.Log(logger)
	runtime, err := criruntime.Connect(ctx, o.RuntimeEndpoint, nil)
	if err != nil {
		return err
	}
	defer runtime.Close()
	logger.Info("Connected to the container runtime", "runtime", runtime.Name(), "version", runtime.Version(), "endpoint", runtime.Endpoint())

	clients, err := serving.NewClients(o.Kubeconfig, o.QPS, o.Burst, "inplace-daemon")
	if err != nil {
		return err
	}
	kubeClient, inplaceClient := clients.Kube, clients.Inplace
	recorder, stopEvents := serving.EventRecorder(ctx, kubeClient, corev1.EventSource{Component: "inplace-daemon", Host: o.NodeName})
	defer stopEvents()

	cc := &Context{
		NodeName:      o.NodeName,
		Runtime:       runtime,
		KubeClient:    kubeClient,
		InplaceClient: inplaceClient,
		KubeInformers: kubeinformers.NewSharedInformerFactoryWithOptions(kubeClient, resync,
			kubeinformers.WithTweakListOptions(func(lo *metav1.ListOptions) {
				lo.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", o.NodeName).String()
			}),
			kubeinformers.WithTransform(serving.DropManagedFields)),
		InplaceInformers:   inplaceInformers(inplaceClient, nil),
		NodeCRRInformers:   NodeCRRInformers(inplaceClient, o.NodeName),
		NodeImageInformers: NodeImageInformers(inplaceClient, o.NodeName),
		Recorder:           recorder,
		Clock:              skewclock.New(clock.RealClock{}, o.ClockSkew),
		Options:            o,
	}
	if o.ClockSkew != 0 {
		logger.Info("Clock set off for tests", "clockSkew", o.ClockSkew)
	}

	syncing := &serving.Syncing{}
	syncing.Set(true)
	checks := healthChecks(runtime, syncing)
	checks.Profiling = o.Profiling
	addr, err := serving.Serve(ctx, o.BindAddress, checks)
	if err != nil {
		return err
	}
	logger.Info("Serving health and metrics", "address", addr.String(), "node", o.NodeName)

	return runControllers(ctx, cc, o.Workers, controllers, syncing)
}

func runControllers(ctx context.Context, cc *Context, workers int, inits []reconcile.Init[*Context], syncing *serving.Syncing) error {
	if err := reconcile.RunAll(ctx, cc, workers, inits,
		[]reconcile.InformerFactory{cc.KubeInformers, cc.InplaceInformers, cc.NodeCRRInformers, cc.NodeImageInformers},
		func() { syncing.Set(false) }); err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Controllers stopped")
	return nil
}

// healthChecks: /healthz passes while the process runs; /readyz once informer caches synced and
// while the container runtime answers.
func healthChecks(runtime criruntime.Runtime, syncing *serving.Syncing) serving.Checks {
	return serving.Checks{Readyz: func(r *http.Request) error {
		if err := syncing.Check(r); err != nil {
			return err
		}
		if err := runtime.Ping(r.Context()); err != nil {
			return fmt.Errorf("container runtime %s at %s does not answer: %w", runtime.Name(), runtime.Endpoint(), err)
		}
		return nil
	}}
}
