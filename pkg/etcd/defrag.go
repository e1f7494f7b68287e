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
// the member's reads and writes while it copies what is in use (measured: 39 ms for a 35 MB file
// holding 77 KB once a burst's history was compacted; 1.7 s for 35 MB still in use on a busy
// machine), so it is done only when the server is idle and the history compacted, and only for a
// file that is mostly free or has grown much since it was last rewritten.
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
	// MaxHistory: defragment only when at most this many revisions are not yet compacted. Until
	// the compaction that follows a burst (kube's storage layer compacts every 5 minutes, to the
	// revision it saw 5 minutes before), the burst's history is live and a rewrite would copy it.
	MaxHistory int64
}

// DefaultDefragPolicy looks every minute and, in a minute without writes once the history is
// compacted, rewrites a file of 32 MiB or more that is at least half free or has doubled since the
// last rewrite: 5 to 10 minutes after a burst's last write. A file that holds only live data is
// rewritten at most once per doubling.
var DefaultDefragPolicy = DefragPolicy{Interval: time.Minute, MinBytes: 32 << 20, MinFreeFraction: 0.5, GrowthFactor: 2, MaxHistory: 100}

// DBState is what the defragmenter looks at.
type DBState struct {
	// Size is the file's size in bytes, InUse the bytes etcd counts in use.
	Size, InUse int64
	// Baseline is the file's size after the last defragmentation, or at start.
	Baseline int64
	// Idle: no write was made since the last look.
	Idle bool
	// History is the number of revisions not yet compacted.
	History int64
}

// Defrag says whether to defragment now.
func (p DefragPolicy) Defrag(st DBState) bool {
	if !st.Idle || st.History > p.MaxHistory || st.Size < p.MinBytes {
		return false
	}
	return float64(st.Size-st.InUse) >= p.MinFreeFraction*float64(st.Size) ||
		float64(st.Size) >= p.GrowthFactor*float64(max(st.Baseline, 1))
}

// defragWhenIdle applies policy until ctx ends.
func (s *Server) defragWhenIdle(ctx context.Context, policy DefragPolicy) {
	logger := klog.FromContext(ctx).WithName("etcd-defrag")
	ticker := time.NewTicker(policy.Interval)
	defer ticker.Stop()
	lastRev, baseline := s.etcd.Server.KV().Rev(), s.etcd.Server.Backend().Size()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		kv, be := s.etcd.Server.KV(), s.etcd.Server.Backend()
		rev := kv.Rev()
		st := DBState{Size: be.Size(), InUse: be.SizeInUse(), Baseline: baseline,
			Idle: rev == lastRev, History: rev - kv.FirstRev()}
		lastRev = rev
		if !policy.Defrag(st) {
			continue
		}
		start := time.Now()
		if err := s.etcd.Server.Defragment(); err != nil {
			logger.Error(err, "Defragmenting the embedded etcd's database", "sizeBytes", st.Size, "inUseBytes", st.InUse)
			continue
		}
		be = s.etcd.Server.Backend()
		baseline = be.Size()
		logger.Info("Defragmented the embedded etcd's database", "beforeBytes", st.Size, "afterBytes", baseline, "history", st.History,
			"inUseBytes", be.SizeInUse(), "took", time.Since(start))
	}
}
