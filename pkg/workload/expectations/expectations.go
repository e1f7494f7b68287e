// Package expectations is the expectations cache of the workload controllers (CloneSet, and the
// Advanced StatefulSet and DaemonSet to come): per owner key, the Pods a controller created,
// deleted, updated in place or moved to a lifecycle state whose effect its informer has not shown
// yet. A slow informer must never make a controller create or delete the same Pods twice, nor
// count a Pod it just began to update as available; a controller asks Satisfied before it acts.
//
// Objects are tracked by name: a controller chooses the names of the Pods it creates, and a name
// is unique in its namespace while the object exists. A controller that also tracks other objects
// (a CloneSet's PVCs) gives them names that cannot be Pod names and resolves them in its Lookup.
// Keys are opaque strings, usually namespace/name of the owner.
package expectations

import (
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// Timeout is how long a controller waits for the informer to show what it expects before it stops
// trusting its expectations and acts on the cache as it is (an event may have been lost).
const Timeout = 5 * time.Minute

// Expectations remembers, per owner key, what the informer has not shown yet. It is safe for
// concurrent use.
type Expectations struct {
	mu      sync.Mutex
	pending map[string]*pending
	clock   clock.PassiveClock
	timeout time.Duration
}

type pending struct {
	creations, deletions sets.Set[string]
	// updates maps a Pod updated in place to the revision it was updated to.
	updates map[string]string
	// lifecycles maps a Pod moved to a lifecycle state to that state.
	lifecycles map[string]string
	// since is when the last expectation was added.
	since time.Time
}

// New returns empty expectations that read the time from clk (a controller's clock, so that tests
// can move it past Timeout).
func New(clk clock.PassiveClock) *Expectations {
	return &Expectations{pending: map[string]*pending{}, clock: clk, timeout: Timeout}
}

func (e *Expectations) get(key string) *pending {
	p := e.pending[key]
	if p == nil {
		p = &pending{creations: sets.New[string](), deletions: sets.New[string](), updates: map[string]string{},
			lifecycles: map[string]string{}}
		e.pending[key] = p
	}
	return p
}

// ExpectCreations records objects about to be created.
func (e *Expectations) ExpectCreations(key string, names ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.get(key)
	p.creations.Insert(names...)
	p.since = e.clock.Now()
}

// ExpectDeletions records objects about to be deleted.
func (e *Expectations) ExpectDeletions(key string, names ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.get(key)
	p.deletions.Insert(names...)
	p.since = e.clock.Now()
}

// ExpectUpdate records a Pod about to be updated in place to revision.
func (e *Expectations) ExpectUpdate(key, name, revision string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.get(key)
	p.updates[name] = revision
	p.since = e.clock.Now()
}

// ExpectLifecycle records a Pod just moved to a lifecycle state.
func (e *Expectations) ExpectLifecycle(key, name, state string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.get(key)
	p.lifecycles[name] = state
	p.since = e.clock.Now()
}

// UpdateObserved forgets an expected in-place update: its request failed.
func (e *Expectations) UpdateObserved(key, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p := e.pending[key]; p != nil {
		delete(p.updates, name)
	}
}

// CreationObserved forgets an expected creation: the informer showed the object, or its creation
// failed.
func (e *Expectations) CreationObserved(key, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p := e.pending[key]; p != nil {
		p.creations.Delete(name)
	}
}

// DeletionObserved forgets an expected deletion: the informer showed the object terminating or
// gone, or its deletion failed.
func (e *Expectations) DeletionObserved(key, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p := e.pending[key]; p != nil {
		p.deletions.Delete(name)
	}
}

// Cached is what the informer's cache shows of an object.
type Cached struct {
	Exists, Terminating bool
	// Revision is a Pod's controller-revision-hash label, Lifecycle its lifecycle state label.
	Revision, Lifecycle string
}

// Lookup looks an object up, by the name it is expected under, in the informer's cache.
type Lookup func(name string) Cached

// Satisfied settles the expectations of key against the cache (an event handler may have missed
// them) and tells whether none is left; expectations older than Timeout are dropped. When not
// satisfied it also says when they will time out, for the caller to look again then.
func (e *Expectations) Satisfied(key string, lookup Lookup) (bool, time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.pending[key]
	if p == nil {
		return true, 0
	}
	for name := range p.creations {
		if lookup(name).Exists {
			p.creations.Delete(name)
		}
	}
	for name := range p.deletions {
		if s := lookup(name); !s.Exists || s.Terminating {
			p.deletions.Delete(name)
		}
	}
	for name, want := range p.updates {
		if s := lookup(name); !s.Exists || s.Terminating || s.Revision == want {
			delete(p.updates, name)
		}
	}
	for name, want := range p.lifecycles {
		if s := lookup(name); !s.Exists || s.Terminating || s.Lifecycle == want {
			delete(p.lifecycles, name)
		}
	}
	if p.creations.Len() == 0 && p.deletions.Len() == 0 && len(p.updates) == 0 && len(p.lifecycles) == 0 {
		delete(e.pending, key)
		return true, 0
	}
	if left := p.since.Add(e.timeout).Sub(e.clock.Now()); left > 0 {
		return false, left
	}
	delete(e.pending, key)
	return true, 0
}

// Forget drops all expectations of key (its owner is gone).
func (e *Expectations) Forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.pending, key)
}

// PodCached is what the expectations of a workload see of a Pod its cache shows: it exists, is
// terminating or not, and has its revision (controller-revision-hash) and lifecycle state labels.
func PodCached(pod *corev1.Pod) Cached {
	return Cached{Exists: true, Terminating: pod.DeletionTimestamp != nil,
		Revision: pod.Labels[appsv1.ControllerRevisionHashLabelKey], Lifecycle: pod.Labels[pub.LifecycleStateKey]}
}

// PodLookup looks Pods up by name with get (a Pod namespace lister's Get); a Pod get cannot
// return does not exist.
func PodLookup(get func(name string) (*corev1.Pod, error)) Lookup {
	return func(name string) Cached {
		pod, err := get(name)
		if err != nil {
			return Cached{}
		}
		return PodCached(pod)
	}
}
