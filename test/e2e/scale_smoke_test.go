package e2e

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// TestScaleSmoke: hack/bench-scale.sh, small: 10 CloneSets and 10 Deployments of 3 Pods on 5
// kwok nodes, against this cluster. The benchmark's own bookkeeping is what is checked: the
// in-place rollout of every CloneSet recreates no Pod and restarts each container once, nothing is
// left after deletion, and kube-apiserver's priority and fairness rejects nothing. The full run
// (1,000 x 10 on 100 nodes) is the benchmark itself, not a test.
func TestScaleSmoke(t *testing.T) {
	if framework.InClusterMode() {
		t.Skip("hack/bench-scale.sh restarts inplace-controller as a host process; this pass installed it in the cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "hack/bench-scale.sh", "10")
	cmd.Dir = framework.Repo
	cmd.Env = append(os.Environ(), "BENCH_NODES=5", "BENCH_REPLICAS=3", "BENCH_IDLE=1", "BENCH_TIMEOUT=300",
		"BENCH_CONCURRENCY=8")
	out, err := cmd.CombinedOutput()
	t.Logf("hack/bench-scale.sh 10:\n%s", out)
	if err != nil {
		t.Fatalf("hack/bench-scale.sh: %v", err)
	}
	// Rows: label, then the CloneSet column, then the Deployment column.
	row := func(label string) []string {
		for _, line := range strings.Split(string(out), "\n") {
			if rest, ok := strings.CutPrefix(line, label); ok {
				return strings.Fields(rest)
			}
		}
		t.Fatalf("no row %q in the benchmark's table", label)
		return nil
	}
	if got := row("rollout: Pods created / deleted"); len(got) < 3 || strings.Join(got[:3], " ") != "0 / 0" {
		t.Errorf("CloneSet rollout: Pods created / deleted %v, want 0 / 0 (in place)", got)
	}
	if got := row("rollout: container restarts"); len(got) < 1 || got[0] != "30" {
		t.Errorf("CloneSet rollout: container restarts %v, want 30 (each of the 30 Pods once)", got)
	}
	// The rollout's Pod writes by verb (the indented rows under "rollout: kube-apiserver writes per
	// Pod", CloneSet column first): the new spec is one Pod update per Pod, and the completion one
	// pods/status update carrying the completed state with InPlaceUpdateReady (kwok nodes run no
	// inplace-daemon, so the controller completes every update). Two Pod updates per Pod would
	// mean the completion went back to a Pod write plus a condition patch.
	writes := func(label string) string {
		re := regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(label) + `\s+([0-9.]+)\s`)
		if m := re.FindSubmatch(out); m != nil {
			return string(m[1])
		}
		return "none"
	}
	if got := writes("PUT pods"); got != "1.00" {
		t.Errorf("CloneSet rollout: Pod updates per Pod %s, want 1.00 (the new spec)", got)
	}
	if got := writes("PUT pods/status"); got != "1.00" {
		t.Errorf("CloneSet rollout: pods/status updates per Pod %s, want 1.00 (the completion)", got)
	}
	if got := row("delete: objects left"); len(got) < 2 || got[0] != "0" || got[1] != "0" {
		t.Errorf("objects left after delete %v, want 0 for both kinds", got)
	}
	for _, phase := range []string{"create", "rollout", "scale-down"} {
		// "T / R" per kind: R is what priority and fairness rejected.
		got := row(phase + ": 429s to controller / APF rejected")
		if len(got) < 6 || got[2] != "0" || got[5] != "0" {
			t.Errorf("%s: 429s / APF rejected %v, want nothing rejected", phase, got)
		}
	}
}
