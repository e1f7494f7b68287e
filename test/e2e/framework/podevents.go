package framework

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// PodEvent is one change of a namespace's Pods, as its watch delivered it.
type PodEvent struct {
	Typ watch.EventType
	Pod *corev1.Pod
}

// PodEvents records every change of the Pods of a namespace from the moment it starts (a watch
// delivers every change, in order), so a test can check a property at every observation, not only
// at the ones its polling happened to make.
type PodEvents struct {
	Mu      sync.Mutex
	Initial []*corev1.Pod
	Events  []PodEvent
	Err     error
}

func RecordPods(t *testing.T, ctx context.Context, ns string) *PodEvents {
	t.Helper()
	list, err := Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := &PodEvents{}
	for i := range list.Items {
		r.Initial = append(r.Initial, &list.Items[i])
	}
	WatchPods(t, ctx, ns, "", list.ResourceVersion, func(ev watch.Event) {
		r.Mu.Lock()
		defer r.Mu.Unlock()
		if p, ok := ev.Object.(*corev1.Pod); ok {
			r.Events = append(r.Events, PodEvent{Typ: ev.Type, Pod: p})
		} else if ev.Type == watch.Error {
			r.Err = fmt.Errorf("watch error: %v", ev.Object)
		}
	})
	return r
}

// UpTo waits until the recorder has seen the Pods at least as current as a List now, and returns
// the events so far. Pods keep changing after the List (a terminating Pod goes away, a kubelet
// writes status), so "caught up" compares resourceVersions, which etcd orders: every listed Pod
// was seen at its listed version or later, and every Pod the events still hold that the List did
// not have was created after the List (not deleted before it, with the deletion still in flight).
func (r *PodEvents) UpTo(t *testing.T, ctx context.Context, ns string) []PodEvent {
	t.Helper()
	list, err := Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	listRV := MustParseRV(t, list.ResourceVersion)
	want := map[string]uint64{}
	for _, p := range list.Items {
		want[p.Name] = MustParseRV(t, p.ResourceVersion)
	}
	var events []PodEvent
	Poll(t, ctx, 30*time.Second, "the Pod watch to catch up", func(context.Context) (bool, error) {
		r.Mu.Lock()
		defer r.Mu.Unlock()
		events = slices.Clone(r.Events)
		last, present := map[string]uint64{}, map[string]bool{}
		for _, p := range r.Initial {
			last[p.Name], present[p.Name] = MustParseRV(t, p.ResourceVersion), true
		}
		for _, e := range events {
			last[e.Pod.Name], present[e.Pod.Name] = MustParseRV(t, e.Pod.ResourceVersion), e.Typ != watch.Deleted
		}
		var behind []string
		for name, rv := range want {
			if last[name] < rv {
				behind = append(behind, fmt.Sprintf("%s at %d, listed at %d", name, last[name], rv))
			}
		}
		for name := range present {
			if _, listed := want[name]; present[name] && !listed && last[name] <= listRV {
				behind = append(behind, fmt.Sprintf("%s not yet seen deleted", name))
			}
		}
		if r.Err != nil {
			return false, r.Err
		}
		return len(behind) == 0, fmt.Errorf("behind: %v", behind)
	})
	return events
}

// Replay calls at(pods) with the namespace's Pods (not terminating) after each event.
func (r *PodEvents) Replay(events []PodEvent, at func(ev PodEvent, pods map[string]*corev1.Pod)) {
	pods := map[string]*corev1.Pod{}
	for _, p := range r.Initial {
		pods[p.Name] = p
	}
	for _, e := range events {
		if e.Typ == watch.Deleted || e.Pod.DeletionTimestamp != nil {
			delete(pods, e.Pod.Name)
		} else {
			pods[e.Pod.Name] = e.Pod
		}
		at(e, pods)
	}
}

// PodsAddedOrDeleted are the Pods the events created or deleted, as "+name" and "-name".
func PodsAddedOrDeleted(r *PodEvents, events []PodEvent) []string {
	known := map[string]bool{}
	for _, p := range r.Initial {
		known[p.Name] = true
	}
	var out []string
	for _, e := range events {
		switch {
		case e.Typ == watch.Added && !known[e.Pod.Name]:
			out = append(out, "+"+e.Pod.Name)
			known[e.Pod.Name] = true
		case e.Typ == watch.Deleted || e.Pod.DeletionTimestamp != nil:
			if known[e.Pod.Name] {
				out = append(out, "-"+e.Pod.Name)
				delete(known, e.Pod.Name)
			}
		}
	}
	return out
}

// ReadyTransition describes a Pod's Ready condition with what it depends on: the
// InPlaceUpdateReady gate, the container's restart count and readiness, and the resourceVersion.
func ReadyTransition(p *corev1.Pod) string {
	cond := func(t corev1.PodConditionType) string {
		for _, c := range p.Status.Conditions {
			if c.Type == t {
				return fmt.Sprintf("%s(%s)", c.Status, c.Reason)
			}
		}
		return "-"
	}
	var containers []string
	for _, s := range p.Status.ContainerStatuses {
		containers = append(containers, fmt.Sprintf("%s restarts=%d ready=%t", s.Name, s.RestartCount, s.Ready))
	}
	return fmt.Sprintf("rv %s gen %d/%d Ready=%s gate=%s containersReady=%s %s", p.ResourceVersion, p.Status.ObservedGeneration,
		p.Generation, cond(corev1.PodReady), cond(pub.InPlaceUpdateReady), cond(corev1.ContainersReady), strings.Join(containers, ","))
}
