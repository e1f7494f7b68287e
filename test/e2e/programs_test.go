package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// TestInplacePrograms: local-up started the inplace programs of this tree (hack/local-up.d) and
// they run: inplace-apiserver; inplace-controller, leading through its Lease and healthy;
// inplace-daemon, healthy.
func TestInplacePrograms(t *testing.T) {
	ctx := framework.Context(t)
	if d := framework.CurrentProgram(t, "inplace-apiserver"); !d.Alive() {
		t.Errorf("inplace-apiserver (pid %d) is not running", d.Pid)
	}

	t.Run("inplace-controller", func(t *testing.T) {
		if !hasCommand(t, "controller") {
			return
		}
		// A test before this one may have restarted the controllers: a leader that stops
		// releases the Lease, and a replica takes it within its retry period (2 s).
		framework.Poll(t, ctx, time.Minute, "Lease "+framework.InplaceNamespace+"/inplace-controller held", func(ctx context.Context) (bool, error) {
			lease, err := framework.Kube.CoordinationV1().Leases(framework.InplaceNamespace).Get(ctx, "inplace-controller", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "", fmt.Errorf("holder %v", lease.Spec.HolderIdentity)
		})
		if d := framework.CurrentProgram(t, "inplace-controller"); !d.Alive() {
			t.Fatalf("inplace-controller (pid %d) is not running", d.Pid)
		}
		waitHealthy(t, ctx, "inplace-controller", framework.ProgramAddress(t, "inplace-controller"))
	})

	t.Run("inplace-daemon", func(t *testing.T) {
		if !hasCommand(t, "daemon") {
			return
		}
		if d := framework.CurrentProgram(t, "inplace-daemon"); !d.Alive() {
			t.Fatalf("inplace-daemon (pid %d) is not running", d.Pid)
		}
		waitHealthy(t, ctx, "inplace-daemon", framework.ProgramAddress(t, "inplace-daemon"))
	})
}

// hasCommand tells whether this tree has cmd/NAME (a program local-up starts once it exists).
func hasCommand(t *testing.T, name string) bool {
	t.Helper()
	if _, err := os.Stat(filepath.Join(framework.Repo, "cmd", name)); err != nil {
		t.Logf("no cmd/%s in this tree, so nothing to check: %v", name, err)
		return false
	}
	return true
}

// waitHealthy waits until the program's /healthz and /readyz answer 200.
func waitHealthy(t *testing.T, ctx context.Context, name, address string) {
	t.Helper()
	for _, path := range []string{"/healthz", "/readyz"} {
		framework.Poll(t, ctx, 30*time.Second, name+" "+path, func(ctx context.Context) (bool, error) {
			code, body, err := framework.HTTPGet(ctx, "http://"+address+path)
			if err != nil {
				return false, err
			}
			return code == http.StatusOK, fmt.Errorf("HTTP %d: %s", code, body)
		})
	}
}
