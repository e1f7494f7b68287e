package options

import (
	"bytes"
	"encoding/json"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericfeatures "k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"

	"github.com/inplace-dev/inplace/pkg/admission/builtin"
	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/features"
)

// TestFeatureGates: inplace-apiserver's --feature-gates takes OpenKruise's gates, kube's gates of
// the generic server (applied with the emulated version, as before), and ignores a name neither
// has instead of refusing to start.
func TestFeatureGates(t *testing.T) {
	o := NewOptions()
	fs := pflag.NewFlagSet("inplace-apiserver", pflag.ContinueOnError)
	o.AddFlags(fs)
	t.Cleanup(func() {
		_ = features.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(features.SidecarSetPatchPodMetadataDefaultsAllowed): false})
		_ = utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(genericfeatures.OpenAPIEnums): true})
	})
	err := fs.Parse([]string{"--feature-gates=SidecarSetPatchPodMetadataDefaultsAllowed=true,OpenAPIEnums=false,DaemonSetPruneIneligibleNodes=true"})
	if err != nil {
		t.Fatalf("parsing: %v", err)
	}
	if err := o.componentGlobals.Set(); err != nil {
		t.Fatalf("applying kube's gates: %v", err)
	}
	if !features.Enabled(features.SidecarSetPatchPodMetadataDefaultsAllowed) {
		t.Error("SidecarSetPatchPodMetadataDefaultsAllowed is off, want on")
	}
	if utilfeature.DefaultFeatureGate.Enabled(genericfeatures.OpenAPIEnums) {
		t.Error("kube's OpenAPIEnums is on, want off")
	}
	if got := o.FeatureGates.Ignored; len(got) != 1 || got[0] != "DaemonSetPruneIneligibleNodes" {
		t.Errorf("ignored %v, want [DaemonSetPruneIneligibleNodes]", got)
	}
}

func parse(t *testing.T, args ...string) *Options {
	t.Helper()
	o := NewOptions()
	fs := pflag.NewFlagSet("inplace-apiserver", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parsing %v: %v", args, err)
	}
	return o
}

// TestDefaults: standalone on 8443 with the embedded etcd in ./inplace-data, objects stored as
// protobuf, MutatingAdmissionPolicy off (Kubernetes does not serve its API by default), and the
// defaults validate once completed.
func TestDefaults(t *testing.T) {
	o := parse(t)
	if o.Mode != ModeStandalone || o.DataDir != "inplace-data" || o.Recommended.SecureServing.BindPort != 8443 {
		t.Errorf("mode %q, data dir %q, port %d; want standalone, inplace-data, 8443", o.Mode, o.DataDir, o.Recommended.SecureServing.BindPort)
	}
	if o.Recommended.Etcd.DefaultStorageMediaType != "application/vnd.kubernetes.protobuf" {
		t.Errorf("storage media type %q, want protobuf", o.Recommended.Etcd.DefaultStorageMediaType)
	}
	if !slices.Contains(o.Recommended.Admission.DisablePlugins, "MutatingAdmissionPolicy") {
		t.Errorf("disabled admission plugins %v, want MutatingAdmissionPolicy among them", o.Recommended.Admission.DisablePlugins)
	}
	if !o.TrustFrontProxyAuthorization || !o.TrimIdleMemory || !o.EmbeddedEtcdDefrag || o.EmbeddedEtcdUnsafeNoFsync {
		t.Errorf("defaults changed: %+v", o)
	}
	if o.ServerRun.ShutdownWatchTerminationGracePeriod != 5*time.Second {
		t.Errorf("watch termination grace %s, want 5s", o.ServerRun.ShutdownWatchTerminationGracePeriod)
	}
	// What an idle server wakes up for (docs/benchmarks.md, hack/bench-idle.sh): APF off, the
	// embedded etcd ticking every 200 ms and committing its backend once a second.
	if o.Recommended.Features.EnablePriorityAndFairness {
		t.Error("priority and fairness on by default, want off (kube-apiserver's APF admits what is proxied here)")
	}
	if o.EmbeddedEtcdHeartbeatInterval != 200*time.Millisecond || o.EmbeddedEtcdBackendBatchInterval != time.Second {
		t.Errorf("embedded etcd heartbeat %s, backend batch %s; want 200ms, 1s",
			o.EmbeddedEtcdHeartbeatInterval, o.EmbeddedEtcdBackendBatchInterval)
	}
	if err := o.Complete(); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("the defaults do not validate: %v", err)
	}
}

// TestFlags: inplace-apiserver's own flags set their options; the unsafe one is hidden.
func TestFlags(t *testing.T) {
	o := parse(t, "--mode=aggregated", "--data-dir=/d", "--embedded-etcd-port=2399", "--authorization-trust-front-proxy=false",
		"--trim-idle-memory=false", "--embedded-etcd-defrag=false", "--embedded-etcd-unsafe-no-fsync")
	if o.Mode != ModeAggregated || o.DataDir != "/d" || o.EmbeddedEtcdPort != 2399 || o.TrustFrontProxyAuthorization ||
		o.TrimIdleMemory || o.EmbeddedEtcdDefrag || !o.EmbeddedEtcdUnsafeNoFsync {
		t.Errorf("flags not applied: %+v", o)
	}
	if o.embeddedEtcdDefrag() != nil {
		t.Error("--embedded-etcd-defrag=false still has a defrag policy")
	}
	if parse(t).embeddedEtcdDefrag() == nil {
		t.Error("no defrag policy by default")
	}
	fs := pflag.NewFlagSet("inplace-apiserver", pflag.ContinueOnError)
	NewOptions().AddFlags(fs)
	if f := fs.Lookup("embedded-etcd-unsafe-no-fsync"); f == nil || !f.Hidden {
		t.Error("--embedded-etcd-unsafe-no-fsync is not hidden")
	}
	o = parse(t, "--embedded-etcd-heartbeat-interval=100ms", "--embedded-etcd-backend-batch-interval=250ms")
	if o.EmbeddedEtcdHeartbeatInterval != 100*time.Millisecond || o.EmbeddedEtcdBackendBatchInterval != 250*time.Millisecond {
		t.Errorf("embedded etcd heartbeat %s, backend batch %s; want the flags' 100ms, 250ms",
			o.EmbeddedEtcdHeartbeatInterval, o.EmbeddedEtcdBackendBatchInterval)
	}
}

// TestCompleteStandalone: standalone mode runs the embedded etcd, keeps its certificate in the
// data directory, binds loopback when no address is given, and turns off all that needs a
// cluster (authentication, authorization, the core API, the generic admission, APF).
func TestCompleteStandalone(t *testing.T) {
	o := parse(t, "--data-dir=/data", "--bind-address=0.0.0.0", "--disable-admission-plugins=SidecarSet")
	if err := o.Complete(); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if !o.embeddedEtcd() || !slices.Equal(o.Recommended.Etcd.StorageConfig.Transport.ServerList, []string{embeddedEtcdPlaceholder}) {
		t.Errorf("etcd servers %v, want the embedded etcd's placeholder", o.Recommended.Etcd.StorageConfig.Transport.ServerList)
	}
	if got := o.Recommended.SecureServing.ServerCert.CertDirectory; got != filepath.Join("/data", "certificates") {
		t.Errorf("certificate directory %q, want /data/certificates", got)
	}
	if got := o.Recommended.SecureServing.BindAddress.String(); got != "127.0.0.1" {
		t.Errorf("bind address %s, want 127.0.0.1 for an unspecified one", got)
	}
	if o.Recommended.Authentication != nil || o.Recommended.Authorization != nil || o.Recommended.CoreAPI != nil ||
		o.Recommended.Admission != nil || o.Recommended.Features.EnablePriorityAndFairness {
		t.Error("standalone mode kept something that needs a cluster")
	}
	// The flag replaces the default list, as in aggregated mode.
	if !slices.Equal(o.standaloneDisabledPlugins, []string{"SidecarSet"}) {
		t.Errorf("standalone disabled plugins %v, want --disable-admission-plugins kept", o.standaloneDisabledPlugins)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

// TestCompleteAggregated: aggregated mode keeps delegated authentication and authorization,
// appends inplace's admission plugins to the generic ones (which enables them), and uses the
// etcd given by --etcd-servers instead of its own.
func TestCompleteAggregated(t *testing.T) {
	o := parse(t, "--mode=aggregated", "--etcd-servers=https://etcd:2379", "--cert-dir=/certs")
	if err := o.Complete(); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if o.embeddedEtcd() {
		t.Error("embedded etcd despite --etcd-servers")
	}
	if got := o.Recommended.SecureServing.ServerCert.CertDirectory; got != "/certs" {
		t.Errorf("certificate directory %q, want --cert-dir /certs", got)
	}
	if o.Recommended.Authentication == nil || o.Recommended.Authorization == nil || o.Recommended.Admission == nil {
		t.Fatal("aggregated mode lost authentication, authorization or admission")
	}
	order := o.Recommended.Admission.RecommendedPluginOrder
	if !slices.Contains(order, "NamespaceLifecycle") || !slices.Equal(order[len(order)-len(builtin.Names()):], builtin.Names()) {
		t.Errorf("plugin order %v, want the generic plugins then %v", order, builtin.Names())
	}
	for _, name := range builtin.Names() {
		if !slices.Contains(o.Recommended.Admission.Plugins.Registered(), name) {
			t.Errorf("plugin %s not registered", name)
		}
	}
	if o.Recommended.ExtraAdmissionInitializers == nil {
		t.Error("no initializer hands inplace's plugins their client and informers")
	}
	if o.Recommended.Features.EnablePriorityAndFairness {
		t.Error("priority and fairness on without --enable-priority-and-fairness")
	}
	// The generic flag still turns it on in aggregated mode.
	o = parse(t, "--mode=aggregated", "--enable-priority-and-fairness")
	if err := o.Complete(); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if !o.Recommended.Features.EnablePriorityAndFairness {
		t.Error("--enable-priority-and-fairness did not turn priority and fairness on")
	}
}

// TestValidate: a bad mode, a non-loopback address in standalone mode and an embedded etcd
// without a data directory are refused, all reported at once.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{name: "bad mode", args: []string{"--mode=cluster"}, want: []string{`--mode="cluster": must be standalone or aggregated`}},
		{name: "standalone on a public address", args: []string{"--bind-address=10.1.2.3"},
			want: []string{"--bind-address=10.1.2.3: standalone mode has no authentication"}},
		{name: "aggregated on a public address", args: []string{"--mode=aggregated", "--bind-address=10.1.2.3"}},
		{name: "embedded etcd without data dir", args: []string{"--data-dir=", "--cert-dir=/c"},
			want: []string{"--data-dir: required for the embedded etcd"}},
		{name: "external etcd without data dir", args: []string{"--data-dir=", "--cert-dir=/c", "--etcd-servers=https://etcd:2379"}},
		{name: "no heartbeat", args: []string{"--embedded-etcd-heartbeat-interval=0"},
			want: []string{"--embedded-etcd-heartbeat-interval=0s: must be from 1ms to 10s"}},
		{name: "heartbeat over etcd's limit", args: []string{"--embedded-etcd-heartbeat-interval=11s"},
			want: []string{"--embedded-etcd-heartbeat-interval=11s"}},
		{name: "no backend batch interval", args: []string{"--embedded-etcd-backend-batch-interval=0"},
			want: []string{"--embedded-etcd-backend-batch-interval=0s: must be positive"}},
		{name: "all at once", args: []string{"--mode=x", "--data-dir=", "--cert-dir=/c"},
			want: []string{`--mode="x"`, "--data-dir"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := parse(t, tc.args...)
			if err := o.Complete(); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			err := o.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Errorf("err %v, want valid", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("valid, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestStorageCodec: objects are written in the configured media type and read back whatever
// media type they were stored in; an unknown media type is refused.
func TestStorageCodec(t *testing.T) {
	if _, err := storageCodec("application/xml"); err == nil || !strings.Contains(err.Error(), "--storage-media-type") {
		t.Errorf("unknown media type: err %v, want it refused", err)
	}
	set := &apps.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "s"}}
	encoded := map[string][]byte{}
	for _, mediaType := range []string{runtime.ContentTypeProtobuf, runtime.ContentTypeJSON} {
		codec, err := storageCodec(mediaType)
		if err != nil {
			t.Fatalf("%s: %v", mediaType, err)
		}
		if encoded[mediaType], err = runtime.Encode(codec, set); err != nil {
			t.Fatalf("encoding as %s: %v", mediaType, err)
		}
	}
	if !bytes.HasPrefix(encoded[runtime.ContentTypeProtobuf], []byte("k8s\x00")) || !json.Valid(encoded[runtime.ContentTypeJSON]) {
		t.Errorf("not stored in the media type asked for: %q / %q", encoded[runtime.ContentTypeProtobuf], encoded[runtime.ContentTypeJSON])
	}
	protobuf, _ := storageCodec(runtime.ContentTypeProtobuf)
	for mediaType, data := range encoded {
		obj, err := runtime.Decode(protobuf, data)
		if err != nil {
			t.Errorf("reading back what was stored as %s: %v", mediaType, err)
			continue
		}
		if got, ok := obj.(*apps.SidecarSet); !ok || got.Name != "s" {
			t.Errorf("read back %#v from %s, want SidecarSet s", obj, mediaType)
		}
	}
}

// TestConfigStandalone: a standalone server gets an admission chain of inplace's plugins, fed by
// informers of its own group that the server starts, and no front proxy.
func TestConfigStandalone(t *testing.T) {
	o := parse(t, "--data-dir="+t.TempDir())
	if err := o.Complete(); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	// config() opens the serving listener: a free loopback port of the test's own, not the
	// default 8443 that another server on a shared machine (or this test run again) may hold.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	o.Recommended.SecureServing.Listener = ln
	cfg, err := o.config()
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	if cfg.GenericConfig.AdmissionControl == nil {
		t.Error("no admission chain in standalone mode")
	}
	if cfg.InplaceInformers == nil {
		t.Error("no informers for the admission plugins")
	}
	if cfg.FrontProxyFilter != nil {
		t.Error("a front proxy filter in standalone mode")
	}
}
