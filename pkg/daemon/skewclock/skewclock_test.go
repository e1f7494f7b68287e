package skewclock

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestSkew(t *testing.T) {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for _, offset := range []time.Duration{-10 * time.Minute, 0, 10 * time.Minute} {
		base := clocktesting.NewFakeClock(t0)
		c := New(base, offset)
		start := c.Now()
		if want := t0.Add(offset); !start.Equal(want) {
			t.Errorf("offset %v: Now %v, want %v", offset, start, want)
		}
		timer := c.NewTimer(time.Second)
		base.Step(time.Second)
		select {
		case <-timer.C():
		default:
			t.Errorf("offset %v: the timer did not fire with the base clock", offset)
		}
		if got := c.Since(start); got != time.Second {
			t.Errorf("offset %v: Since %v, want 1s", offset, got)
		}
	}
	if c := New(nil, time.Hour); time.Until(c.Now()) < 59*time.Minute {
		t.Error("nil base is not the real clock shifted")
	}
}
