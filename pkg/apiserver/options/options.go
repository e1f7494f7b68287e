// Package options turns inplace-apiserver's flags into a running server: it picks the mode
// (standalone or aggregated), starts the embedded etcd when no --etcd-servers is given, and runs
// the generic API server until its context ends.
package options

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	basecompatibility "k8s.io/component-base/compatibility"
	baseversion "k8s.io/component-base/version"
	"k8s.io/klog/v2"
	netutils "k8s.io/utils/net"

	"github.com/inplace-dev/inplace/pkg/admission/appsinitializer"
	"github.com/inplace-dev/inplace/pkg/admission/builtin"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apiserver"
	"github.com/inplace-dev/inplace/pkg/etcd"
	"github.com/inplace-dev/inplace/pkg/features"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	inplaceinformers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions"
	generatedopenapi "github.com/inplace-dev/inplace/pkg/generated/openapi"
	"github.com/inplace-dev/inplace/pkg/registry/cachedget"
	"github.com/inplace-dev/inplace/pkg/util/memtrim"
)

const (
	// ModeStandalone serves on loopback with no authentication and no cluster behind it.
	ModeStandalone = "standalone"
	// ModeAggregated serves behind kube-apiserver's aggregator with delegated authn/authz.
	ModeAggregated = "aggregated"

	// etcdPathPrefix gives kube-style keys: /registry/<group>/<resource>/<namespace>/<name>.
	etcdPathPrefix = "/registry"
	// embeddedEtcdPlaceholder stands in --etcd-servers until the embedded etcd has a URL.
	embeddedEtcdPlaceholder = "http://embedded-etcd.invalid"
)

// Options are the settings of inplace-apiserver.
type Options struct {
	Recommended *genericoptions.RecommendedOptions
	// ServerRun holds the generic server's own settings: in-flight limits, request timeouts and
	// the graceful shutdown (--shutdown-delay-duration keeps serving while the endpoint is removed).
	ServerRun *genericoptions.ServerRunOptions
	// Mode is standalone or aggregated.
	Mode string
	// DataDir holds the embedded etcd's data and the self-signed serving certificate.
	DataDir string
	// EmbeddedEtcdPort is the loopback client port of the embedded etcd; 0 picks a free one.
	EmbeddedEtcdPort int
	// EmbeddedEtcdUnsafeNoFsync skips fsync in the embedded etcd (tests only).
	EmbeddedEtcdUnsafeNoFsync bool
	// EmbeddedEtcdDefrag rewrites the embedded etcd's database without its free pages when the
	// server is idle and the file mostly free or much grown (see etcd.DefragPolicy).
	EmbeddedEtcdDefrag bool
	// EmbeddedEtcdHeartbeatInterval is the embedded etcd's raft tick (its election timeout is
	// five of them); EmbeddedEtcdBackendBatchInterval how long its applied writes may wait before
	// they are committed to its database file. See etcd.DefaultHeartbeatInterval and
	// etcd.DefaultBackendBatchInterval for why they are longer than etcd's defaults.
	EmbeddedEtcdHeartbeatInterval    time.Duration
	EmbeddedEtcdBackendBatchInterval time.Duration
	// EmbeddedEtcdGetsFromCache answers GETs from the watch cache once it holds the object's last
	// write, which the embedded etcd tells in process (see cachedget).
	EmbeddedEtcdGetsFromCache bool
	// TrustFrontProxyAuthorization allows requests kube-apiserver proxied without asking it again
	// (aggregated mode; see apiserver.FrontProxy).
	TrustFrontProxyAuthorization bool
	// TrimIdleMemory returns the heap's free memory to the system when a busy server turns idle
	// (see memtrim).
	TrimIdleMemory bool

	// FeatureGates is --feature-gates: OpenKruise's gates (pkg/features) and the generic server's
	// own, unknown names ignored.
	FeatureGates *features.Flag

	componentGlobals basecompatibility.ComponentGlobalsRegistry
	// inplaceInformers feed the admission plugins (set while applying options).
	inplaceInformers inplaceinformers.SharedInformerFactory
	// standaloneDisabledPlugins is --disable-admission-plugins in standalone mode, whose generic
	// admission options Complete drops.
	standaloneDisabledPlugins []string
}

// NewOptions returns the defaults: standalone, embedded etcd in ./inplace-data, port 8443.
func NewOptions() *Options {
	o := &Options{
		Recommended: genericoptions.NewRecommendedOptions(etcdPathPrefix,
			apiserver.Codecs.LegacyCodec(v1alpha1.SchemeGroupVersion)),
		Mode:             ModeStandalone,
		DataDir:          "inplace-data",
		componentGlobals: compatibility.DefaultComponentGlobalsRegistry,

		TrustFrontProxyAuthorization: true,
		TrimIdleMemory:               true,
		EmbeddedEtcdDefrag:           true,
		EmbeddedEtcdGetsFromCache:    true,

		EmbeddedEtcdHeartbeatInterval:    etcd.DefaultHeartbeatInterval,
		EmbeddedEtcdBackendBatchInterval: etcd.DefaultBackendBatchInterval,
	}
	o.ServerRun = genericoptions.NewServerRunOptionsForComponent(basecompatibility.DefaultKubeComponent, o.componentGlobals)
	// Watches end within 5 s of SIGTERM instead of the default minute: kube-controller-manager
	// always holds some, and a Pod or a script waiting on the stop would otherwise kill the
	// server before the embedded etcd is closed cleanly.
	o.ServerRun.ShutdownWatchTerminationGracePeriod = 5 * time.Second
	// Store each kind at its storage version, whatever version a client wrote.
	o.Recommended.Etcd.StorageConfig.EncodeVersioner = apiserver.StorageVersioner
	o.Recommended.SecureServing.BindPort = 8443
	// Objects go to etcd as protobuf, as kube-apiserver stores its own: a third of JSON's size and
	// several times cheaper to decode, which every write pays again in the watch cache.
	o.Recommended.Etcd.DefaultStorageMediaType = runtime.ContentTypeProtobuf
	// MutatingAdmissionPolicy needs its API served by the cluster, which Kubernetes 1.35 does not do
	// by default; with the plugin on, /readyz would never pass there. --enable-admission-plugins
	// turns it back on for clusters that serve admissionregistration.k8s.io MutatingAdmissionPolicy.
	o.Recommended.Admission.DisablePlugins = append(o.Recommended.Admission.DisablePlugins, "MutatingAdmissionPolicy")
	// API Priority and Fairness is off by default (--enable-priority-and-fairness turns it on):
	// the clients of an aggregated server reach it through kube-apiserver, whose own APF has
	// admitted the request and holds its seat until the proxied answer is back, so a second
	// queue here would only queue it again. What APF costs an idle server: watches of the
	// cluster's FlowSchemas and PriorityLevelConfigurations, its config worker (every second),
	// its borrowing adjustment (every 10 s) and its queue's metrics loop (twice a second): 15 of
	// the idle server's ~285 context switches per second on the local cluster
	// (docs/benchmarks.md, hack/bench-idle.sh). Without it
	// the generic server's max-in-flight limits (--max-requests-inflight,
	// --max-mutating-requests-inflight) bound what it serves at once, also for the requests
	// that reach it directly (kube-apiserver's availability and OpenAPI checks); its own
	// loopback client and the Pod webhook (served ahead of the filter chain) were never
	// queued by APF.
	o.Recommended.Features.EnablePriorityAndFairness = false
	// The generic server reads feature gates and the effective version from this registry.
	_, _ = o.componentGlobals.ComponentGlobalsOrRegister(basecompatibility.DefaultKubeComponent,
		basecompatibility.NewEffectiveVersionFromString(baseversion.DefaultKubeBinaryVersion, "", ""),
		utilfeature.DefaultMutableFeatureGate)
	return o
}

// AddFlags adds every flag of inplace-apiserver to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Mode, "mode", o.Mode, "standalone: loopback only, no authentication, no cluster needed; "+
		"aggregated: behind kube-apiserver (APIService), with delegated authentication and authorization.")
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "Directory of the embedded etcd's data and of the self-signed serving certificate.")
	fs.IntVar(&o.EmbeddedEtcdPort, "embedded-etcd-port", o.EmbeddedEtcdPort, "Loopback client port of the embedded etcd (used when --etcd-servers is empty); 0 picks a free port.")
	fs.BoolVar(&o.TrustFrontProxyAuthorization, "authorization-trust-front-proxy", o.TrustFrontProxyAuthorization,
		"Aggregated mode: allow a request that kube-apiserver proxied (its client certificate is the front proxy's, by the "+
			"requestheader CA and allowed names) without a SubjectAccessReview, since kube-apiserver authorized it with the same "+
			"attributes before proxying it. Requests made to this server directly are authorized by SubjectAccessReview either way.")
	fs.BoolVar(&o.TrimIdleMemory, "trim-idle-memory", o.TrimIdleMemory,
		"Return the heap's free memory to the system once the server turns idle after a busy period (a minute or less of "+
			"little allocation after 512 MiB allocated): without it the Go runtime keeps a burst's memory while the server stays idle.")
	fs.BoolVar(&o.EmbeddedEtcdDefrag, "embedded-etcd-defrag", o.EmbeddedEtcdDefrag,
		"Defragment the embedded etcd's database when no write came for a minute, its history is compacted, and it is at least 32 MiB "+
			"and half free or doubled since its last defragmentation, "+
			"as operators run `etcdctl defrag` on their etcd: without it the file and its memory map keep the size of the "+
			"largest burst of history. It blocks the embedded etcd while it copies the data in use (39 ms here for a 35 MB file holding 77 KB; longer the more is in use).")
	fs.DurationVar(&o.EmbeddedEtcdHeartbeatInterval, "embedded-etcd-heartbeat-interval", o.EmbeddedEtcdHeartbeatInterval,
		"Raft tick of the embedded etcd (etcd's --heartbeat-interval; its election timeout is five ticks). Each tick wakes the "+
			"process; a shorter one makes the embedded etcd lead sooner at start (within five ticks).")
	fs.DurationVar(&o.EmbeddedEtcdBackendBatchInterval, "embedded-etcd-backend-batch-interval", o.EmbeddedEtcdBackendBatchInterval,
		"Longest time the embedded etcd keeps applied writes in its open database transaction before committing them to the file "+
			"(etcd's --backend-batch-interval). Writes are durable once in its write-ahead log either way; each interval wakes the process.")
	fs.BoolVar(&o.EmbeddedEtcdGetsFromCache, "embedded-etcd-gets-from-cache", o.EmbeddedEtcdGetsFromCache,
		"Answer a GET of one object from the watch cache once it holds the object's last write, which the embedded etcd tells "+
			"in process, instead of reading the object from etcd: as fresh, and without the request to etcd and the decoding "+
			"(false: every GET without resourceVersion reads etcd, as with --etcd-servers).")
	fs.BoolVar(&o.EmbeddedEtcdUnsafeNoFsync, "embedded-etcd-unsafe-no-fsync", false, "Skip fsync in the embedded etcd. Data may be lost on a crash: tests only.")
	_ = fs.MarkHidden("embedded-etcd-unsafe-no-fsync")
	o.Recommended.AddFlags(fs)
	o.ServerRun.AddUniversalFlags(fs) // with --feature-gates and --emulated-version
	// --feature-gates takes OpenKruise's gates too (the string OpenKruise's chart passes), and
	// ignores names neither knows.
	var err error
	if o.FeatureGates, err = features.WrapFlag(fs, utilfeature.DefaultMutableFeatureGate); err != nil {
		panic(err) // the generic server's flags changed: a programming error
	}
}

// embeddedEtcd tells whether inplace-apiserver runs its own etcd.
func (o *Options) embeddedEtcd() bool {
	servers := o.Recommended.Etcd.StorageConfig.Transport.ServerList
	return len(servers) == 0 || (len(servers) == 1 && servers[0] == embeddedEtcdPlaceholder)
}

// Complete applies the mode: standalone turns off everything that needs a cluster.
func (o *Options) Complete() error {
	if o.embeddedEtcd() {
		o.Recommended.Etcd.StorageConfig.Transport.ServerList = []string{embeddedEtcdPlaceholder}
	}
	if o.Recommended.SecureServing.ServerCert.CertDirectory == "" ||
		o.Recommended.SecureServing.ServerCert.CertDirectory == "apiserver.local.config/certificates" {
		o.Recommended.SecureServing.ServerCert.CertDirectory = filepath.Join(o.DataDir, "certificates")
	}
	if o.Mode != ModeStandalone {
		// inplace's own admission plugins run in the server's chain, after the generic ones.
		builtin.Register(o.Recommended.Admission.Plugins)
		o.Recommended.Admission.RecommendedPluginOrder = append(o.Recommended.Admission.RecommendedPluginOrder, builtin.Names()...)
		o.Recommended.ExtraAdmissionInitializers = o.admissionInitializers
		return nil
	}
	// With no cluster there is nobody to delegate authentication or authorization to, the generic
	// admission plugins (namespace lifecycle, webhooks, policies) read the cluster, and
	// priority-and-fairness needs a core client: serve loopback only, with all of it off. inplace's
	// own plugins that need no cluster still run (standaloneAdmission).
	if o.Recommended.SecureServing.BindAddress.IsUnspecified() {
		o.Recommended.SecureServing.BindAddress = netutils.ParseIPSloppy("127.0.0.1")
	}
	o.Recommended.Authentication = nil
	o.Recommended.Authorization = nil
	o.Recommended.CoreAPI = nil
	if o.Recommended.Admission != nil {
		o.standaloneDisabledPlugins = o.Recommended.Admission.DisablePlugins
	}
	o.Recommended.Admission = nil
	o.Recommended.Features.EnablePriorityAndFairness = false
	return nil
}

// admissionInitializers hands the built-in plugins this group's client and informers, through the
// server's loopback connection, and inplace's namespace. The informers start with the server (Config.InplaceInformers).
func (o *Options) admissionInitializers(c *genericapiserver.RecommendedConfig) ([]admission.PluginInitializer, error) {
	client, err := clientset.NewForConfig(c.LoopbackClientConfig)
	if err != nil {
		return nil, fmt.Errorf("creating the loopback client of the admission plugins: %w", err)
	}
	o.inplaceInformers = inplaceinformers.NewSharedInformerFactory(client, 10*time.Minute)
	return []admission.PluginInitializer{appsinitializer.New(client, o.inplaceInformers, apiserver.Namespace())}, nil
}

// standaloneAdmission gives a standalone server the admission chain of inplace's plugins that
// need no cluster (a SidecarSet gets its hash annotations there too); the loopback client
// configuration must be applied by now.
func (o *Options) standaloneAdmission(c *genericapiserver.RecommendedConfig) error {
	initializers, err := o.admissionInitializers(c)
	if err != nil {
		return err
	}
	c.AdmissionControl, err = builtin.Standalone(admission.PluginInitializers(initializers), o.standaloneDisabledPlugins)
	return err
}

// Validate reports every bad flag at once.
func (o *Options) Validate() error {
	var errs []error
	switch o.Mode {
	case ModeStandalone:
		if ip := o.Recommended.SecureServing.BindAddress; !ip.IsLoopback() {
			errs = append(errs, fmt.Errorf("--bind-address=%s: standalone mode has no authentication and serves loopback addresses only", ip))
		}
	case ModeAggregated:
	default:
		errs = append(errs, fmt.Errorf("--mode=%q: must be %s or %s", o.Mode, ModeStandalone, ModeAggregated))
	}
	if o.embeddedEtcd() && o.DataDir == "" {
		errs = append(errs, errors.New("--data-dir: required for the embedded etcd (or give --etcd-servers)"))
	}
	// etcd refuses an election timeout over 50 s, five ticks here.
	if d := o.EmbeddedEtcdHeartbeatInterval; d < time.Millisecond || d > 10*time.Second {
		errs = append(errs, fmt.Errorf("--embedded-etcd-heartbeat-interval=%s: must be from 1ms to 10s", d))
	}
	if d := o.EmbeddedEtcdBackendBatchInterval; d <= 0 {
		errs = append(errs, fmt.Errorf("--embedded-etcd-backend-batch-interval=%s: must be positive", d))
	}
	errs = append(errs, o.Recommended.Validate()...)
	errs = append(errs, o.ServerRun.Validate()...) // with --feature-gates and --emulated-version
	return utilerrors.NewAggregate(errs)
}

var setComponentGlobals sync.Once

// config builds the server configuration; the etcd URL must be known by now.
func (o *Options) config() (*apiserver.Config, error) {
	var setErr error
	setComponentGlobals.Do(func() { setErr = o.componentGlobals.Set() })
	if setErr != nil {
		return nil, fmt.Errorf("applying --feature-gates and --emulated-version: %w", setErr)
	}
	alternateIPs := []net.IP{netutils.ParseIPSloppy("127.0.0.1")}
	if err := o.Recommended.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil, alternateIPs); err != nil {
		return nil, fmt.Errorf("creating the self-signed serving certificate: %w", err)
	}

	c := genericapiserver.NewRecommendedConfig(apiserver.Codecs)
	namer := openapi.NewDefinitionNamer(apiserver.Scheme)
	c.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(generatedopenapi.GetOpenAPIDefinitions, namer)
	c.OpenAPIConfig.Info.Title = "inplace"
	c.OpenAPIConfig.Info.Version = "v1alpha1"
	c.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(generatedopenapi.GetOpenAPIDefinitions, namer)
	c.OpenAPIV3Config.Info.Title = "inplace"
	c.OpenAPIV3Config.Info.Version = "v1alpha1"
	if err := o.ServerRun.ApplyTo(&c.Config); err != nil {
		return nil, fmt.Errorf("applying the server's run options: %w", err)
	}

	codec, err := storageCodec(o.Recommended.Etcd.DefaultStorageMediaType)
	if err != nil {
		return nil, err
	}
	o.Recommended.Etcd.StorageConfig.Codec = codec
	if err := o.Recommended.ApplyTo(c); err != nil {
		return nil, fmt.Errorf("applying options: %w", err)
	}
	if o.Mode == ModeStandalone {
		if err := o.standaloneAdmission(c); err != nil {
			return nil, err
		}
	}
	cfg := &apiserver.Config{GenericConfig: c, InplaceInformers: o.inplaceInformers}
	if fp := apiserver.NewFrontProxy(c.Authentication.RequestHeaderConfig); o.Mode == ModeAggregated && fp != nil {
		cfg.FrontProxyFilter = fp.Filter
		c.Authentication.Authenticator = fp.Authenticator(c.Authentication.Authenticator)
		if o.TrustFrontProxyAuthorization {
			if c.Authorization.Authorizer, err = fp.Authorizer(c.Authorization.Authorizer); err != nil {
				return nil, err
			}
		}
	}
	return cfg, nil
}

// storageCodec writes objects to etcd in mediaType (--storage-media-type), at each kind's storage
// version (apiserver.StorageVersioner), and reads
// any of JSON, YAML and protobuf back to the internal version: what was stored before the flag
// changed stays readable, and is rewritten in the new media type at its next update.
func storageCodec(mediaType string) (runtime.Codec, error) {
	info, ok := runtime.SerializerInfoForMediaType(apiserver.Codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		return nil, fmt.Errorf("--storage-media-type=%q: not a media type this server encodes", mediaType)
	}
	return apiserver.Codecs.CodecForVersions(info.Serializer, apiserver.Codecs.UniversalDeserializer(),
		apiserver.StorageVersioner, runtime.InternalGroupVersioner), nil
}

// Run starts etcd (when embedded) and the API server, and serves until ctx ends. Then the API
// server drains, and only after that the embedded etcd is closed, so no write is cut short.
func (o *Options) Run(ctx context.Context) error {
	s, err := o.Start(ctx)
	if err != nil {
		return err
	}
	return s.Wait()
}

// Running is a started inplace-apiserver.
type Running struct {
	done chan struct{}
	err  error
	// Server is the API server, for tests that need its loopback client configuration.
	Server *apiserver.Server
}

// Wait blocks until the server and its embedded etcd have stopped, and returns why it stopped.
func (r *Running) Wait() error {
	<-r.done
	return r.err
}

func (o *Options) embeddedEtcdDefrag() *etcd.DefragPolicy {
	if !o.EmbeddedEtcdDefrag {
		return nil
	}
	return &etcd.DefaultDefragPolicy
}

// Start starts etcd (when embedded) and the API server in the background; they stop when ctx ends.
func (o *Options) Start(ctx context.Context) (*Running, error) {
	features.Log(klog.FromContext(ctx))
	var embedded *etcd.Server
	if o.embeddedEtcd() {
		var err error
		embedded, err = etcd.Start(ctx, etcd.Options{
			DataDir: o.DataDir, ClientPort: o.EmbeddedEtcdPort, UnsafeNoFsync: o.EmbeddedEtcdUnsafeNoFsync,
			Defrag: o.embeddedEtcdDefrag(), HeartbeatInterval: o.EmbeddedEtcdHeartbeatInterval,
			BackendBatchInterval: o.EmbeddedEtcdBackendBatchInterval,
		})
		if err != nil {
			return nil, err
		}
		o.Recommended.Etcd.StorageConfig.Transport.ServerList = []string{embedded.ClientURL}
	}
	closeEtcd := func() {
		if embedded != nil {
			embedded.Close()
		}
	}
	config, err := o.config()
	if err != nil {
		closeEtcd()
		return nil, err
	}
	if embedded != nil && o.EmbeddedEtcdGetsFromCache {
		config.GenericConfig.RESTOptionsGetter = cachedget.RESTOptionsGetter(config.GenericConfig.RESTOptionsGetter, embedded)
	}
	server, err := config.Complete().New()
	if err != nil {
		closeEtcd()
		return nil, err
	}
	r := &Running{done: make(chan struct{}), Server: server}
	if o.TrimIdleMemory {
		memtrim.Start(ctx, memtrim.DefaultPolicy)
	}
	go func() {
		defer close(r.done)
		defer closeEtcd()
		r.err = server.GenericAPIServer.PrepareRun().RunWithContext(ctx)
		klog.InfoS("inplace-apiserver stopped", "err", r.err)
	}()
	return r, nil
}
