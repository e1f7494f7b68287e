package etcd

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The embedded etcd snapshots every SnapshotCount writes and keeps few raft entries in memory:
// every acknowledged write must still be there after a restart that recovers from a snapshot
// plus the WAL written after it.
func TestDataSurvivesRestartAcrossSnapshots(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	writes := 2*1000 + 321 // past two snapshots, ending mid-way to the third

	s := start(ctx, t, dir)
	c := client(t, s)
	for i := range writes {
		if _, err := c.Put(ctx, fmt.Sprintf("/k/%05d", i), fmt.Sprintf("v%d", i)); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	_ = c.Close()
	s.Close()
	snaps, err := filepath.Glob(filepath.Join(dir, "etcd", "member", "snap", "*.snap"))
	if err != nil || len(snaps) == 0 {
		t.Fatalf("no raft snapshot after %d writes (%v): the restart would not test recovery from one", writes, err)
	}

	s = start(ctx, t, dir)
	defer s.Close()
	c = client(t, s)
	defer func() { _ = c.Close() }()
	resp, err := c.Get(ctx, "/k/", clientv3.WithPrefix())
	if err != nil {
		t.Fatalf("reading back: %v", err)
	}
	if len(resp.Kvs) != writes {
		t.Fatalf("%d keys after the restart, want %d", len(resp.Kvs), writes)
	}
	last := resp.Kvs[len(resp.Kvs)-1]
	if want := fmt.Sprintf("v%d", writes-1); string(last.Value) != want {
		t.Errorf("last key %s = %q, want %q", last.Key, last.Value, want)
	}
}

func start(ctx context.Context, t *testing.T, dir string) *Server {
	t.Helper()
	s, err := Start(ctx, Options{DataDir: dir, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func client(t *testing.T, s *Server) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{s.ClientURL}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// After a burst whose history a compaction dropped, an idle embedded etcd rewrites its database
// file without the free pages, and keeps what is in use.
func TestDefragmentsIdleMostlyFreeDatabase(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Start(ctx, Options{DataDir: t.TempDir(), UnsafeNoFsync: true,
		Defrag: &DefragPolicy{Interval: 100 * time.Millisecond, MinBytes: 1 << 20, MinFreeFraction: 0.5, GrowthFactor: 2, MaxHistory: 10}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := client(t, s)
	defer func() { _ = c.Close() }()

	if _, err := c.Put(ctx, "/kept", "still here"); err != nil {
		t.Fatal(err)
	}
	value := string(make([]byte, 32<<10))
	for i := range 400 {
		if _, err := c.Put(ctx, fmt.Sprintf("/burst/%03d", i), value); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	del, err := c.Delete(ctx, "/burst/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compact(ctx, del.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	burst := int64(400 * 32 << 10)
	// The file held the burst until the defragmenter's next idle look; poll for it to shrink.
	deadline := time.Now().Add(time.Minute)
	for size := s.etcd.Server.Backend().Size(); size >= burst/2; size = s.etcd.Server.Backend().Size() {
		if time.Now().After(deadline) {
			t.Fatalf("database file still %d bytes a minute after the burst was compacted (in use: %d)",
				size, s.etcd.Server.Backend().SizeInUse())
		}
		time.Sleep(50 * time.Millisecond)
	}
	resp, err := c.Get(ctx, "/kept")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "still here" {
		t.Fatalf("the kept key after the defragmentation: %v, %v", resp, err)
	}
	if _, err := c.Put(ctx, "/after", "writable"); err != nil {
		t.Fatalf("writing after the defragmentation: %v", err)
	}
}

func TestDefragPolicy(t *testing.T) {
	p := DefragPolicy{Interval: time.Minute, MinBytes: 32 << 20, MinFreeFraction: 0.5, GrowthFactor: 2, MaxHistory: 100}
	const mb = 1 << 20
	for _, tc := range []struct {
		name string
		st   DBState
		want bool
	}{
		{"idle, compacted, large, mostly free", DBState{100 * mb, 10 * mb, 100 * mb, true, 1}, true},
		{"idle, compacted, large, exactly half free", DBState{64 * mb, 32 * mb, 64 * mb, true, 1}, true},
		{"busy: writes since the last look", DBState{100 * mb, 10 * mb, 1 * mb, false, 1}, false},
		{"a burst's history not compacted yet", DBState{100 * mb, 10 * mb, 1 * mb, true, 5000}, false},
		{"as much history as allowed", DBState{100 * mb, 10 * mb, 100 * mb, true, 100}, true},
		{"mostly in use, as large as after the last rewrite", DBState{100 * mb, 60 * mb, 100 * mb, true, 1}, false},
		{"counted in use, doubled since the last rewrite", DBState{100 * mb, 100 * mb, 50 * mb, true, 1}, true},
		{"counted in use, grown less than double", DBState{100 * mb, 100 * mb, 51 * mb, true, 1}, false},
		{"small, all free", DBState{16 * mb, 0, 1 << 10, true, 0}, false},
		{"empty", DBState{}, false},
	} {
		if got := p.Defrag(tc.st); got != tc.want {
			t.Errorf("%s: Defrag(%+v) = %v, want %v", tc.name, tc.st, got, tc.want)
		}
	}
}

// The embedded etcd ticks every DefaultHeartbeatInterval and commits its backend every
// DefaultBackendBatchInterval unless told otherwise, with an election timeout of five ticks (the
// least etcd accepts), and serves either way.
func TestTimings(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name                  string
		heartbeat, batch      time.Duration
		wantTick, wantElected uint
		wantBatch             time.Duration
	}{
		{name: "defaults", wantTick: 200, wantElected: 1000, wantBatch: time.Second},
		{name: "set", heartbeat: 50 * time.Millisecond, batch: 300 * time.Millisecond, wantTick: 50, wantElected: 250, wantBatch: 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Start(ctx, Options{DataDir: t.TempDir(), UnsafeNoFsync: true, HeartbeatInterval: tc.heartbeat, BackendBatchInterval: tc.batch})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			cfg := s.etcd.Config()
			if cfg.TickMs != tc.wantTick || cfg.ElectionMs != tc.wantElected || cfg.BackendBatchInterval != tc.wantBatch {
				t.Errorf("tick %d ms, election %d ms, backend batch %s; want %d ms, %d ms, %s",
					cfg.TickMs, cfg.ElectionMs, cfg.BackendBatchInterval, tc.wantTick, tc.wantElected, tc.wantBatch)
			}
			c := client(t, s)
			defer func() { _ = c.Close() }()
			if _, err := c.Put(ctx, "/k", "v"); err != nil {
				t.Fatalf("put: %v", err)
			}
			if resp, err := c.Get(ctx, "/k"); err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
				t.Errorf("get right after the put (not yet committed to the backend file): %v, %v", resp, err)
			}
		})
	}
}

// Only etcd's storage-version error of a fresh start is dropped from the log.
func TestStartupNoise(t *testing.T) {
	noise := `{"level":"error","msg":"failed to update storage version","cluster-version":"3.7.0","error":"cannot detect storage schema version: missing term information"}`
	if !startupNoise([]byte(noise)) {
		t.Error("the fresh start's storage version error is logged")
	}
	for _, line := range []string{
		`{"level":"error","msg":"failed to update storage version","cluster-version":"3.7.0","error":"some other failure"}`,
		`{"level":"warn","msg":"apply request took too long"}`,
	} {
		if startupNoise([]byte(line)) {
			t.Errorf("%s is dropped from the log", line)
		}
	}
}
