package manager

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	inplacefake "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned/fake"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
	"github.com/inplace-dev/inplace/pkg/util/serving"
)

// fakeController records how it was run and blocks until its context ends, as a controller does.
type fakeController struct {
	ran chan int // receives the workers it was run with
}

func (c *fakeController) Run(ctx context.Context, workers int) {
	c.ran <- workers
	<-ctx.Done()
}

// TestRunControllers: every controller is built from one Context (clients, recorder, both informer
// factories), the factories start after all registered their informers, and the controllers run
// with --workers only once the caches synced (readyz reports syncing until then).
func TestRunControllers(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cc := &Context{KubeClient: kubefake.NewClientset(), InplaceClient: inplacefake.NewClientset(), Namespace: "own-ns"}
	syncing := &serving.Syncing{}
	var built []string
	newFake := func(name string, register func(*Context)) (reconcile.Init[*Context], *fakeController) {
		c := &fakeController{ran: make(chan int, 1)}
		return reconcile.Init[*Context]{Name: name, New: func(got *Context) (reconcile.Runner, error) {
			if got.Recorder == nil || got.KubeInformers == nil || got.InplaceInformers == nil {
				t.Errorf("%s: context without recorder or informer factories: %+v", name, got)
			}
			if got.Namespace != "own-ns" {
				t.Errorf("%s: namespace %q, want own-ns", name, got.Namespace)
			}
			if !syncing.Syncing() {
				t.Errorf("%s: built while readyz says synced", name)
			}
			register(got)
			built = append(built, name)
			return c, nil
		}}, c
	}
	pods, podController := newFake("pods", func(cc *Context) { cc.KubeInformers.Core().V1().Pods().Informer() })
	sets, setController := newFake("sidecarsets", func(cc *Context) { cc.InplaceInformers.Apps().V1alpha1().SidecarSets().Informer() })

	done := make(chan error, 1)
	go func() { done <- runControllers(ctx, cc, 3, []reconcile.Init[*Context]{pods, sets}, syncing) }()
	for _, c := range []*fakeController{podController, setController} {
		select {
		case workers := <-c.ran:
			if workers != 3 {
				t.Errorf("run with %d workers, want 3", workers)
			}
		case err := <-done:
			t.Fatalf("runControllers returned before running the controllers: %v", err)
		case <-time.After(30 * time.Second):
			t.Fatal("controllers not run within 30s")
		}
	}
	if syncing.Syncing() {
		t.Error("controllers run while readyz still says syncing")
	}
	if strings.Join(built, ",") != "pods,sidecarsets" {
		t.Errorf("built %v, want [pods sidecarsets] in order", built)
	}
	if !cc.KubeInformers.Core().V1().Pods().Informer().HasSynced() ||
		!cc.InplaceInformers.Apps().V1alpha1().SidecarSets().Informer().HasSynced() {
		t.Error("an informer a controller registered was not started and synced")
	}
	cancel()
	if err := returned(t, done, "runControllers did not return within 30s of the context ending"); err != nil {
		t.Errorf("runControllers after the context ended: %v, want nil", err)
	}
}

// TestRunControllersInitError: a controller that cannot be built stops the others from starting,
// and the error names it.
func TestRunControllersInitError(t *testing.T) {
	cc := &Context{KubeClient: kubefake.NewClientset(), InplaceClient: inplacefake.NewClientset()}
	later := false
	inits := []reconcile.Init[*Context]{
		{Name: "broken", New: func(*Context) (reconcile.Runner, error) { return nil, errors.New("no lister") }},
		{Name: "later", New: func(*Context) (reconcile.Runner, error) { later = true; return &fakeController{}, nil }},
	}
	syncing := &serving.Syncing{}
	err := runControllers(t.Context(), cc, 1, inits, syncing)
	if err == nil || !strings.Contains(err.Error(), "creating controller broken: no lister") {
		t.Fatalf("err %v, want it to name the controller and its error", err)
	}
	if later {
		t.Error("the controller after the broken one was built")
	}
	if !syncing.Syncing() {
		t.Error("readyz says synced although no controller runs")
	}
}

// leaderOptions are leader election settings short enough for a test to see a lease lost.
func leaderOptions() *Options {
	o := NewOptions()
	o.LeaderElectionNamespace, o.LeaderElectionName = "lease-ns", "lease-name"
	o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 2*time.Second, time.Second, 100*time.Millisecond
	return o
}

// TestLeaderElection: the controllers run only once this replica holds the Lease named by the
// options; when it cannot renew the Lease it stops them and returns an error (so the process
// restarts with fresh caches) naming the Lease.
func TestLeaderElection(t *testing.T) {
	o := leaderOptions()
	kube := kubefake.NewClientset()
	started := make(chan struct{})
	stopped := make(chan struct{})
	run := func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		close(stopped)
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- runWithLeaderElection(t.Context(), o, kube, nil, run) }()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("returned before leading: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("did not lead within 30s")
	}
	lease, err := kube.CoordinationV1().Leases("lease-ns").Get(t.Context(), "lease-name", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Lease named by the options: %v", err)
	}
	hostname, _ := os.Hostname()
	if id := lease.Spec.HolderIdentity; id == nil || !strings.HasPrefix(*id, hostname+"_") {
		t.Errorf("holder %v, want %s_<uuid>", id, hostname)
	}

	// The API server refuses every renewal from now on.
	kube.PrependReactor("update", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("apiserver unavailable")
	})
	if err := returned(t, done, "still leading 30s after renewals started failing"); err == nil || !strings.Contains(err.Error(), "lost the leader election lease lease-ns/lease-name") {
		t.Errorf("err %v, want the lease lost", err)
	}
	// The controllers' context is canceled as leadership ends; they stop on their own goroutine.
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Error("the controllers' context did not end with the leadership")
	}
}

// TestLeaderElectionCancel: a replica that stops (its context ends) returns no error and gives
// up the Lease, so a standby takes over without waiting for it to expire.
func TestLeaderElectionCancel(t *testing.T) {
	o := leaderOptions()
	kube := kubefake.NewClientset()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- runWithLeaderElection(ctx, o, kube, nil, func(ctx context.Context) error { close(started); <-ctx.Done(); return nil })
	}()
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("did not lead within 30s")
	}
	cancel()
	if err := returned(t, done, "did not return within 30s of the context ending"); err != nil {
		t.Errorf("err %v after the context ended, want nil", err)
	}
	lease, err := kube.CoordinationV1().Leases("lease-ns").Get(t.Context(), "lease-name", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting the Lease: %v", err)
	}
	if id := lease.Spec.HolderIdentity; id != nil && *id != "" {
		t.Errorf("Lease still held by %q after stopping, want released", *id)
	}
}

// TestLeaderElectionWaits: while another replica holds a valid Lease, the controllers do not run.
func TestLeaderElectionWaits(t *testing.T) {
	o := leaderOptions()
	o.LeaseDuration = time.Minute // the other holder's lease stays valid for the whole test
	other := "other-replica"
	duration := int32(60)
	now := metav1.NewMicroTime(time.Now())
	kube := kubefake.NewClientset(&coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "lease-ns", Name: "lease-name"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &other, LeaseDurationSeconds: &duration,
			AcquireTime: &now, RenewTime: &now},
	})
	// Every attempt to acquire reads the Lease: wait for a few, so the replica saw it held.
	gets := make(chan struct{}, 100)
	kube.PrependReactor("get", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
		gets <- struct{}{}
		return false, nil, nil
	})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ran := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		done <- runWithLeaderElection(ctx, o, kube, nil, func(context.Context) error { ran <- struct{}{}; return nil })
	}()
	for range 3 {
		select {
		case <-gets:
		case <-time.After(30 * time.Second):
			t.Fatal("no attempt to acquire the Lease within 30s")
		}
	}
	select {
	case <-ran:
		t.Fatal("controllers run while another replica holds the Lease")
	default:
	}
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("did not return within 30s of the context ending")
	}
}

// TestRunWiresOptions: Run hands each controller the options that reach it through the Context,
// and fails before running anything when the client configuration or the health address is bad.
func TestRunWiresOptions(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	// A server nobody listens on: nothing in this test reaches it.
	const config = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
	if err := os.WriteFile(kubeconfig, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	o := NewOptions()
	o.Kubeconfig = kubeconfig
	o.LeaderElect = false
	o.BindAddress = "127.0.0.1:0"
	o.Namespace, o.RolloutMetrics, o.ImagePreDownload = "own-ns", true, false
	var got *Context
	inits := []reconcile.Init[*Context]{{Name: "probe", New: func(cc *Context) (reconcile.Runner, error) {
		got = cc
		return nil, errors.New("stop here")
	}}}
	// A controller that cannot be built ends Run with its error (inplace-controller exits 1).
	if err := Run(t.Context(), o, inits); err == nil || !strings.Contains(err.Error(), "creating controller probe: stop here") {
		t.Fatalf("Run: %v, want the controller's error", err)
	}
	if got == nil {
		t.Fatal("the controller was not built")
	}
	if got.Namespace != "own-ns" || !got.RolloutMetrics || got.ImagePreDownload || got.KubeClient == nil || got.InplaceClient == nil {
		t.Errorf("context %+v, want namespace own-ns, rollout metrics on, pre-download off, both clients", got)
	}

	bad := *o
	bad.Kubeconfig = filepath.Join(t.TempDir(), "missing")
	if err := Run(t.Context(), &bad, inits); err == nil || !strings.Contains(err.Error(), "--kubeconfig=") {
		t.Errorf("missing kubeconfig: err %v, want it to name --kubeconfig", err)
	}
	bad = *o
	bad.BindAddress = "127.0.0.1:notaport"
	got = nil
	if err := Run(t.Context(), &bad, inits); err == nil {
		t.Error("bad --bind-address: Run succeeded")
	}
	if got != nil {
		t.Error("bad --bind-address: controllers built anyway")
	}
}

// TestLeaderElectionFailedStart: controllers that fail to start end the leader's run with their
// error and give the Lease up, so that another replica can lead instead of a leader that runs
// nothing.
func TestLeaderElectionFailedStart(t *testing.T) {
	o := leaderOptions()
	kube := kubefake.NewClientset()
	done := make(chan error, 1)
	go func() {
		done <- runWithLeaderElection(t.Context(), o, kube, nil, func(context.Context) error {
			return errors.New("creating controller probe: stop here")
		})
	}()
	if err := returned(t, done, "still running 30s after the controllers failed"); err == nil || !strings.Contains(err.Error(), "stop here") {
		t.Fatalf("returned %v, want the controllers' error", err)
	}
	lease, err := kube.CoordinationV1().Leases("lease-ns").Get(t.Context(), "lease-name", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if id := lease.Spec.HolderIdentity; id != nil && *id != "" {
		t.Errorf("the Lease is still held by %s", *id)
	}
}

// returned waits for what runs on done to return and gives its error; if it has not returned
// within 30s, the test fails with still (what it is still doing) and stops.
func returned(t *testing.T, done <-chan error, still string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal(still)
		return nil
	}
}
