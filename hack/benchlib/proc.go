// Package benchlib holds what the Go programs of the hack/bench-*.sh scripts share: running a
// request against many objects with n clients at once (Parallel), reading a process's CPU time and
// memory from /proc, following its peak memory while a phase runs, and printing ratios.
package benchlib

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Percentile is the p-th percentile (0 < p <= 100) of d, the smallest value at or above p% of
// them; 0 for none.
func Percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := (len(s)*p+99)/100 - 1
	return s[max(i, 0)]
}

// CPUSeconds is the CPU time (user + system) process pid has used so far (/proc/PID/stat, clock
// ticks of 1/100 s); 0 when it cannot be read.
func CPUSeconds(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndex(s, ") ")+2:])
	if len(fields) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(fields[11], 64)
	k, _ := strconv.ParseFloat(fields[12], 64)
	return (u + k) / 100
}

// RSSMB is the resident memory of process pid in MiB (/proc/PID/status VmRSS); 0 when it cannot be
// read.
func RSSMB(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// Ratio is a / b with two decimals, "-" when b is 0.
func Ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// PeakRSS follows the resident memory of processes while a phase runs: Start samples every
// interval until Stop, which returns the highest RSSMB seen per name (VmHWM would be the peak
// since the process started, not of the phase).
type PeakRSS struct {
	pids   map[string]int
	mu     sync.Mutex
	peak   map[string]float64
	cancel context.CancelFunc
	done   chan struct{}
}

// StartPeakRSS begins sampling pids (name -> pid) every interval.
func StartPeakRSS(pids map[string]int, interval time.Duration) *PeakRSS {
	ctx, cancel := context.WithCancel(context.Background())
	p := &PeakRSS{pids: pids, peak: map[string]float64{}, cancel: cancel, done: make(chan struct{})}
	p.sample()
	go func() {
		defer close(p.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				p.sample()
			}
		}
	}()
	return p
}

func (p *PeakRSS) sample() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, pid := range p.pids {
		p.peak[name] = max(p.peak[name], RSSMB(pid))
	}
}

// Stop ends the sampling and returns the peak of each name, in MiB.
func (p *PeakRSS) Stop() map[string]float64 {
	p.cancel()
	<-p.done
	p.sample()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peak
}
