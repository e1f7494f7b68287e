package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestInplacePrograms: local-up started the inplace programs of this tree (hack/local-up.d) and
// they run: inplace-apiserver, and inplace-controller (leading, through its Lease, and healthy).
func TestInplacePrograms(t *testing.T) {
	ctx := testContext(t)
	if d := readRecordedDaemon(t, "inplace-apiserver"); !d.alive() {
		t.Errorf("inplace-apiserver (pid %d) is not running", d.pid)
	}
	if _, err := os.Stat(filepath.Join(repo, "cmd/controller")); err != nil {
		t.Logf("no cmd/controller in this tree: %v", err)
		return
	}
	if d := readRecordedDaemon(t, "inplace-controller"); !d.alive() {
		t.Fatalf("inplace-controller (pid %d) is not running", d.pid)
	}
	lease, err := kube.CoordinationV1().Leases(inplaceNamespace).Get(ctx, "inplace-controller", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("inplace-controller's Lease: %v", err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Errorf("Lease %s/inplace-controller has no holder", inplaceNamespace)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		poll(t, ctx, 30*time.Second, "inplace-controller "+path, func(ctx context.Context) (bool, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:10390"+path, nil)
			if err != nil {
				return false, err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return false, err
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp.StatusCode == http.StatusOK, fmt.Errorf("%s: %s", resp.Status, body)
		})
	}
}
