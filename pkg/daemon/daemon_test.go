package daemon

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/pflag"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	inplacefake "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned/fake"
	inplaceinformers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions"

	"github.com/inplace-dev/inplace/pkg/daemon/criruntime/fakecri"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
	"github.com/inplace-dev/inplace/pkg/util/serving"
)

func TestOptions(t *testing.T) {
	t.Setenv("NODE_NAME", "node-1")
	o := NewOptions()
	if o.NodeName != "node-1" || o.BindAddress != "127.0.0.1:10391" || o.RuntimeEndpoint != "" || o.Workers < 1 {
		t.Errorf("defaults %+v", o)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("defaults with $NODE_NAME: %v", err)
	}

	bad := &Options{RuntimeEndpoint: "tcp://10.0.0.1:1", BindAddress: "10391", Workers: 0, MaxStopGracePeriod: -time.Second}
	err := bad.Validate()
	if err == nil {
		t.Fatal("bad options accepted")
	}
	for _, want := range []string{"--node-name", "--runtime-endpoint", "--bind-address", "--workers", "--max-stop-grace-period"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	for _, ok := range []string{"", "unix:///run/containerd/containerd.sock", "/run/containerd/containerd.sock"} {
		o := NewOptions()
		o.RuntimeEndpoint = ok
		if err := o.Validate(); err != nil {
			t.Errorf("--runtime-endpoint=%q: %v", ok, err)
		}
	}
}

func TestClockSkewFlag(t *testing.T) {
	o := NewOptions()
	fs := pflag.NewFlagSet("inplace-daemon", pflag.ContinueOnError)
	o.AddFlags(fs)
	if f := fs.Lookup("clock-skew"); f == nil || !f.Hidden {
		t.Fatal("--clock-skew is missing or not hidden")
	}
	if err := fs.Parse([]string{"--clock-skew=-10m"}); err != nil {
		t.Fatal(err)
	}
	if o.ClockSkew != -10*time.Minute {
		t.Errorf("ClockSkew %v, want -10m", o.ClockSkew)
	}
}

// TestNodeCRRInformers: the daemon lists only its node's active requests.
func TestNodeCRRInformers(t *testing.T) {
	client := inplacefake.NewClientset()
	f := NodeCRRInformers(client, "node-1")
	f.Apps().V1alpha1().ContainerRecreateRequests().Informer()
	var selectors []string
	for _, r := range listRestrictions(t, client, f) {
		selectors = append(selectors, r.Labels.String())
	}
	want := "crr.apps.kruise.io/active=true,crr.apps.kruise.io/node-name=node-1"
	if len(selectors) == 0 || selectors[0] != want {
		t.Errorf("list label selectors %q, want %q", selectors, want)
	}
}

// TestNodeImageInformers: the daemon lists only its node's NodeImage.
func TestNodeImageInformers(t *testing.T) {
	client := inplacefake.NewClientset()
	f := NodeImageInformers(client, "node-1")
	f.Apps().V1alpha1().NodeImages().Informer()
	var selectors []string
	for _, r := range listRestrictions(t, client, f) {
		selectors = append(selectors, r.Fields.String())
	}
	if want := "metadata.name=node-1"; len(selectors) == 0 || selectors[0] != want {
		t.Errorf("list field selectors %q, want %q", selectors, want)
	}
}

func get(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestHealth(t *testing.T) {
	cri, rt := fakecri.Start(t)
	syncing := &serving.Syncing{}
	syncing.Set(true)
	srv := httptest.NewServer(serving.Handler(healthChecks(rt, syncing)))
	defer srv.Close()

	if code, _ := get(t, srv, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
	if code, body := get(t, srv, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "not synced") {
		t.Errorf("/readyz while syncing: %d %q", code, body)
	}
	syncing.Set(false)
	if code, _ := get(t, srv, "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz: %d", code)
	}
	if code, body := get(t, srv, "/metrics"); code != http.StatusOK || !strings.Contains(body, "inplace_daemon_containermeta_annotation_writes_total") {
		t.Errorf("/metrics: %d, without the daemon's metrics", code)
	}
	cri.Stop()
	if code, body := get(t, srv, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "container runtime containerd") {
		t.Errorf("/readyz with the runtime gone: %d %q", code, body)
	}
	if code, _ := get(t, srv, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz with the runtime gone: %d", code)
	}
}

type countingController struct{ runs, stopped atomic.Int32 }

func (c *countingController) Run(ctx context.Context, _ int) {
	c.runs.Add(1)
	<-ctx.Done()
	c.stopped.Add(1)
}

// TestRunControllers: controllers are built, informers synced, readiness flips, and everything
// stops when the context ends (SIGTERM).
func TestRunControllers(t *testing.T) {
	_, rt := fakecri.Start(t)
	kubeClient := fake.NewClientset()
	inplaceClient := inplacefake.NewClientset()
	o := NewOptions()
	o.NodeName = "node-1"
	cc := &Context{
		NodeName: "node-1", Runtime: rt, KubeClient: kubeClient, InplaceClient: inplaceClient,
		KubeInformers:      kubeinformers.NewSharedInformerFactory(kubeClient, 0),
		InplaceInformers:   inplaceinformers.NewSharedInformerFactory(inplaceClient, 0),
		NodeCRRInformers:   NodeCRRInformers(inplaceClient, "node-1"),
		NodeImageInformers: NodeImageInformers(inplaceClient, "node-1"),
		Recorder:           record.NewFakeRecorder(10),
		Options:            o,
	}
	h := &serving.Syncing{}
	h.Set(true)
	ctrl := &countingController{}
	inits := append(Controllers(), reconcile.Init[*Context]{Name: "counting", New: func(cc *Context) (reconcile.Runner, error) {
		cc.InplaceInformers.Apps().V1alpha1().ContainerRecreateRequests().Informer()
		return ctrl, nil
	}})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runControllers(ctx, cc, 2, inits, h) }()
	deadline := time.Now().Add(10 * time.Second)
	for ctrl.runs.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if ctrl.runs.Load() != 1 {
		t.Fatal("controller not run")
	}
	if h.Syncing() {
		t.Error("still syncing after the controllers started")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("runControllers: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("runControllers did not return after the context ended")
	}
	if ctrl.stopped.Load() != 1 {
		t.Error("controller did not stop")
	}
}

// listRestrictions starts the factory's informers on the fake client, waits for their caches and
// returns the selectors of the lists they sent, in order.
func listRestrictions(t *testing.T, client *inplacefake.Clientset, f inplaceinformers.SharedInformerFactory) []k8stesting.ListRestrictions {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	var got []k8stesting.ListRestrictions
	for _, a := range client.Actions() {
		if l, ok := a.(k8stesting.ListAction); ok {
			got = append(got, l.GetListRestrictions())
		}
	}
	return got
}
