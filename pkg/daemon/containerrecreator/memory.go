package containerrecreator

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// memory is what the controller remembers between syncs, on this daemon's clock only: nothing
// here is compared with a time written by another machine.
type memory struct {
	clock clock.PassiveClock

	mu sync.Mutex
	// runningSince is, per Pod UID, when each container instance was first seen running.
	runningSince map[types.UID]map[string]time.Time
	// unreadySince is, per request UID, when its unready-acquired annotation was first seen.
	unreadySince map[types.UID]time.Time
	// stopped are the container instances this daemon stopped (ids are unique; entries expire
	// after stoppedTTL only to bound memory).
	stopped map[string]time.Time
	// written is, per request UID, the last status this daemon wrote and the resourceVersion it
	// was written over, so that a cache not showing the write yet is not acted on again.
	written map[types.UID]write
}

type write struct {
	fromResourceVersion string
	crr                 *v1alpha1.ContainerRecreateRequest
}

const stoppedTTL = time.Hour

func newMemory(c clock.PassiveClock) *memory {
	return &memory{clock: c, runningSince: map[types.UID]map[string]time.Time{}, unreadySince: map[types.UID]time.Time{},
		stopped: map[string]time.Time{}, written: map[types.UID]write{}}
}

// observeRunning records the running instances of a Pod (ids) and forgets the others; it returns
// when each was first seen running.
func (m *memory) observeRunning(pod types.UID, ids []string) map[string]time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	old := m.runningSince[pod]
	seen := make(map[string]time.Time, len(ids))
	for _, id := range ids {
		if at, ok := old[id]; ok {
			seen[id] = at
		} else {
			seen[id] = now
		}
	}
	if len(seen) == 0 {
		delete(m.runningSince, pod)
	} else {
		m.runningSince[pod] = seen
	}
	out := make(map[string]time.Time, len(seen))
	for id, at := range seen {
		out[id] = at
	}
	return out
}

// observeUnready records that the request's unready-acquired annotation is there and returns
// when it was first seen.
func (m *memory) observeUnready(crr types.UID) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	at, ok := m.unreadySince[crr]
	if !ok {
		at = m.clock.Now()
		m.unreadySince[crr] = at
	}
	return at
}

// markStopped records a container instance this daemon stops.
func (m *memory) markStopped(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	for k, at := range m.stopped {
		if now.Sub(at) > stoppedTTL {
			delete(m.stopped, k)
		}
	}
	m.stopped[id] = now
}

// stoppedIDs is the set of instances this daemon stopped.
func (m *memory) stoppedIDs() map[string]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]bool, len(m.stopped))
	for id := range m.stopped {
		out[id] = true
	}
	return out
}

// recordWrite remembers the request as this daemon wrote it over fromResourceVersion.
func (m *memory) recordWrite(fromResourceVersion string, crr *v1alpha1.ContainerRecreateRequest) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.written[crr.UID] = write{fromResourceVersion: fromResourceVersion, crr: crr}
}

// latest is the newest known version of a request from the cache: the one this daemon wrote
// while the cache still has the version it was written over (resourceVersions are compared for
// equality only, never ordered).
func (m *memory) latest(crr *v1alpha1.ContainerRecreateRequest) *v1alpha1.ContainerRecreateRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := m.written[crr.UID]
	if !ok {
		return crr
	}
	if w.fromResourceVersion == crr.ResourceVersion {
		return w.crr
	}
	delete(m.written, crr.UID) // the cache caught up, or someone else wrote since
	return crr
}

// forgetRequest drops what is remembered of a request that left the cache.
func (m *memory) forgetRequest(crr types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.unreadySince, crr)
	delete(m.written, crr)
}

// forgetPod drops what is remembered of a deleted Pod (stopped instances expire on their own).
func (m *memory) forgetPod(pod types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.runningSince, pod)
}
