// Command benchbudget measures what a PodUnavailableBudget adds to pods/inplaceupdate, on a running
// cluster whose inplace-apiserver charges budgets for in-place updates (feature gate
// PodUnavailableBudgetUpdateGate; hack/bench-budget.sh runs it so). It runs N Pods and, in rounds,
// sends each an in-place image update one request after another, alternately with no budget and
// with a budget that selects all N (maxUnavailable 100%: it never refuses, so every request takes
// and writes a unit of it), waits for the updates to complete, and prints p50/p99 of the requests
// of each phase and what the budget adds.
//
// The Pods and the budget are deleted at the end, whatever happens (the namespace is the
// script's).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/inplace-dev/inplace/hack/benchlib"
	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	policyv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/policy/v1alpha1"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
)

const (
	label      = "bench-budget"
	budgetName = "bench-budget"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	namespace := flag.String("namespace", "", "namespace to run the Pods in (must exist)")
	pods := flag.Int("pods", 20, "Pods updated per phase and round")
	rounds := flag.Int("rounds", 3, "rounds of the two phases (their order alternates)")
	images := flag.String("images", "inplace.local/app:v1,inplace.local/app:v2", "the two images the Pods go back and forth between (local, imagePullPolicy Never)")
	timeout := flag.Duration("timeout", 3*time.Minute, "how long to wait for Pods, the budget and the updates")
	flag.Parse()
	imgs := strings.Split(*images, ",")
	if *namespace == "" || *pods < 1 || *rounds < 1 || len(imgs) != 2 {
		fmt.Fprintln(os.Stderr, "usage: benchbudget -namespace NS [-pods 20] [-rounds 3] [-images A,B] [-kubeconfig FILE]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err == nil {
		// Client-side throttling would time the client, not the server.
		cfg.QPS, cfg.Burst = -1, -1
		b := &bench{namespace: *namespace, n: *pods, images: imgs, timeout: *timeout}
		if b.kube, err = kubernetes.NewForConfig(cfg); err == nil {
			if b.inplace, err = clientset.NewForConfig(cfg); err == nil {
				err = b.run(ctx, *rounds)
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchbudget:", err)
		os.Exit(1)
	}
}

type bench struct {
	kube      kubernetes.Interface
	inplace   clientset.Interface
	namespace string
	n         int
	images    []string
	timeout   time.Duration
	next      int // index into images of the image the next phase sets
	revision  int
}

func (b *bench) run(ctx context.Context, rounds int) (err error) {
	defer func() { err = errors.Join(err, b.cleanUp()) }()
	if err := b.createPods(ctx); err != nil {
		return err
	}
	phases := []string{"no budget", "budget"}
	latencies := map[string][]time.Duration{}
	for r := range rounds {
		order := phases
		if r%2 == 1 {
			order = []string{phases[1], phases[0]}
		}
		for _, phase := range order {
			if err := b.setBudget(ctx, phase == "budget"); err != nil {
				return err
			}
			d, err := b.updateAll(ctx)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", r+1, phase, err)
			}
			latencies[phase] = append(latencies[phase], d...)
			fmt.Fprintf(os.Stderr, "benchbudget: round %d/%d, %s: p50 %.2f ms\n", r+1, rounds, phase, msf(benchlib.Percentile(d, 50)))
		}
	}
	fmt.Printf("pods/inplaceupdate, %d Pods x %d rounds per phase, one request at a time\n", b.n, rounds)
	fmt.Printf("  %-12s %9s %9s\n", "phase", "p50", "p99")
	for _, phase := range phases {
		fmt.Printf("  %-12s %6.2f ms %6.2f ms\n", phase, msf(benchlib.Percentile(latencies[phase], 50)), msf(benchlib.Percentile(latencies[phase], 99)))
	}
	none, with := latencies[phases[0]], latencies[phases[1]]
	fmt.Printf("  the budget adds p50 %+.2f ms, p99 %+.2f ms (goal: at most 2 ms at p99)\n",
		msf(benchlib.Percentile(with, 50)-benchlib.Percentile(none, 50)), msf(benchlib.Percentile(with, 99)-benchlib.Percentile(none, 99)))
	return nil
}

func (b *bench) podName(i int) string { return fmt.Sprintf("%s-%d", label, i) }

// createPods runs the N Pods on the first image and waits until they are Ready.
func (b *bench) createPods(ctx context.Context) error {
	for i := range b.n {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: b.podName(i), Labels: map[string]string{"app": label}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: b.images[0],
				ImagePullPolicy: corev1.PullNever}}},
		}
		if _, err := b.kube.CoreV1().Pods(b.namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating pod %s: %w", pod.Name, err)
		}
	}
	b.next = 1
	return b.waitPods(ctx, "the Pods Ready on "+b.images[0], func(p *corev1.Pod) bool {
		return podReady(p) && statusImage(p) == b.images[0]
	})
}

// setBudget creates the budget (and waits until its status counts the N Pods and allows
// disruptions) or deletes it (and waits until it is gone).
func (b *bench) setBudget(ctx context.Context, on bool) error {
	pubs := b.inplace.PolicyV1alpha1().PodUnavailableBudgets(b.namespace)
	if !on {
		if err := pubs.Delete(ctx, budgetName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return b.poll(ctx, "the budget gone", func(ctx context.Context) (bool, error) {
			_, err := pubs.Get(ctx, budgetName, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	}
	all := intstr.FromString("100%")
	budget := &policyv1alpha1.PodUnavailableBudget{
		// The Pods have no workload whose replicas would be the budget's total: it is said.
		ObjectMeta: metav1.ObjectMeta{Name: budgetName, Annotations: map[string]string{
			policyv1alpha1.PubProtectTotalReplicasAnnotation: strconv.Itoa(b.n)}},
		Spec: policyv1alpha1.PodUnavailableBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": label}},
			MaxUnavailable: &all,
		},
	}
	// The last phase of a round may have left it (the order alternates).
	if _, err := pubs.Create(ctx, budget, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the budget: %w", err)
	}
	return b.poll(ctx, "the budget's status", func(ctx context.Context) (bool, error) {
		got, err := pubs.Get(ctx, budgetName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := got.Status
		return st.TotalReplicas == int32(b.n) && st.UnavailableAllowed > 0, nil
	})
}

// updateAll sends each Pod, one after the other, an in-place update to the next image, times
// each request, and waits until every update completed and the Pods are Ready again.
func (b *bench) updateAll(ctx context.Context) ([]time.Duration, error) {
	image := b.images[b.next]
	b.next = 1 - b.next
	b.revision++
	var out []time.Duration
	for i := range b.n {
		req := &appsv1alpha1.InPlaceUpdate{Spec: appsv1alpha1.InPlaceUpdateSpec{
			Revision:   fmt.Sprintf("r%d", b.revision),
			Containers: []appsv1alpha1.InPlaceUpdateContainer{{Name: "app", Image: image}},
		}}
		start := time.Now()
		if _, err := b.inplace.AppsV1alpha1().Pods(b.namespace).InPlaceUpdate(ctx, b.podName(i), req, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("pods/%s/inplaceupdate: %w", b.podName(i), err)
		}
		out = append(out, time.Since(start))
	}
	err := b.waitPods(ctx, "the updates to "+image+" completed", func(p *corev1.Pod) bool {
		st := p.Annotations[pub.InPlaceUpdateStateKey]
		return podReady(p) && statusImage(p) == image && strings.Contains(st, "completedTimestamp")
	})
	return out, err
}

func (b *bench) waitPods(ctx context.Context, what string, done func(*corev1.Pod) bool) error {
	return b.poll(ctx, what, func(ctx context.Context) (bool, error) {
		list, err := b.kube.CoreV1().Pods(b.namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + label})
		if err != nil {
			return false, err
		}
		n := 0
		for i := range list.Items {
			if done(&list.Items[i]) {
				n++
			}
		}
		return n == b.n, nil
	})
}

func (b *bench) poll(ctx context.Context, what string, cond wait.ConditionWithContextFunc) error {
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, b.timeout, true, cond); err != nil {
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// cleanUp deletes the budget and the Pods (with a context of its own: the run's may be over).
func (b *bench) cleanUp() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := b.inplace.PolicyV1alpha1().PodUnavailableBudgets(b.namespace).Delete(ctx, budgetName, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		err = nil
	}
	return errors.Join(err, b.kube.CoreV1().Pods(b.namespace).DeleteCollection(ctx, metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: "app=" + label}))
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func statusImage(p *corev1.Pod) string {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == "app" {
			return s.Image
		}
	}
	return ""
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
