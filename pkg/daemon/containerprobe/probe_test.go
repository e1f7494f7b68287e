package containerprobe

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func running(context.Context) (bool, error) { return true, nil }

func noExec(context.Context, string, []string, time.Duration) (int32, error) {
	return 0, errors.New("no exec here")
}

// serverPort starts an HTTP server answering with status(n) at its n-th request (from 1).
func serverPort(t *testing.T, status func(n int64) int) (port int, hits *atomic.Int64) {
	t.Helper()
	hits = &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ready" || r.URL.RawQuery != "x=1" || r.Header.Get("X-Probe") != "yes" {
			w.WriteHeader(http.StatusTeapot)
			return
		}
		w.WriteHeader(status(hits.Add(1)))
	}))
	t.Cleanup(srv.Close)
	_, p, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ = strconv.Atoi(p)
	return port, hits
}

func httpProbe(port intstr.IntOrString) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
		Path: "/ready?x=1", Port: port, HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Probe", Value: "yes"}}}},
		PeriodSeconds: 1}
}

func target(c *corev1.Container) Target {
	return Target{Container: c, ID: "cid", PodIP: "127.0.0.1", StartedAt: time.Now(), Running: running}
}

func TestOnceHTTP(t *testing.T) {
	codes := map[int64]int{1: 200, 2: 302, 3: 404, 4: 500}
	port, _ := serverPort(t, func(n int64) int { return codes[n] })
	c := &corev1.Container{Name: "app", Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: int32(port)}}}
	p := New(noExec)
	for i, want := range []bool{true, true, false, false} {
		probe := httpProbe(intstr.FromString("web")) // a named port
		if i%2 == 1 {
			probe = httpProbe(intstr.FromInt32(int32(port)))
		}
		if err := p.Once(context.Background(), probe, target(c)); (err == nil) != want {
			t.Errorf("answer %d (status %d): err %v, want success %v", i+1, codes[int64(i+1)], err, want)
		}
	}
	if err := p.Once(context.Background(), httpProbe(intstr.FromString("nope")), target(c)); err == nil {
		t.Error("an unknown named port passed")
	}
}

func TestOnceTCP(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().(*net.TCPAddr)
	c := &corev1.Container{Name: "app"}
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(addr.Port))}}}
	p := New(noExec)
	if err := p.Once(context.Background(), probe, target(c)); err != nil {
		t.Errorf("listening port: %v", err)
	}
	_ = l.Close()
	if err := p.Once(context.Background(), probe, target(c)); err == nil {
		t.Error("closed port passed")
	}
}

func TestOnceExec(t *testing.T) {
	var gotID string
	var gotTimeout time.Duration
	p := New(func(_ context.Context, id string, cmd []string, timeout time.Duration) (int32, error) {
		gotID, gotTimeout = id, timeout
		if cmd[0] == "true" {
			return 0, nil
		}
		return 1, nil
	})
	probe := func(cmd string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{cmd}}}, TimeoutSeconds: 3}
	}
	c := &corev1.Container{Name: "app"}
	if err := p.Once(context.Background(), probe("true"), target(c)); err != nil || gotID != "cid" || gotTimeout != 3*time.Second {
		t.Errorf("exec true: %v (id %q, timeout %v)", err, gotID, gotTimeout)
	}
	if err := p.Once(context.Background(), probe("false"), target(c)); err == nil {
		t.Error("exit 1 passed")
	}
}

// TestWaitReadyThresholds: readiness waits for initialDelaySeconds and successThreshold successes
// in a row; a container without probes is ready at once.
func TestWaitReadyThresholds(t *testing.T) {
	// fail, pass, fail, pass, pass: ready at the 5th probe with successThreshold 2.
	seq := map[int64]int{1: 500, 2: 200, 3: 500, 4: 200, 5: 200}
	port, hits := serverPort(t, func(n int64) int { return seq[n] })
	c := &corev1.Container{Name: "app", ReadinessProbe: httpProbe(intstr.FromInt32(int32(port)))}
	c.ReadinessProbe.SuccessThreshold = 2
	c.ReadinessProbe.PeriodSeconds = 1
	p := New(noExec)
	start := time.Now()
	if err := p.WaitReady(context.Background(), target(c)); err != nil {
		t.Fatal(err)
	}
	if hits.Load() != 5 || time.Since(start) < 4*time.Second {
		t.Errorf("ready after %d probes in %v, want 5 probes a second apart", hits.Load(), time.Since(start))
	}

	c.ReadinessProbe.InitialDelaySeconds = 1
	c.ReadinessProbe.SuccessThreshold = 1
	hits.Store(1) // the next answer is 200
	start = time.Now()
	if err := p.WaitReady(context.Background(), target(c)); err != nil || time.Since(start) < 900*time.Millisecond {
		t.Errorf("ready (%v) after %v, want not before the initial delay of 1 s", err, time.Since(start))
	}

	if err := p.WaitReady(context.Background(), target(&corev1.Container{Name: "plain"})); err != nil {
		t.Errorf("no probes: %v", err)
	}
}

// TestWaitReadyStartup: the startup probe comes first and ends the wait after failureThreshold
// failures; the readiness probe is not run before it passed.
func TestWaitReadyStartup(t *testing.T) {
	var startups, readies atomic.Int64
	p := New(func(_ context.Context, _ string, cmd []string, _ time.Duration) (int32, error) {
		if cmd[0] == "startup" {
			if startups.Add(1) < 2 {
				return 1, nil
			}
			return 0, nil
		}
		if startups.Load() < 2 {
			t.Error("readiness probed before startup passed")
		}
		readies.Add(1)
		return 0, nil
	})
	execProbe := func(cmd string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{cmd}}}, PeriodSeconds: 1, FailureThreshold: 3}
	}
	c := &corev1.Container{Name: "app", StartupProbe: execProbe("startup"), ReadinessProbe: execProbe("ready")}
	if err := p.WaitReady(context.Background(), target(c)); err != nil || readies.Load() != 1 {
		t.Fatalf("WaitReady: %v after %d readiness probes", err, readies.Load())
	}

	c.StartupProbe.FailureThreshold = 1
	startups.Store(-10) // fails from now on
	if err := p.WaitReady(context.Background(), target(c)); !errors.Is(err, ErrStartupFailed) {
		t.Errorf("startup failing: %v, want ErrStartupFailed", err)
	}
}

// TestWaitReadyStops: the wait ends when the container stops running, and when ctx ends.
func TestWaitReadyStops(t *testing.T) {
	p := New(func(context.Context, string, []string, time.Duration) (int32, error) { return 1, nil })
	c := &corev1.Container{Name: "app", ReadinessProbe: &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"false"}}}, PeriodSeconds: 1}}
	tg := target(c)
	var calls atomic.Int64
	tg.Running = func(context.Context) (bool, error) { return calls.Add(1) < 2, nil }
	if err := p.WaitReady(context.Background(), tg); !errors.Is(err, ErrNotRunning) {
		t.Errorf("container stopped: %v, want ErrNotRunning", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := p.WaitReady(ctx, target(c)); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 900*time.Millisecond {
		t.Errorf("ctx ended: %v after %v, want its error at once", err, time.Since(start))
	}
}

func TestOnceGRPC(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	hs.SetServingStatus("app", healthpb.HealthCheckResponse_NOT_SERVING)
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{
		Port: int32(l.Addr().(*net.TCPAddr).Port), Service: ptr.To("app")}}, TimeoutSeconds: 2}
	p := New(noExec)
	c := &corev1.Container{Name: "app"}
	if err := p.Once(context.Background(), probe, target(c)); err == nil {
		t.Error("NOT_SERVING passed")
	}
	hs.SetServingStatus("app", healthpb.HealthCheckResponse_SERVING)
	if err := p.Once(context.Background(), probe, target(c)); err != nil {
		t.Errorf("SERVING: %v", err)
	}
}
