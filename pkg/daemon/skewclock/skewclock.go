// Package skewclock is a clock set off from another by a fixed offset, for tests that run
// inplace-daemon with a clock that disagrees with the other machines' (inplace-daemon's hidden
// --clock-skew flag). Only the wall time moves: durations, timers and tickers are the base
// clock's, so every wait measured on this clock alone lasts as long as on the base clock.
package skewclock

import (
	"time"

	"k8s.io/utils/clock"
)

// Clock is base shifted by Offset.
type Clock struct {
	base   clock.WithTicker
	offset time.Duration
}

var _ clock.WithTicker = &Clock{}

// New shifts base by offset (which may be negative); a nil base is the real clock.
func New(base clock.WithTicker, offset time.Duration) *Clock {
	if base == nil {
		base = clock.RealClock{}
	}
	return &Clock{base: base, offset: offset}
}

// Now is the base clock's time plus the offset.
func (c *Clock) Now() time.Time { return c.base.Now().Add(c.offset) }

// Since is the time elapsed since t, a time of this clock.
func (c *Clock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// After, NewTimer, Sleep, Tick and NewTicker wait as the base clock does.
func (c *Clock) After(d time.Duration) <-chan time.Time { return c.base.After(d) }

// NewTimer is the base clock's timer.
func (c *Clock) NewTimer(d time.Duration) clock.Timer { return c.base.NewTimer(d) }

// Sleep sleeps on the base clock.
func (c *Clock) Sleep(d time.Duration) { c.base.Sleep(d) }

// Tick is the base clock's ticker channel.
func (c *Clock) Tick(d time.Duration) <-chan time.Time { return c.base.Tick(d) }

// NewTicker is the base clock's ticker.
func (c *Clock) NewTicker(d time.Duration) clock.Ticker { return c.base.NewTicker(d) }
