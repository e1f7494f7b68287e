package benchlib

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
)

// LoadConfig is a mixed CloneSet workload: Clients goroutines, each sending one request after
// another for Duration, spread over Namespaces (which must exist).
type LoadConfig struct {
	Clients    int
	Duration   time.Duration
	Namespaces []string
	// Seed makes the mix repeatable.
	Seed uint64
}

// The mix of verbs, in percent: creates and deletes keep the population moving, updates race
// each other (409s are the point), lists page through a namespace.
var loadMix = []struct {
	verb   string
	weight int
}{{"create", 20}, {"get", 30}, {"update", 25}, {"list", 15}, {"delete", 10}}

// VerbStats are one verb's answers.
type VerbStats struct {
	Count     int
	Conflicts int // 409, expected: an update or delete raced another client
	NotFound  int // 404, expected: a get, update or delete raced a delete
	Errors    []string
	latencies []time.Duration
}

// P is the p-th percentile latency (0 < p <= 1).
func (s *VerbStats) P(p float64) time.Duration {
	if len(s.latencies) == 0 {
		return 0
	}
	l := slices.Clone(s.latencies)
	slices.Sort(l)
	i := int(float64(len(l))*p+0.5) - 1
	return l[max(0, min(i, len(l)-1))]
}

// LoadResult is what Load measured, per verb.
type LoadResult struct {
	Verbs   map[string]*VerbStats
	Elapsed time.Duration
}

// Unexpected lists the answers that are neither a success nor an expected 409/404.
func (r *LoadResult) Unexpected() []string {
	var out []string
	for _, v := range sortedVerbs(r.Verbs) {
		for _, e := range r.Verbs[v].Errors {
			out = append(out, v+": "+e)
		}
	}
	return out
}

// Table prints one line per verb: count, per second, p50, p99, 409s, 404s, other errors.
func (r *LoadResult) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-8s %8s %8s %9s %9s %6s %6s %6s\n", "verb", "count", "per s", "p50 ms", "p99 ms", "409", "404", "errors")
	for _, v := range sortedVerbs(r.Verbs) {
		s := r.Verbs[v]
		fmt.Fprintf(&b, "%-8s %8d %8.1f %9.2f %9.2f %6d %6d %6d\n", v, s.Count, float64(s.Count)/r.Elapsed.Seconds(),
			ms(s.P(0.5)), ms(s.P(0.99)), s.Conflicts, s.NotFound, len(s.Errors))
	}
	return b.String()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func sortedVerbs(m map[string]*VerbStats) []string {
	var verbs []string
	for v := range m {
		verbs = append(verbs, v)
	}
	sort.Strings(verbs)
	return verbs
}

// Load runs the mix until cfg.Duration has passed or ctx ends, and returns what each verb got.
// Every client works on its own names (so a create never collides) but lists, updates and deletes
// any CloneSet of its namespace, so clients race each other as users would.
func Load(ctx context.Context, client clientset.Interface, cfg LoadConfig) *LoadResult {
	res := &LoadResult{Verbs: map[string]*VerbStats{}}
	for _, m := range loadMix {
		res.Verbs[m.verb] = &VerbStats{}
	}
	var mu sync.Mutex
	record := func(verb string, took time.Duration, err error) {
		mu.Lock()
		defer mu.Unlock()
		s := res.Verbs[verb]
		s.Count++
		s.latencies = append(s.latencies, took)
		switch {
		case err == nil:
		case apierrors.IsConflict(err) && verb != "create" && verb != "list":
			s.Conflicts++
		case apierrors.IsNotFound(err) && verb != "create" && verb != "list":
			s.NotFound++
		default:
			switch {
			case len(s.Errors) < 20:
				s.Errors = append(s.Errors, err.Error())
			case len(s.Errors) == 20:
				s.Errors = append(s.Errors, "(more left out)")
			}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for c := range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(cfg.Seed, uint64(c)))
			ns := cfg.Namespaces[c%len(cfg.Namespaces)]
			sets := client.AppsV1alpha1().CloneSets(ns)
			created := 0
			for ctx.Err() == nil {
				verb := pickVerb(rng)
				t := time.Now()
				var err error
				switch verb {
				case "create":
					created++
					_, err = sets.Create(ctx, loadCloneSet(fmt.Sprintf("load-%d-%d", c, created)), metav1.CreateOptions{})
				case "get", "update", "delete":
					var name string
					if name, err = pickExisting(ctx, client, ns, rng); err != nil || name == "" {
						continue // nothing to act on yet; the list is not the verb measured
					}
					t = time.Now()
					switch verb {
					case "get":
						_, err = sets.Get(ctx, name, metav1.GetOptions{})
					case "update":
						var cs *v1alpha1.CloneSet
						if cs, err = sets.Get(ctx, name, metav1.GetOptions{}); err == nil {
							cs.Spec.MinReadySeconds = rng.Int32N(30) // a spec change that makes no Pod
							if cs.Annotations == nil {
								cs.Annotations = map[string]string{}
							}
							cs.Annotations["load/touched"] = time.Now().Format(time.RFC3339Nano)
							_, err = sets.Update(ctx, cs, metav1.UpdateOptions{})
						}
					case "delete":
						err = sets.Delete(ctx, name, metav1.DeleteOptions{})
					}
				case "list":
					_, err = sets.List(ctx, metav1.ListOptions{Limit: 50})
				}
				if ctx.Err() != nil && err != nil && errors.Is(err, context.DeadlineExceeded) {
					break // the run ended under this request: not an answer
				}
				record(verb, time.Since(t), err)
			}
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	return res
}

func pickVerb(rng *rand.Rand) string {
	n := rng.IntN(100)
	for _, m := range loadMix {
		if n < m.weight {
			return m.verb
		}
		n -= m.weight
	}
	return loadMix[0].verb
}

// pickExisting names a random CloneSet of the namespace ("" when there is none).
func pickExisting(ctx context.Context, client clientset.Interface, ns string, rng *rand.Rand) (string, error) {
	list, err := client.AppsV1alpha1().CloneSets(ns).List(ctx, metav1.ListOptions{Limit: 50, ResourceVersion: "0"})
	if err != nil || len(list.Items) == 0 {
		return "", err
	}
	return list.Items[rng.IntN(len(list.Items))].Name, nil
}

// loadCloneSet is a small valid CloneSet of no replicas, so that a controller (if one runs)
// creates no Pods for it.
func loadCloneSet(name string) *v1alpha1.CloneSet {
	labels := map[string]string{"app": name, "load": "true"}
	return &v1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: v1alpha1.CloneSetSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "inplace.local/app:v1"}}},
			},
		},
	}
}
