package etcd

import (
	"context"
	"time"

	"k8s.io/klog/v2"
)

// DefragPolicy says when the embedded etcd rewrites its database file without its free pages.
//
// etcd never gives back the space its history took: once a compaction has dropped old revisions,
// their pages are free for new writes but stay in the file, and the kernel keeps them in the
// process's memory map as long as they were touched. An etcd run by operators gets `etcdctl
// defrag` from them; nobody runs that against an etcd inside inplace-apiserver, so after a burst
// (a rollout of a thousand CloneSets writes each of them tens of times) the file and the mapped
// memory would stay at the burst's size for the life of the data directory. Defragmenting blocks
// the member's reads and writes while it copies what is in use (tens of milliseconds for the tens
// of MB a burst leaves), so it is done only when the server is idle, and only for a file that is
// mostly free or has grown much since it was last rewritten.
type DefragPolicy struct {
	// Interval is how often the database is looked at.
	Interval time.Duration
	// MinBytes: smaller files are left as they are.
	MinBytes int64
	// MinFreeFraction: defragment when at least this share of the file is free.
	MinFreeFraction float64
	// GrowthFactor: defragment too when the file has grown to this multiple of its size after the
	// last defragmentation (or at start). etcd counts the pages a compaction freed as free only
	// once a later write has begun, which an idle server does not make, so its free share can
	// read as zero over a file that is mostly history; growth is the sign that it may not be.
	GrowthFactor float64
}

// DefaultDefragPolicy looks every minute and, in a minute without writes, rewrites a file of
// 32 MiB or more that is at least half free or has doubled since the last rewrite. kube's storage
// layer compacts etcd every 5 minutes, so a burst's history is dropped within 5 minutes of its end
// and its space returned a minute or two after that. A file that holds only live data is rewritten
// at most once per doubling.
var DefaultDefragPolicy = DefragPolicy{Interval: time.Minute, MinBytes: 32 << 20, MinFreeFraction: 0.5, GrowthFactor: 2}

// Defrag says whether to defragment a database file of size bytes of which inUse are counted in
// use, baseline its size after the last defragmentation (or at start), when idle says no write
// was made since the last look.
func (p DefragPolicy) Defrag(size, inUse, baseline int64, idle bool) bool {
	if !idle || size < p.MinBytes {
		return false
	}
	return float64(size-inUse) >= p.MinFreeFraction*float64(size) ||
		float64(size) >= p.GrowthFactor*float64(max(baseline, 1))
}

// defragWhenIdle applies policy until ctx ends.
func (s *Server) defragWhenIdle(ctx context.Context, policy DefragPolicy) {
	logger := klog.FromContext(ctx).WithName("etcd-defrag")
	ticker := time.NewTicker(policy.Interval)
	defer ticker.Stop()
	lastRev := s.etcd.Server.KV().Rev()
	baseline := s.etcd.Server.Backend().Size()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		rev := s.etcd.Server.KV().Rev()
		be := s.etcd.Server.Backend()
		size, inUse := be.Size(), be.SizeInUse()
		idle := rev == lastRev
		lastRev = rev
		if !policy.Defrag(size, inUse, baseline, idle) {
			continue
		}
		start := time.Now()
		if err := s.etcd.Server.Defragment(); err != nil {
			logger.Error(err, "Defragmenting the embedded etcd's database", "sizeBytes", size, "inUseBytes", inUse)
			continue
		}
		be = s.etcd.Server.Backend()
		baseline = be.Size()
		logger.Info("Defragmented the embedded etcd's database", "beforeBytes", size, "afterBytes", baseline,
			"inUseBytes", be.SizeInUse(), "took", time.Since(start))
	}
}
