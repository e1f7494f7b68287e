// Package memtrim gives the Go heap's free memory back to the operating system once a process
// that was busy turns idle.
//
// The Go runtime sizes its heap for the work it last saw: after a burst (a rollout of thousands of
// Pods, a list of thousands of objects) the heap may hold twice the live data until the next
// garbage collection, and an idle process allocates too little to ever run one; the background
// scavenger only returns what lies above that goal. So a server that served a burst keeps the
// burst's memory for as long as it stays idle. Trimming once, when the burst is over, costs one
// collection and returns that memory at once; a process that stays busy is never trimmed (its
// heap is in use), and one that stays idle is not trimmed again (there is nothing new to return).
package memtrim

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"k8s.io/klog/v2"
)

// Policy says when to trim.
type Policy struct {
	// Interval is how often the allocations are looked at.
	Interval time.Duration
	// IdleBytes: a process that allocated at most this much in the last interval is idle.
	IdleBytes uint64
	// BusyBytes: a process that allocated more than this since the last trim has memory to give
	// back once it is idle.
	BusyBytes uint64
}

// DefaultPolicy looks every 30 s, calls a process idle under 32 MiB allocated in that time
// (inplace-apiserver idle allocates a few MiB per 30 s: health checks, metrics scrapes), and trims
// after 512 MiB were allocated since the last trim.
var DefaultPolicy = Policy{Interval: 30 * time.Second, IdleBytes: 32 << 20, BusyBytes: 512 << 20}

// Trim says whether to trim now: the process is idle, and was busy since the last trim.
func (p Policy) Trim(allocatedInInterval, allocatedSinceTrim uint64) bool {
	return allocatedInInterval <= p.IdleBytes && allocatedSinceTrim > p.BusyBytes
}

// Start trims under policy, in the background, until ctx ends; the returned channel closes then.
// What the process allocated before Start does not count as busy.
func Start(ctx context.Context, policy Policy) <-chan struct{} {
	done := make(chan struct{})
	last := allocatedBytes()
	go func() {
		defer close(done)
		run(ctx, policy, last)
	}()
	return done
}

func run(ctx context.Context, policy Policy, last uint64) {
	logger := klog.FromContext(ctx).WithName("memtrim")
	ticker := time.NewTicker(policy.Interval)
	defer ticker.Stop()
	lastTrim := last
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		now := allocatedBytes()
		sinceTrim := now - lastTrim
		if !policy.Trim(now-last, sinceTrim) {
			last = now
			continue
		}
		before := heapMappedBytes()
		start := time.Now()
		debug.FreeOSMemory()
		last = allocatedBytes()
		lastTrim = last
		logger.V(2).Info("Idle after a busy period: returned the heap's free memory to the system",
			"allocatedSinceLastTrim", sinceTrim, "heapBytesBefore", before, "heapBytesAfter", heapMappedBytes(), "took", time.Since(start))
	}
}

// allocatedBytes is how much the heap allocated since the process started.
func allocatedBytes() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// heapMappedBytes is the heap memory the process holds from the operating system: objects, the
// unused parts of their spans and the free spans not yet returned.
func heapMappedBytes() uint64 {
	s := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
	}
	metrics.Read(s)
	return s[0].Value.Uint64() + s[1].Value.Uint64() + s[2].Value.Uint64()
}
