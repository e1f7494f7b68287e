package cloneset

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
)

// expectationsTimeout is how long the controller waits for the informer to show Pods it created
// or deleted before it stops trusting its expectations and acts on the cache as it is (an event
// may have been lost).
const expectationsTimeout = 5 * time.Minute

// expectations remembers, per CloneSet key, the Pods created, deleted and updated in place whose
// effect the Pod informer has not shown yet, so that a slow informer never makes the controller
// create or delete the same Pods twice, nor count a Pod it just began to update as available. Pods are tracked by name: the controller chooses the names of the Pods it
// creates, and a name is unique in its namespace while the Pod exists.
type expectations struct {
	mu      sync.Mutex
	pending map[string]*pending
	now     func() time.Time
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

func newExpectations(now func() time.Time) *expectations {
	return &expectations{pending: map[string]*pending{}, now: now, timeout: expectationsTimeout}
}

func (e *expectations) get(key string) *pending {
	p := e.pending[key]
	if p == nil {
		p = &pending{creations: sets.New[string](), deletions: sets.New[string](), updates: map[string]string{},
			lifecycles: map[string]string{}}
		e.pending[key] = p
	}
	return p
}

// expectCreations records Pods about to be created.
func (e *expectations) expectCreations(key string, names ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.get(key)
	p.creations.Insert(names...)
	p.since = e.now()
}

// expectDeletions records Pods about to be deleted.
func (e *expectations) expectDeletions(key string, names ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.get(key)
	p.deletions.Insert(names...)
	p.since = e.now()
}

// expectUpdate records a Pod about to be updated in place to revision.
func (e *expectations) expectUpdate(key, name, revision string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.get(key)
	p.updates[name] = revision
	p.since = e.now()
}

// expectLifecycle records a Pod just moved to a lifecycle state.
func (e *expectations) expectLifecycle(key, name, state string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.get(key)
	p.lifecycles[name] = state
	p.since = e.now()
}

// updateObserved forgets an expected in-place update: its request failed.
func (e *expectations) updateObserved(key, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p := e.pending[key]; p != nil {
		delete(p.updates, name)
	}
}

// creationObserved forgets an expected creation: the informer showed the Pod, or its creation
// failed.
func (e *expectations) creationObserved(key, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p := e.pending[key]; p != nil {
		p.creations.Delete(name)
	}
}

// deletionObserved forgets an expected deletion: the informer showed the Pod terminating or gone,
// or its deletion failed.
func (e *expectations) deletionObserved(key, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p := e.pending[key]; p != nil {
		p.deletions.Delete(name)
	}
}

// cachedPod is what the cache shows of a Pod.
type cachedPod struct {
	exists, terminating bool
	// revision is its controller-revision-hash label, lifecycle its lifecycle state label.
	revision, lifecycle string
}

// podState looks a Pod up in the cache.
type podState func(name string) cachedPod

// satisfied settles the expectations of key against the cache (an event handler may have missed
// them) and tells whether none is left; expectations older than the timeout are dropped. When not
// satisfied it also says when they will time out.
func (e *expectations) satisfied(key string, state podState) (bool, time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.pending[key]
	if p == nil {
		return true, 0
	}
	for name := range p.creations {
		if state(name).exists {
			p.creations.Delete(name)
		}
	}
	for name := range p.deletions {
		if s := state(name); !s.exists || s.terminating {
			p.deletions.Delete(name)
		}
	}
	for name, want := range p.updates {
		if s := state(name); !s.exists || s.terminating || s.revision == want {
			delete(p.updates, name)
		}
	}
	for name, want := range p.lifecycles {
		if s := state(name); !s.exists || s.terminating || s.lifecycle == want {
			delete(p.lifecycles, name)
		}
	}
	if p.creations.Len() == 0 && p.deletions.Len() == 0 && len(p.updates) == 0 && len(p.lifecycles) == 0 {
		delete(e.pending, key)
		return true, 0
	}
	if left := p.since.Add(e.timeout).Sub(e.now()); left > 0 {
		return false, left
	}
	delete(e.pending, key)
	return true, 0
}

// forget drops all expectations of key (its CloneSet is gone).
func (e *expectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.pending, key)
}
