package expectations

import (
	"testing"
	"time"

	clock "k8s.io/utils/clock/testing"
)

var testNow = time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)

// A sequence as a controller lives it: creations and deletions settle as the cache shows them, and
// a key whose expectations time out is satisfied.
func TestExpectations(t *testing.T) {
	clk := clock.NewFakePassiveClock(testNow)
	e := New(clk)
	none := func(string) Cached { return Cached{} }
	onlyC := func(n string) Cached { return Cached{Exists: n == "c"} }
	e.ExpectCreations("k", "a", "b")
	e.ExpectDeletions("k", "c")
	if ok, left := e.Satisfied("k", onlyC); ok || left != Timeout {
		t.Fatalf("satisfied %v (left %v) with nothing observed, want false (left %v)", ok, left, Timeout)
	}
	e.CreationObserved("k", "a")
	e.CreationObserved("k", "b")
	if ok, _ := e.Satisfied("k", onlyC); ok {
		t.Fatal("satisfied with a deletion pending")
	}
	if ok, _ := e.Satisfied("k", none); !ok {
		t.Fatal("not satisfied once the deleted pod is gone")
	}
	e.ExpectCreations("k", "d")
	clk.SetTime(testNow.Add(Timeout + time.Second))
	if ok, _ := e.Satisfied("k", none); !ok {
		t.Fatal("not satisfied after the timeout")
	}
	if ok, _ := e.Satisfied("other", none); !ok {
		t.Fatal("a key without expectations is not satisfied")
	}
}

// Each kind of expectation settles on what the cache shows of the object, and only on that.
func TestSatisfied(t *testing.T) {
	for _, tc := range []struct {
		name   string
		expect func(e *Expectations)
		cached Cached
		want   bool
	}{
		{"creation, not in cache", func(e *Expectations) { e.ExpectCreations("k", "p") }, Cached{}, false},
		{"creation, in cache", func(e *Expectations) { e.ExpectCreations("k", "p") }, Cached{Exists: true}, true},
		{"creation observed", func(e *Expectations) { e.ExpectCreations("k", "p"); e.CreationObserved("k", "p") }, Cached{}, true},
		{"deletion, still there", func(e *Expectations) { e.ExpectDeletions("k", "p") }, Cached{Exists: true}, false},
		{"deletion, terminating", func(e *Expectations) { e.ExpectDeletions("k", "p") }, Cached{Exists: true, Terminating: true}, true},
		{"deletion, gone", func(e *Expectations) { e.ExpectDeletions("k", "p") }, Cached{}, true},
		{"deletion observed", func(e *Expectations) { e.ExpectDeletions("k", "p"); e.DeletionObserved("k", "p") }, Cached{Exists: true}, true},
		{"update, old revision", func(e *Expectations) { e.ExpectUpdate("k", "p", "r2") }, Cached{Exists: true, Revision: "r1"}, false},
		{"update, new revision", func(e *Expectations) { e.ExpectUpdate("k", "p", "r2") }, Cached{Exists: true, Revision: "r2"}, true},
		{"update, gone", func(e *Expectations) { e.ExpectUpdate("k", "p", "r2") }, Cached{}, true},
		{"update failed", func(e *Expectations) { e.ExpectUpdate("k", "p", "r2"); e.UpdateObserved("k", "p") }, Cached{Exists: true, Revision: "r1"}, true},
		{"lifecycle, old state", func(e *Expectations) { e.ExpectLifecycle("k", "p", "PreparingUpdate") }, Cached{Exists: true, Lifecycle: "Normal"}, false},
		{"lifecycle, new state", func(e *Expectations) { e.ExpectLifecycle("k", "p", "PreparingUpdate") }, Cached{Exists: true, Lifecycle: "PreparingUpdate"}, true},
		{"lifecycle, terminating", func(e *Expectations) { e.ExpectLifecycle("k", "p", "PreparingUpdate") }, Cached{Exists: true, Terminating: true}, true},
		{"forgotten", func(e *Expectations) { e.ExpectCreations("k", "p"); e.Forget("k") }, Cached{}, true},
		{"other key", func(e *Expectations) { e.ExpectCreations("other", "p") }, Cached{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(clock.NewFakePassiveClock(testNow))
			tc.expect(e)
			if ok, _ := e.Satisfied("k", func(string) Cached { return tc.cached }); ok != tc.want {
				t.Errorf("satisfied %v, want %v", ok, tc.want)
			}
		})
	}
}
