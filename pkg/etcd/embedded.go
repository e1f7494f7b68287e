// Package etcd runs an etcd server inside the process, so inplace-apiserver needs nothing but a
// data directory by default. The data survives restarts of the process.
package etcd

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/storage/mvcc"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
)

// Options configure the embedded etcd.
type Options struct {
	// DataDir is where etcd keeps its data; created when missing.
	DataDir string
	// ClientPort is the loopback port clients connect to; 0 picks a free one.
	ClientPort int
	// UnsafeNoFsync skips fsync: only for tests, where losing data on a crash does not matter.
	UnsafeNoFsync bool
	// Defrag, when set, rewrites the database file without its free pages when it is idle and
	// mostly free or much grown (see DefragPolicy); nil never does.
	Defrag *DefragPolicy
	// HeartbeatInterval is the raft tick (etcd's --heartbeat-interval); the election timeout is
	// five ticks, the least etcd accepts. 0 means DefaultHeartbeatInterval.
	HeartbeatInterval time.Duration
	// BackendBatchInterval is the longest a write stays in the backend's open bbolt transaction
	// before it is committed to the database file (etcd's --backend-batch-interval). 0 means
	// DefaultBackendBatchInterval.
	BackendBatchInterval time.Duration
}

const (
	// DefaultHeartbeatInterval is 200 ms, twice etcd's default: every tick wakes the process
	// (raft's node loop and etcd's ticker), and a lone member sends heartbeats to nobody. The
	// price is at start: a fresh or restarted lone member fast-forwards its election ticks and
	// leads after 1 to 5 more ticks, 0.2-1 s instead of 0.1-0.5 s at 100 ms.
	DefaultHeartbeatInterval = 200 * time.Millisecond
	// DefaultBackendBatchInterval is 1 s instead of etcd's 100 ms: the backend goroutine wakes
	// once per interval, idle or not. It decides when applied writes reach the bbolt file, not
	// when they are durable or visible: etcd acknowledges a write once its raft entry is in the
	// fsynced WAL, replays the WAL from the backend's consistent index after a crash, and serves
	// reads of not yet committed writes from the transaction's read buffer. Deletes, the batch
	// limit (10000 writes), snapshots, compactions and defragmentation commit at once anyway.
	DefaultBackendBatchInterval = time.Second
)

// Server is a running embedded etcd.
type Server struct {
	etcd *embed.Etcd
	log  *klogWriter
	// stopDefrag ends the defragmenter, and defragDone closes once it has returned.
	stopDefrag context.CancelFunc
	defragDone chan struct{}
	// ClientURL is the URL clients reach it at, e.g. http://127.0.0.1:41327.
	ClientURL string
}

// Start starts etcd and waits until it serves, or ctx ends.
func Start(ctx context.Context, o Options) (*Server, error) {
	cfg := embed.NewConfig()
	cfg.Name = "inplace"
	cfg.Dir = filepath.Join(o.DataDir, "etcd")
	// Loopback only: this etcd is private to the process. The peer port is never dialled (one
	// member), so port 0 is fine there too.
	client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", o.ClientPort)}
	peer := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// One member needs no long election timeout: etcd fast-forwards a lone member's election
	// ticks, so it leads within one election timeout; five ticks is the least etcd accepts.
	// Every tick wakes the process: a 10 ms tick made idle inplace-apiserver spend 22 mCPU
	// instead of 7 at 100 ms (standalone, 60 s of /proc ticks), and the default is now 200 ms
	// (see DefaultHeartbeatInterval; docs/benchmarks.md, hack/bench-idle.sh).
	tick := o.HeartbeatInterval
	if tick <= 0 {
		tick = DefaultHeartbeatInterval
	}
	cfg.TickMs = uint(max(tick.Milliseconds(), 1))
	cfg.ElectionMs = 5 * cfg.TickMs
	cfg.BackendBatchInterval = o.BackendBatchInterval
	if cfg.BackendBatchInterval <= 0 {
		cfg.BackendBatchInterval = DefaultBackendBatchInterval
	}
	// etcd keeps the raft log since its last snapshot in memory, plus SnapshotCatchUpEntries
	// for followers that fall behind: 10000 + 5000 entries by default, each a whole stored
	// object. One member has no follower, and a snapshot of it is a small file, so snapshot
	// often and keep little: this is memory inplace-apiserver holds after every burst of
	// writes (~8 MB of its idle heap after hack/bench-scale.sh 300 with the defaults).
	cfg.SnapshotCount, cfg.SnapshotCatchUpEntries = 1000, 100
	cfg.UnsafeNoFsync = o.UnsafeNoFsync
	// etcd logs a lot at info: keep warnings and up. It also logs errors about its own closed
	// listeners during a clean Close, which the writer drops once closing has begun.
	w := &klogWriter{}
	logger := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()),
		zapcore.Lock(zapcore.AddSync(w)), zapcore.WarnLevel))
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(logger)

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("starting embedded etcd in %s: %w", cfg.Dir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		w.closing.Store(true)
		e.Close()
		return nil, fmt.Errorf("embedded etcd in %s failed while starting: %w", cfg.Dir, err)
	case <-ctx.Done():
		e.Close()
		return nil, fmt.Errorf("embedded etcd in %s: %w", cfg.Dir, ctx.Err())
	case <-time.After(time.Minute):
		e.Close()
		return nil, fmt.Errorf("embedded etcd in %s was not ready within a minute", cfg.Dir)
	}
	s := &Server{etcd: e, log: w, ClientURL: "http://" + e.Clients[0].Addr().String(), defragDone: make(chan struct{})}
	// The defragmenter lives as long as the server, not as long as the ctx of its start.
	var defragCtx context.Context
	defragCtx, s.stopDefrag = context.WithCancel(klog.NewContext(context.Background(), klog.FromContext(ctx)))
	go func() {
		defer close(s.defragDone)
		if o.Defrag != nil {
			s.defragWhenIdle(defragCtx, *o.Defrag)
		}
	}()
	klog.InfoS("Embedded etcd is ready", "dataDir", cfg.Dir, "clientURL", s.ClientURL)
	return s, nil
}

// ModRevision is the revision of the last write of key (an etcd key, with its storage prefix), read
// in process from the member's in-memory index: no request, no raft read index, no value read.
// found is false when the key does not exist. Every write this member acknowledged is in that
// index: etcd applies a write (its index and read buffer updated) before it answers the writer,
// and this lone member is the only one that can commit writes, so the revision is at least that of
// every write acknowledged before the call.
func (s *Server) ModRevision(ctx context.Context, key string) (rev int64, found bool, err error) {
	r, err := s.etcd.Server.KV().Range(ctx, []byte(key), nil, mvcc.RangeOptions{Limit: 1, FastKeysOnly: true})
	if err != nil {
		return 0, false, fmt.Errorf("reading the revision of %s from the embedded etcd: %w", key, err)
	}
	if len(r.KVs) == 0 {
		return 0, false, nil
	}
	return r.KVs[0].ModRevision, true, nil
}

// Close stops etcd cleanly, flushing its data.
func (s *Server) Close() {
	s.stopDefrag()
	<-s.defragDone
	s.log.closing.Store(true)
	s.etcd.Close()
	klog.InfoS("Embedded etcd stopped")
}

// klogWriter sends etcd's zap output to klog, so the process has one log stream.
type klogWriter struct {
	closing atomic.Bool
}

func (w *klogWriter) Write(p []byte) (int, error) {
	if !w.closing.Load() && !startupNoise(p) {
		klog.Info("etcd: " + strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

// startupNoise tells etcd's one error of a fresh data directory that is no error: its storage
// version monitor first runs as the cluster version is set, a few ms after the start, and reads
// the raft term from the database file, which the backend writes only at its next commit (up to
// BackendBatchInterval later). It logs "failed to update storage version ... missing term
// information" and succeeds at its next run, 4 s later.
func startupNoise(p []byte) bool {
	return bytes.Contains(p, []byte(`"failed to update storage version"`)) && bytes.Contains(p, []byte("missing term information"))
}
