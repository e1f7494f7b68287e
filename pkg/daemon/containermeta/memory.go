package containermeta

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// hashCache holds the env-from-metadata hash of container instances, per Pod UID.
type hashCache struct {
	mu     sync.Mutex
	hashes map[types.UID]map[string]uint64
}

func newHashCache() *hashCache {
	return &hashCache{hashes: map[types.UID]map[string]uint64{}}
}

func (h *hashCache) get(uid types.UID, id string) (uint64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.hashes[uid][id]
	return v, ok
}

func (h *hashCache) set(uid types.UID, id string, hash uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hashes[uid] == nil {
		h.hashes[uid] = map[string]uint64{}
	}
	h.hashes[uid][id] = hash
}

// retain drops the Pod's instances not in ids (gone from the runtime or superseded).
func (h *hashCache) retain(uid types.UID, ids map[string]bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id := range h.hashes[uid] {
		if !ids[id] {
			delete(h.hashes[uid], id)
		}
	}
	if len(h.hashes[uid]) == 0 {
		delete(h.hashes, uid)
	}
}

func (h *hashCache) forget(uid types.UID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.hashes, uid)
}

// writeCache remembers the last annotation written per Pod and the resourceVersion of the Pod it
// was computed from.
type writeCache struct {
	mu      sync.Mutex
	written map[types.UID]write
}

type write struct {
	fromResourceVersion string
	value               string
}

func newWriteCache() *writeCache {
	return &writeCache{written: map[types.UID]write{}}
}

// pending is true when value was written already from this resourceVersion of the Pod: the
// informer has not delivered the write yet, so writing again would only repeat it.
// (resourceVersions are compared for equality only, never ordered.)
func (w *writeCache) pending(pod *corev1.Pod, value string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	last, ok := w.written[pod.UID]
	return ok && last.fromResourceVersion == pod.ResourceVersion && last.value == value
}

func (w *writeCache) record(pod *corev1.Pod, value string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.written[pod.UID] = write{fromResourceVersion: pod.ResourceVersion, value: value}
}

func (w *writeCache) forget(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.written, uid)
}

// idSet is a set of container ids whose members expire after ttl (container ids are unique, the
// expiry only bounds memory).
type idSet struct {
	mu    sync.Mutex
	ttl   time.Duration
	clock clock.PassiveClock
	ids   map[string]time.Time
}

func newIDSet(ttl time.Duration, clk clock.PassiveClock) *idSet {
	return &idSet{ttl: ttl, clock: clk, ids: map[string]time.Time{}}
}

func (s *idSet) has(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.ids[id]
	return ok
}

// add adds id and drops expired members; false when id was there already.
func (s *idSet) add(id string) bool {
	added, _ := s.addAt(id)
	return added
}

// age adds id if it is not there and says how long ago it was first added.
func (s *idSet) age(id string) time.Duration {
	_, at := s.addAt(id)
	return s.clock.Since(at)
}

func (s *idSet) addAt(id string) (bool, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	for k, t := range s.ids {
		if now.Sub(t) > s.ttl {
			delete(s.ids, k)
		}
	}
	if at, ok := s.ids[id]; ok {
		return false, at
	}
	s.ids[id] = now
	return true, now
}
