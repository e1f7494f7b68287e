package framework

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// EndpointEvents records every EndpointSlice of a Service as its watch delivers them, so a test
// can say whether a Pod ever left the Service's ready endpoints, not only whether it was there
// when a poll looked.
type EndpointEvents struct {
	mu     sync.Mutex
	slices []*discoveryv1.EndpointSlice
	err    error
}

// RecordEndpoints starts recording the EndpointSlices of Service ns/service (label
// kubernetes.io/service-name), from a List (its slices are the first records) onwards.
func RecordEndpoints(t *testing.T, ctx context.Context, ns, service string) *EndpointEvents {
	t.Helper()
	selector := discoveryv1.LabelServiceName + "=" + service
	list, err := Kube.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatalf("listing the EndpointSlices of Service %s/%s: %v", ns, service, err)
	}
	r := &EndpointEvents{}
	for i := range list.Items {
		r.slices = append(r.slices, &list.Items[i])
	}
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
		options.LabelSelector = selector
		return Kube.DiscoveryV1().EndpointSlices(ns).Watch(ctx, options)
	}}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, lw)
	if err != nil {
		t.Fatalf("watching the EndpointSlices of Service %s/%s: %v", ns, service, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			r.mu.Lock()
			if s, ok := ev.Object.(*discoveryv1.EndpointSlice); ok && ev.Type != watch.Deleted {
				r.slices = append(r.slices, s)
			} else if ev.Type == watch.Error {
				r.err = fmt.Errorf("watch error: %v", ev.Object)
			}
			r.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		w.Stop()
		<-done
	})
	return r
}

// WaitReady waits until the latest recorded slices list exactly the named Pods, all ready.
func (r *EndpointEvents) WaitReady(t *testing.T, ctx context.Context, pods ...string) {
	t.Helper()
	Poll(t, ctx, time.Minute, fmt.Sprintf("Pods %v ready endpoints", pods), func(context.Context) (bool, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.err != nil {
			return false, r.err
		}
		ready := map[string]bool{}
		for _, eps := range latestEndpoints(r.slices) {
			for _, e := range eps {
				if e.TargetRef != nil && e.Conditions.Ready != nil && *e.Conditions.Ready {
					ready[e.TargetRef.Name] = true
				}
			}
		}
		for _, p := range pods {
			if !ready[p] {
				return false, fmt.Errorf("ready endpoints %v", ready)
			}
		}
		return len(ready) == len(pods), fmt.Errorf("ready endpoints %v", ready)
	})
}

// NotReady lists every recorded moment a Pod's endpoint was not ready or missing from the slices
// that listed it before, as "pod (slice resourceVersion)".
func (r *EndpointEvents) NotReady() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	seen := map[string]bool{}
	latest := map[string][]discoveryv1.Endpoint{}
	for _, s := range r.slices {
		latest[s.Name] = s.Endpoints
		listed := map[string]bool{}
		for _, eps := range latest {
			for _, e := range eps {
				if e.TargetRef == nil {
					continue
				}
				listed[e.TargetRef.Name] = true
				seen[e.TargetRef.Name] = true
				if e.Conditions.Ready == nil || !*e.Conditions.Ready {
					out = append(out, fmt.Sprintf("%s not ready (slice %s at %s)", e.TargetRef.Name, s.Name, s.ResourceVersion))
				}
			}
		}
		for p := range seen {
			if !listed[p] {
				out = append(out, fmt.Sprintf("%s missing (slice %s at %s)", p, s.Name, s.ResourceVersion))
			}
		}
	}
	return out
}

// latestEndpoints is each slice's endpoints as last recorded.
func latestEndpoints(slices []*discoveryv1.EndpointSlice) map[string][]discoveryv1.Endpoint {
	latest := map[string][]discoveryv1.Endpoint{}
	for _, s := range slices {
		latest[s.Name] = s.Endpoints
	}
	return latest
}
