// Package apiserver assembles inplace-apiserver: the apps.kruise.io group with its stored kinds and
// subresources, on top of a k8s.io/apiserver generic server.
package apiserver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	restclient "k8s.io/client-go/rest"

	"github.com/inplace-dev/inplace/pkg/admission/deletionwebhook"
	"github.com/inplace-dev/inplace/pkg/admission/podwebhook"
	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/pkg/apis/policy"
	inplaceinformers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions"
	"github.com/inplace-dev/inplace/pkg/registry/apps/cloneset"
	"github.com/inplace-dev/inplace/pkg/registry/apps/containerrecreaterequest"
	"github.com/inplace-dev/inplace/pkg/registry/apps/daemonset"
	"github.com/inplace-dev/inplace/pkg/registry/apps/imagelistpulljob"
	"github.com/inplace-dev/inplace/pkg/registry/apps/imagepulljob"
	"github.com/inplace-dev/inplace/pkg/registry/apps/nodeimage"
	"github.com/inplace-dev/inplace/pkg/registry/apps/pod"
	"github.com/inplace-dev/inplace/pkg/registry/apps/sidecarset"
	"github.com/inplace-dev/inplace/pkg/registry/apps/statefulset"
	"github.com/inplace-dev/inplace/pkg/registry/apps/strategy"
	"github.com/inplace-dev/inplace/pkg/registry/policy/podunavailablebudget"
	"github.com/inplace-dev/inplace/pkg/sidecarcontrol"
	"github.com/inplace-dev/inplace/pkg/util/serving"
)

// DefaultNamespace is inplace's own namespace when $POD_NAMESPACE does not say.
const DefaultNamespace = "inplace-system"

// Config is the configuration of inplace-apiserver.
type Config struct {
	GenericConfig *genericapiserver.RecommendedConfig
	// InplaceInformers feed the built-in admission plugins. Started with the server.
	InplaceInformers inplaceinformers.SharedInformerFactory
	// FrontProxyFilter, when not nil, wraps the whole handler chain: it marks the requests
	// kube-apiserver proxied, which authentication and authorization then trust (see FrontProxy).
	FrontProxyFilter func(http.Handler) http.Handler
}

// CompletedConfig is a Config with every default filled in.
type CompletedConfig struct {
	generic genericapiserver.CompletedConfig
	// coreClient reaches the cluster's core API; nil in standalone mode.
	coreClient *restclient.Config
	informers  informers.SharedInformerFactory
	inplace    inplaceinformers.SharedInformerFactory
}

// Complete fills in the defaults of the generic server.
func (c *Config) Complete() CompletedConfig {
	chain := c.GenericConfig.BuildHandlerChainFunc
	mark := c.FrontProxyFilter
	c.GenericConfig.BuildHandlerChainFunc = func(h http.Handler, gc *genericapiserver.Config) http.Handler {
		h = emptyBodyIsEmptyObject(chain(clientMistakesAre4xx(injectKeepsPodNamespace(h)), gc))
		if mark != nil {
			h = mark(h)
		}
		return h
	}
	return CompletedConfig{
		generic:    c.GenericConfig.Complete(),
		coreClient: c.GenericConfig.ClientConfig,
		informers:  c.GenericConfig.SharedInformerFactory,
		inplace:    c.InplaceInformers,
	}
}

// Server is a running inplace-apiserver.
type Server struct {
	GenericAPIServer *genericapiserver.GenericAPIServer
}

// New creates the server and installs the apps.kruise.io and policy.kruise.io groups.
func (c CompletedConfig) New() (*Server, error) {
	generic, err := c.generic.New("inplace-apiserver", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, fmt.Errorf("creating the generic API server: %w", err)
	}
	kube, err := c.kubeClient()
	if err != nil {
		return nil, err
	}
	revisions := revisionLister(kube)
	budgets, err := podunavailablebudget.NewStorage(Scheme, c.generic.RESTOptionsGetter)
	if err != nil {
		return nil, err
	}
	charger := podunavailablebudget.NewCharger(budgets.Status)
	storage, err := c.storage(kube, revisions, charger)
	if err != nil {
		return nil, err
	}
	group := genericapiserver.NewDefaultAPIGroupInfo(apps.GroupName, Scheme, metav1.ParameterCodec, Codecs)
	group.VersionedResourcesStorageMap = storage
	if err := generic.InstallAPIGroup(&group); err != nil {
		return nil, fmt.Errorf("installing the %s API group: %w", apps.GroupName, err)
	}
	if err := generic.InstallAPIGroup(podunavailablebudget.APIGroup(Scheme, Codecs, budgets)); err != nil {
		return nil, fmt.Errorf("installing the %s API group: %w", policy.GroupName, err)
	}
	// In aggregated mode admission (namespace lifecycle, webhooks) reads the cluster through
	// these informers; nothing else starts them, and admission waits until they have synced.
	if factory := c.informers; factory != nil {
		generic.AddPostStartHookOrDie("start-core-informers", func(ctx genericapiserver.PostStartHookContext) error {
			factory.Start(ctx.Done())
			return nil
		})
	}
	// Aggregated mode: the Pod webhook (registered by a MutatingWebhookConfiguration), the
	// budget check of Pod DELETE, eviction and updates and the deletion protection of kube's
	// objects (ValidatingWebhookConfigurations).
	if c.inplace != nil && c.informers != nil && kube != nil {
		namespaces := c.informers.Core().V1().Namespaces().Lister()
		webhook := &podwebhook.Handler{
			SidecarSets: c.inplace.Apps().V1alpha1().SidecarSets().Lister(),
			NamespaceLabels: func(_ context.Context, name string) (map[string]string, error) {
				ns, err := namespaces.Get(name)
				if err != nil {
					return nil, err
				}
				return ns.Labels, nil
			},
			Revisions: revisions,
			Random:    rand.Float64,
			Now:       time.Now,
		}
		budgetCheck := &podwebhook.BudgetHandler{
			Charger: charger,
			GetPod: func(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
				return kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
			},
			Now: time.Now,
		}
		meta, err := metadata.NewForConfig(c.coreClient)
		if err != nil {
			return nil, fmt.Errorf("creating the metadata client: %w", err)
		}
		protection := &deletionwebhook.Handler{Kube: kube, Metadata: meta}
		chain := servedAhead(podwebhook.Path, webhook, generic.Handler.FullHandlerChain)
		chain = servedAhead(podwebhook.BudgetPath, budgetCheck, chain)
		generic.Handler.FullHandlerChain = servedAhead(deletionwebhook.Path, protection, chain)
	}
	// The admission plugins' informers of this group read it through the loopback client, which
	// answers only once the server serves.
	if factory := c.inplace; factory != nil {
		generic.AddPostStartHookOrDie("start-inplace-admission-informers", func(ctx genericapiserver.PostStartHookContext) error {
			factory.Start(ctx.Done())
			return nil
		})
	}
	return &Server{GenericAPIServer: generic}, nil
}

// servedAhead serves path with handler before the generic filter chain (authentication,
// authorization, priority and fairness, audit), everything else with chain. It is for the Pod
// webhooks, which kube-apiserver calls anonymously: the chain cost ~2.5 ms a request here (a bare
// TLS server answers in 0.3 ms), which every Pod creation of the cluster would pay, and the
// mutating one has nothing to protect — it reads caches, writes nothing and answers only
// AdmissionReviews (hack/bench-webhook.sh measures it). The budget check writes a budget's
// status; like OpenKruise's webhook server, it trusts whoever reaches the port with an
// AdmissionReview (at worst a forged review takes a unit of a budget for 10-20 s, its
// podbudget.UpdateTimeout or DeletionTimeout: a deletion or update waits, no Pod becomes
// unavailable). The deletion-protection webhook writes nothing; a forged review learns only
// whether a Namespace has active Pods or a CustomResourceDefinition has objects, and how many.
func servedAhead(path string, handler, chain http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			chain.ServeHTTP(w, r)
			return
		}
		defer func() {
			// Like the chain's panic filter: the connection is kept and kube-apiserver, getting
			// no answer, applies the webhook's failurePolicy (Ignore: the Pod is created as it
			// is; Fail: the deletion is refused).
			if err := recover(); err != nil {
				utilruntime.HandleError(fmt.Errorf("pod webhook: panic serving %s: %v", r.URL.Path, err))
				http.Error(w, "internal error", http.StatusInternalServerError)
			}
		}()
		handler.ServeHTTP(w, r)
	})
}

// kubeClient reaches the cluster with inplace-apiserver's own identity (--kubeconfig): the Pod
// subresources act on core Pods, the webhook and inject read namespaces and SidecarSet revisions;
// who may call them is checked by this server's authorization. nil in standalone mode.
func (c CompletedConfig) kubeClient() (kubernetes.Interface, error) {
	if c.coreClient == nil {
		return nil, nil
	}
	cc := restclient.CopyConfig(c.coreClient)
	// client-go's default of 5 requests/s would queue a burst of in-place updates behind
	// client-side throttling; every request here is a user's request waiting for its answer.
	cc.QPS, cc.Burst = 100, 200
	serving.PreferProtobuf(cc)
	serving.CountRequests(cc)
	kube, err := kubernetes.NewForConfig(cc)
	if err != nil {
		return nil, fmt.Errorf("creating the core client: %w", err)
	}
	return kube, nil
}

// Namespace is inplace's own namespace: $POD_NAMESPACE, or DefaultNamespace for a host process.
func Namespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	return DefaultNamespace
}

// revisionLister lists a SidecarSet's ControllerRevisions in inplace's namespace ($POD_NAMESPACE,
// default inplace-system, as OpenKruise keeps them in its own); nil in standalone mode.
func revisionLister(kube kubernetes.Interface) sidecarcontrol.RevisionLister {
	if kube == nil {
		return nil
	}
	namespace := Namespace()
	return func(ctx context.Context, setName string) ([]appsv1.ControllerRevision, error) {
		list, err := kube.AppsV1().ControllerRevisions(namespace).List(ctx, metav1.ListOptions{
			LabelSelector: labels.Set{sidecarcontrol.RevisionSetLabel: setName}.String()})
		if err != nil {
			return nil, err
		}
		return list.Items, nil
	}
}

// storage maps every version of apps.kruise.io, and in it every resource and subresource path, to
// its storage. A kind served in two versions has one store: the server converts each request's
// version to the internal one, so both versions read and write the same objects.
func (c CompletedConfig) storage(kube kubernetes.Interface, revisions sidecarcontrol.RevisionLister, budgets pod.Budgets) (map[string]map[string]rest.Storage, error) {
	optsGetter := c.generic.RESTOptionsGetter
	cloneSets, err := strategy.NewStorage(Scheme, optsGetter, cloneset.Kind)
	if err != nil {
		return nil, err
	}
	statefulSets, err := strategy.NewStorage(Scheme, optsGetter, statefulset.Kind)
	if err != nil {
		return nil, err
	}
	daemonSets, err := strategy.NewStorage(Scheme, optsGetter, daemonset.Kind)
	if err != nil {
		return nil, err
	}

	crrs, err := strategy.NewStorage(Scheme, optsGetter, containerrecreaterequest.Kind)
	if err != nil {
		return nil, err
	}
	imagePullJobs, err := strategy.NewStorage(Scheme, optsGetter, imagepulljob.Kind)
	if err != nil {
		return nil, err
	}
	imageListPullJobs, err := strategy.NewStorage(Scheme, optsGetter, imagelistpulljob.Kind)
	if err != nil {
		return nil, err
	}
	nodeImages, err := strategy.NewStorage(Scheme, optsGetter, nodeimage.Kind)
	if err != nil {
		return nil, err
	}
	var corePods corev1client.PodsGetter
	var namespaces corev1client.NamespacesGetter
	if kube != nil {
		corePods, namespaces = kube.CoreV1(), kube.CoreV1()
	}
	sidecarSets, err := sidecarset.NewStorage(Scheme, optsGetter, namespaces, revisions)
	if err != nil {
		return nil, err
	}
	// pods/recreate creates ContainerRecreateRequests through the same admission chain and store
	// as a direct create.
	// A resize through pods/inplaceupdate recomputes resourcesPolicy sidecars from the SidecarSets
	// the admission informers hold (aggregated mode only: standalone has no Pods).
	var listSidecarSets func() ([]*v1alpha1.SidecarSet, error)
	if c.inplace != nil {
		lister := c.inplace.Apps().V1alpha1().SidecarSets().Lister()
		listSidecarSets = func() ([]*v1alpha1.SidecarSet, error) { return lister.List(labels.Everything()) }
	}
	pods := pod.NewStorage(corePods, pod.RecreateStorage{
		Store: crrs.Main.Store, Admission: c.generic.AdmissionControl,
		ObjectInterfaces: admission.NewObjectInterfacesFromScheme(Scheme),
	}, listSidecarSets, budgets)
	v1alpha1Storage := map[string]rest.Storage{
		"clonesets":                        cloneSets.Main,
		"clonesets/status":                 cloneSets.Status,
		"clonesets/scale":                  cloneSets.Scale,
		"sidecarsets":                      sidecarSets.Main,
		"sidecarsets/status":               sidecarSets.Status,
		"sidecarsets/inject":               sidecarSets.Inject,
		"containerrecreaterequests":        crrs.Main,
		"containerrecreaterequests/status": crrs.Status,
		"pods":                             pods.Pod,
		"pods/inplaceupdate":               pods.InPlaceUpdate,
		"pods/recreate":                    pods.Recreate,
		"statefulsets":                     statefulSets.Main,
		"statefulsets/status":              statefulSets.Status,
		"statefulsets/scale":               statefulSets.Scale,
		"daemonsets":                       daemonSets.Main,
		"daemonsets/status":                daemonSets.Status,
		"imagepulljobs":                    imagePullJobs.Main,
		"imagepulljobs/status":             imagePullJobs.Status,
		"imagelistpulljobs":                imageListPullJobs.Main,
		"imagelistpulljobs/status":         imageListPullJobs.Status,
		"nodeimages":                       nodeImages.Main,
		"nodeimages/status":                nodeImages.Status,
	}
	// The kinds OpenKruise v1.9 serves at v1beta1, from the same stores: one object, two versions.
	// sidecarsets/inject is inplace's own and stays at v1alpha1.
	v1beta1Storage := map[string]rest.Storage{
		"statefulsets":             statefulSets.Main,
		"statefulsets/status":      statefulSets.Status,
		"statefulsets/scale":       statefulSets.Scale,
		"sidecarsets":              sidecarSets.Main,
		"sidecarsets/status":       sidecarSets.Status,
		"imagepulljobs":            imagePullJobs.Main,
		"imagepulljobs/status":     imagePullJobs.Status,
		"imagelistpulljobs":        imageListPullJobs.Main,
		"imagelistpulljobs/status": imageListPullJobs.Status,
		"nodeimages":               nodeImages.Main,
		"nodeimages/status":        nodeImages.Status,
		"daemonsets":               daemonSets.Main,
		"daemonsets/status":        daemonSets.Status,
		// OpenKruise's master serves ContainerRecreateRequests at v1beta1 too (v1.9 does not):
		// served here, preferred and stored at v1alpha1.
		"containerrecreaterequests":        crrs.Main,
		"containerrecreaterequests/status": crrs.Status,
		// CloneSet at v1beta1 is OpenKruise master's; it stays stored (and the controller reads
		// it) at v1alpha1, as OpenKruise v1.9 serves it only there.
		"clonesets":        cloneSets.Main,
		"clonesets/status": cloneSets.Status,
		"clonesets/scale":  cloneSets.Scale,
	}
	return map[string]map[string]rest.Storage{
		v1alpha1.SchemeGroupVersion.Version: v1alpha1Storage,
		v1beta1.SchemeGroupVersion.Version:  v1beta1Storage,
	}, nil
}
