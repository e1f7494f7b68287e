package memtrim

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// TestPolicy: trim once a busy process turns idle; never while it is busy, never when it has
// been idle since the last trim.
func TestPolicy(t *testing.T) {
	p := Policy{Interval: time.Second, IdleBytes: 10, BusyBytes: 100}
	for _, tc := range []struct {
		name                  string
		inInterval, sinceTrim uint64
		want                  bool
	}{
		{"idle after a burst", 5, 1000, true},
		{"still busy", 50, 1000, false},
		{"idle, nothing allocated since the last trim", 5, 50, false},
		{"at the idle bound", 10, 101, true},
		{"at the busy bound", 0, 100, false},
	} {
		if got := p.Trim(tc.inInterval, tc.sinceTrim); got != tc.want {
			t.Errorf("%s: Trim(%d, %d) = %v, want %v", tc.name, tc.inInterval, tc.sinceTrim, got, tc.want)
		}
	}
}

var live, garbage [][]byte

// TestRunReturnsTheBurst: a burst's garbage that the runtime would keep (64 MiB live make a heap
// goal of 128 MiB, under which the runtime neither collects nor returns anything) is returned to
// the system by the trimmer once allocation stops.
func TestRunReturnsTheBurst(t *testing.T) {
	for i := 0; i < 64; i++ {
		live = append(live, make([]byte, 1<<20))
	}
	runtime.GC()
	defer func() { live = nil }()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := Start(ctx, Policy{Interval: 50 * time.Millisecond, IdleBytes: 1 << 20, BusyBytes: 32 << 20})
	for i := 0; i < 48; i++ {
		garbage = append(garbage, make([]byte, 1<<20))
	}
	garbage = nil

	// The heap holds the live 64 MiB and, until a collection, the garbage's 48 MiB; once trimmed,
	// the live data and a little more.
	deadline := time.Now().Add(5 * time.Second)
	for heapMappedBytes() > 80<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("the heap holds %d MiB with 64 MiB live: the burst's 48 MiB were not returned", heapMappedBytes()>>20)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
}
