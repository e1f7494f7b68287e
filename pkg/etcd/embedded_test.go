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
