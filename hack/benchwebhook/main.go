// Command benchwebhook measures what inplace's Pod admission webhook adds to the latency of
// creating a Pod, on a running cluster (hack/bench-webhook.sh runs it): in rounds, it creates N
// Pods one after another with the MutatingWebhookConfiguration inplace-pod-webhook removed, then
// N with it registered, and prints p50/p99 of the Create calls for both and the differences.
// With the webhook registered, one phase's Pods are selected by a SidecarSet (the webhook injects
// it: the whole injection path is timed), another's by none (the webhook is called and answers
// without a patch, the common case).
//
// The Pods name a scheduler that does not exist, so nothing ever runs them: only the API path is
// timed. The configuration is restored, and the SidecarSet and Pods deleted, whatever happens.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/hack/benchlib"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
)

const webhookName = "inplace-pod-webhook"

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	namespace := flag.String("namespace", "", "namespace to create the Pods in (must exist)")
	pods := flag.Int("pods", 200, "Pods created per phase and round")
	rounds := flag.Int("rounds", 1, "rounds of the three phases")
	warmup := flag.Int("warmup", 20, "Pods created and not counted before each phase")
	var f floorConfig
	flag.StringVar(&f.host, "floor-host", "", "address kube-apiserver reaches this host at, for the no-op webhook (none: no floor phase)")
	flag.StringVar(&f.cert, "floor-cert", "", "serving certificate of the no-op webhook (valid for -floor-host)")
	flag.StringVar(&f.key, "floor-key", "", "its key")
	flag.StringVar(&f.ca, "floor-ca", "", "the CA that signed it (the webhook's caBundle)")
	flag.Parse()
	if *namespace == "" || *pods < 1 || *rounds < 1 {
		fmt.Fprintln(os.Stderr, "usage: benchwebhook -namespace NS [-pods 200] [-rounds 1] [-kubeconfig FILE]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *kubeconfig, *namespace, *pods, *rounds, *warmup, f); err != nil {
		fmt.Fprintln(os.Stderr, "benchwebhook:", err)
		os.Exit(1)
	}
}

type bench struct {
	floor     *floor
	kube      kubernetes.Interface
	inplace   clientset.Interface
	namespace string
	label     string // the SidecarSet selects app=<label>
	created   int
}

func run(ctx context.Context, kubeconfig, namespace string, pods, rounds, warmup int, floor floorConfig) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	// Client-side throttling would time the client, not the server.
	cfg.QPS, cfg.Burst = 1000, 1000
	b := &bench{namespace: namespace, label: "bench-webhook-" + namespace}
	if b.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if b.inplace, err = clientset.NewForConfig(cfg); err != nil {
		return err
	}
	webhooks := b.kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	saved, err := webhooks.Get(ctx, webhookName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("the webhook must be registered to start with: %w", err)
	}
	defer b.restore(saved)

	set := &v1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: b.label},
		Spec: v1alpha1.SidecarSetSpec{
			Selector:          &metav1.LabelSelector{MatchLabels: map[string]string{"app": b.label}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: namespace}},
			Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{
				Name: "agent", Image: "inplace.local/app:v1", ImagePullPolicy: corev1.PullNever}}},
		},
	}
	if _, err := b.inplace.AppsV1alpha1().SidecarSets().Create(ctx, set, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating SidecarSet %s: %w", set.Name, err)
	}
	defer func() {
		_ = b.inplace.AppsV1alpha1().SidecarSets().Delete(context.Background(), set.Name, metav1.DeleteOptions{})
	}()

	phases := []struct {
		name     string
		mode     mode
		selected bool
	}{
		{"no webhook", off, true},
		{"webhook, SidecarSet injected", inplaceWebhook, true},
		{"webhook, no SidecarSet selects", inplaceWebhook, false},
	}
	if floor.host != "" {
		if err := b.startFloor(ctx, floor, saved); err != nil {
			return err
		}
		defer b.stopFloor()
		phases = append(phases, struct {
			name     string
			mode     mode
			selected bool
		}{"no-op webhook (floor)", floorWebhook, true})
	}
	latencies := make([][]time.Duration, len(phases))
	for round := range rounds {
		// Each round starts with another phase, so that none is always the one timed right
		// after the webhook configuration changed or the previous phase's Pods were deleted.
		for k := range phases {
			i := (round + k) % len(phases)
			p := phases[i]
			if err := b.setWebhook(ctx, saved, p.mode); err != nil {
				return err
			}
			injected := p.selected && p.mode == inplaceWebhook
			if _, err := b.create(ctx, warmup, p.name, p.selected, injected); err != nil {
				return err
			}
			d, err := b.create(ctx, pods, p.name, p.selected, injected)
			if err != nil {
				return err
			}
			latencies[i] = append(latencies[i], d...)
			if err := b.deletePods(ctx); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "round %d/%d, %s: p50 %s p99 %s\n", round+1, rounds, p.name,
				ms(benchlib.Percentile(d, 50)), ms(benchlib.Percentile(d, 99)))
		}
	}

	fmt.Printf("Pod create latency, %d Pods per phase x %d rounds, one at a time:\n", pods, rounds)
	fmt.Printf("  %-32s %9s %9s\n", "", "p50", "p99")
	for i, p := range phases {
		fmt.Printf("  %-32s %9s %9s\n", p.name, ms(benchlib.Percentile(latencies[i], 50)), ms(benchlib.Percentile(latencies[i], 99)))
	}
	for i := 1; i < len(phases); i++ {
		fmt.Printf("  added by the %s: p50 %+.2f ms, p99 %+.2f ms\n", phases[i].name,
			msf(benchlib.Percentile(latencies[i], 50)-benchlib.Percentile(latencies[0], 50)),
			msf(benchlib.Percentile(latencies[i], 99)-benchlib.Percentile(latencies[0], 99)))
	}
	if len(phases) == 4 {
		for _, i := range []int{1, 2} {
			fmt.Printf("  %s over the no-op webhook: p50 %+.2f ms, p99 %+.2f ms\n", phases[i].name,
				msf(benchlib.Percentile(latencies[i], 50)-benchlib.Percentile(latencies[3], 50)),
				msf(benchlib.Percentile(latencies[i], 99)-benchlib.Percentile(latencies[3], 99)))
		}
	}
	return nil
}

// mode says which webhook a phase runs with.
type mode int

const (
	off            mode = iota // no webhook for Pods
	inplaceWebhook             // inplace's, as registered
	floorWebhook               // a no-op webhook served by this program
)

// setWebhook leaves exactly the phase's webhook registered, then waits until kube-apiserver acts
// on it: a dry-run Pod that the SidecarSet selects comes back injected exactly with inplace's
// webhook, and reaches the no-op webhook exactly with it.
func (b *bench) setWebhook(ctx context.Context, saved *admissionregistrationv1.MutatingWebhookConfiguration, m mode) error {
	webhooks := b.kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	want := map[string]*admissionregistrationv1.MutatingWebhookConfiguration{webhookName: nil}
	if m == inplaceWebhook {
		want[webhookName] = saved
	}
	if b.floor != nil {
		want[b.floor.config.Name] = nil
		if m == floorWebhook {
			want[b.floor.config.Name] = b.floor.config
		}
	}
	for name, config := range want {
		if config == nil {
			if err := webhooks.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("removing webhook configuration %s: %w", name, err)
			}
			continue
		}
		c := config.DeepCopy()
		c.ResourceVersion, c.UID = "", ""
		if _, err := webhooks.Create(ctx, c, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("registering webhook configuration %s: %w", name, err)
		}
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		before := b.floorCalls()
		p, err := b.kube.CoreV1().Pods(b.namespace).Create(ctx, b.pod("probe", true), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		injected, floorCalled := len(p.Spec.Containers) == 2, b.floorCalls() > before
		return injected == (m == inplaceWebhook) && floorCalled == (m == floorWebhook), nil
	})
}

func (b *bench) pod(name string, selected bool) *corev1.Pod {
	app := "bench-webhook-other"
	if selected {
		app = b.label
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": app, "bench": "webhook"}},
		Spec: corev1.PodSpec{
			SchedulerName:                 "bench-webhook-no-such-scheduler",
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{Name: "main", Image: "inplace.local/app:v1",
				ImagePullPolicy: corev1.PullNever}},
		},
	}
}

// create creates n Pods one after another and returns how long each Create took. It checks that
// each Pod got the sidecar exactly when it should, so the phase timed is the one named.
func (b *bench) create(ctx context.Context, n int, phase string, selected, injected bool) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	for range n {
		b.created++
		pod := b.pod(fmt.Sprintf("p-%d", b.created), selected)
		start := time.Now()
		got, err := b.kube.CoreV1().Pods(b.namespace).Create(ctx, pod, metav1.CreateOptions{})
		took := time.Since(start)
		if err != nil {
			return nil, fmt.Errorf("creating pod %s: %w", pod.Name, err)
		}
		if got := len(got.Spec.Containers) == 2; got != injected {
			return nil, fmt.Errorf("%s: pod %s injected=%v, want %v", phase, pod.Name, got, injected)
		}
		out = append(out, took)
	}
	return out, nil
}

func (b *bench) deletePods(ctx context.Context) error {
	pods := b.kube.CoreV1().Pods(b.namespace)
	if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)},
		metav1.ListOptions{LabelSelector: "bench=webhook"}); err != nil {
		return fmt.Errorf("deleting the Pods: %w", err)
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 120*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "bench=webhook"})
		return err == nil && len(list.Items) == 0, err
	})
}

// restore puts the webhook configuration back as it was found, if it is missing.
func (b *bench) restore(saved *admissionregistrationv1.MutatingWebhookConfiguration) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := saved.DeepCopy()
	c.ResourceVersion, c.UID = "", ""
	_, err := b.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, c, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		fmt.Fprintln(os.Stderr, "benchwebhook: could not restore the webhook configuration:", err)
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", msf(d)) }

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// floorConfig locates the no-op webhook.
type floorConfig struct{ host, cert, key, ca string }

// floor is a webhook that allows every Pod without a patch and does nothing else: what any
// webhook costs a Pod creation on this cluster, inplace's included.
type floor struct {
	server *http.Server
	calls  atomic.Int64
	config *admissionregistrationv1.MutatingWebhookConfiguration
}

func (b *bench) floorCalls() int64 {
	if b.floor == nil {
		return 0
	}
	return b.floor.calls.Load()
}

// startFloor serves the no-op webhook on floor.host (a free port) and prepares its configuration:
// inplace's own, pointed at it by URL, for the bench namespace only.
func (b *bench) startFloor(ctx context.Context, fc floorConfig, saved *admissionregistrationv1.MutatingWebhookConfiguration) error {
	ca, err := os.ReadFile(fc.ca)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(fc.host, "0"))
	if err != nil {
		return fmt.Errorf("listening for the no-op webhook: %w", err)
	}
	f := &floor{}
	f.server = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.calls.Add(1)
		var review struct {
			Request struct {
				UID string `json:"uid"`
			} `json:"request"`
		}
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":%q,"allowed":true}}`, review.Request.UID)
	})}
	go func() { _ = f.server.ServeTLS(ln, fc.cert, fc.key) }()

	config := saved.DeepCopy()
	config.ObjectMeta = metav1.ObjectMeta{Name: "bench-webhook-floor"}
	wh := &config.Webhooks[0]
	wh.Name = "floor.bench.inplace.dev"
	url := "https://" + ln.Addr().String() + "/"
	wh.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca}
	wh.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: b.namespace}}
	config.Webhooks = config.Webhooks[:1]
	f.config = config
	b.floor = f
	return nil
}

func (b *bench) stopFloor() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := b.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, b.floor.config.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		fmt.Fprintln(os.Stderr, "benchwebhook: could not remove the no-op webhook configuration:", err)
	}
	_ = b.floor.server.Close()
}
