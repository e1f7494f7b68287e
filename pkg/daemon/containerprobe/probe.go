// Package containerprobe runs a container's startup and readiness probes as the kubelet does
// (httpGet, tcpSocket, exec, grpc; initialDelaySeconds, periodSeconds, timeoutSeconds,
// successThreshold, failureThreshold), for inplace-daemon to tell whether a container is ready
// while the kubelet cannot say: it publishes nothing of a Pod whose postStart hook runs.
package containerprobe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// ErrStartupFailed means the startup probe failed failureThreshold times in a row: the kubelet
// kills such a container, so it will not be ready in this run.
var ErrStartupFailed = errors.New("startup probe failed failureThreshold times")

// ErrNotRunning means the container stopped running while it was waited for.
var ErrNotRunning = errors.New("container not running")

// Exec runs cmd in the container id and returns its exit code (the runtime's ExecSync).
type Exec func(ctx context.Context, id string, cmd []string, timeout time.Duration) (int32, error)

// Target is the container probed.
type Target struct {
	// Container is its spec (probes, named ports).
	Container *corev1.Container
	// ID is its runtime id, for exec probes.
	ID string
	// PodIP is where httpGet, tcpSocket and grpc probes go when they name no host.
	PodIP string
	// StartedAt is when it started; initialDelaySeconds counts from there.
	StartedAt time.Time
	// Running says whether it still runs; waiting ends with ErrNotRunning once it does not.
	Running func(ctx context.Context) (bool, error)
}

// Prober runs probes.
type Prober struct {
	// HTTP sends httpGet probes: no redirect to another host is followed (as the kubelet).
	HTTP  *http.Client
	Exec  Exec
	Clock clock.WithTicker
}

// New returns a Prober that runs exec probes with exec.
func New(exec Exec) *Prober {
	return &Prober{
		HTTP: &http.Client{
			Transport: &http.Transport{
				TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as the kubelet's probes
				DisableKeepAlives: true,
				Proxy:             nil,
			},
			CheckRedirect: sameHostRedirects,
		},
		Exec:  exec,
		Clock: clock.RealClock{},
	}
}

// sameHostRedirects follows redirects on the same host only, as the kubelet's httpGet probes do
// (a redirect elsewhere is not followed: its 3xx answer counts as success, as there).
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	return nil
}

// WaitReady blocks until the container is ready as the kubelet judges it: its startup probe (if
// any) passed, then its readiness probe (if any) passed successThreshold times in a row; a
// container with neither is ready at once. It returns ErrStartupFailed, ErrNotRunning, or ctx's
// error when it stops before.
func (p *Prober) WaitReady(ctx context.Context, t Target) error {
	if s := t.Container.StartupProbe; s != nil {
		if err := p.wait(ctx, t, s, true); err != nil {
			return fmt.Errorf("startup probe of container %s: %w", t.Container.Name, err)
		}
	}
	if r := t.Container.ReadinessProbe; r != nil {
		if err := p.wait(ctx, t, r, false); err != nil {
			return fmt.Errorf("readiness probe of container %s: %w", t.Container.Name, err)
		}
	}
	return nil
}

// wait probes every periodSeconds, from initialDelaySeconds after the start, until successThreshold
// successes in a row; for a startup probe, failureThreshold failures in a row end it.
func (p *Prober) wait(ctx context.Context, t Target, probe *corev1.Probe, startup bool) error {
	logger := klog.FromContext(ctx).WithValues("container", t.Container.Name, "startup", startup)
	if err := p.sleepUntil(ctx, t.StartedAt.Add(seconds(probe.InitialDelaySeconds, 0))); err != nil {
		return err
	}
	successes, failures := 0, 0
	for {
		if running, err := t.Running(ctx); err != nil {
			return fmt.Errorf("asking whether it runs: %w", err)
		} else if !running {
			return ErrNotRunning
		}
		if err := p.Once(ctx, probe, t); err != nil {
			successes, failures = 0, failures+1
			logger.V(4).Info("Probe failed", "err", err, "failures", failures)
			if startup && failures >= threshold(probe.FailureThreshold, 3) {
				return ErrStartupFailed
			}
		} else {
			successes, failures = successes+1, 0
			if successes >= threshold(probe.SuccessThreshold, 1) {
				return nil
			}
		}
		if err := p.sleepUntil(ctx, p.Clock.Now().Add(seconds(probe.PeriodSeconds, 10))); err != nil {
			return err
		}
	}
}

func (p *Prober) sleepUntil(ctx context.Context, at time.Time) error {
	d := at.Sub(p.Clock.Now())
	if d <= 0 {
		return ctx.Err()
	}
	timer := p.Clock.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C():
		return nil
	}
}

// seconds is n seconds, or def when n is not positive (the API's defaults).
func seconds(n int32, def int32) time.Duration {
	if n <= 0 {
		n = def
	}
	return time.Duration(n) * time.Second
}

func threshold(n int32, def int32) int {
	if n <= 0 {
		return int(def)
	}
	return int(n)
}

// Once runs the probe one time: nil when it passed.
func (p *Prober) Once(ctx context.Context, probe *corev1.Probe, t Target) error {
	timeout := seconds(probe.TimeoutSeconds, 1)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch h := probe.ProbeHandler; {
	case h.Exec != nil:
		return p.exec(ctx, h.Exec, t, timeout)
	case h.HTTPGet != nil:
		return p.httpGet(ctx, h.HTTPGet, t)
	case h.TCPSocket != nil:
		return tcpSocket(ctx, h.TCPSocket, t)
	case h.GRPC != nil:
		return grpcHealth(ctx, h.GRPC, t)
	}
	return errors.New("probe has no handler")
}

func (p *Prober) exec(ctx context.Context, h *corev1.ExecAction, t Target, timeout time.Duration) error {
	code, err := p.Exec(ctx, t.ID, h.Command, timeout)
	if err != nil {
		return fmt.Errorf("exec %q: %w", h.Command, err)
	}
	if code != 0 {
		return fmt.Errorf("exec %q exited %d", h.Command, code)
	}
	return nil
}

func (p *Prober) httpGet(ctx context.Context, h *corev1.HTTPGetAction, t Target) error {
	port, err := resolvePort(h.Port, t.Container)
	if err != nil {
		return err
	}
	scheme := "http"
	if h.Scheme == corev1.URISchemeHTTPS {
		scheme = "https"
	}
	u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(host(h.Host, t.PodIP), strconv.Itoa(port))}
	if ref, err := url.Parse(h.Path); err == nil {
		u.Path, u.RawQuery = ref.Path, ref.RawQuery
	} else {
		u.Path = h.Path
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("httpGet %s: %w", u, err)
	}
	req.Header.Set("User-Agent", "kube-probe/inplace")
	req.Header.Set("Accept", "*/*")
	for _, hd := range h.HTTPHeaders {
		if hd.Name == "Host" {
			req.Host = hd.Value
			continue
		}
		req.Header.Set(hd.Name, hd.Value)
	}
	resp, err := p.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("httpGet %s: %w", u, err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusBadRequest {
		return fmt.Errorf("httpGet %s: status %d", u, resp.StatusCode)
	}
	return nil
}

func tcpSocket(ctx context.Context, h *corev1.TCPSocketAction, t Target) error {
	port, err := resolvePort(h.Port, t.Container)
	if err != nil {
		return err
	}
	addr := net.JoinHostPort(host(h.Host, t.PodIP), strconv.Itoa(port))
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("tcpSocket %s: %w", addr, err)
	}
	return conn.Close()
}

func grpcHealth(ctx context.Context, h *corev1.GRPCAction, t Target) error {
	addr := net.JoinHostPort(t.PodIP, strconv.Itoa(int(h.Port)))
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("grpc %s: %w", addr, err)
	}
	defer conn.Close()
	service := ""
	if h.Service != nil {
		service = *h.Service
	}
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return fmt.Errorf("grpc health %s: %w", addr, err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("grpc health %s: %s", addr, resp.GetStatus())
	}
	return nil
}

// host is the probe's host, else the Pod's IP (loopback when the runtime gives none: a Pod of
// the host's network, which shares the daemon's).
func host(h, podIP string) string {
	switch {
	case h != "":
		return h
	case podIP != "":
		return podIP
	}
	return "127.0.0.1"
}

// resolvePort is the number of a probe's port, looking a named one up in the container's ports.
func resolvePort(port intstr.IntOrString, c *corev1.Container) (int, error) {
	if port.Type == intstr.Int {
		return port.IntValue(), nil
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return int(p.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(port.StrVal); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("port %q: not a port of container %s", port.StrVal, c.Name)
}
