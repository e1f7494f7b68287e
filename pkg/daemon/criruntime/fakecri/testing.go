package fakecri

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/inplace-dev/inplace/pkg/daemon/criruntime"
)

// Start serves a fake runtime named containerd on a socket in a short temporary directory (unix
// socket paths are limited to ~107 bytes) and connects a criruntime client to it; both are closed
// and removed when the test ends.
func Start(t testing.TB) (*Server, criruntime.Runtime) {
	t.Helper()
	dir, err := os.MkdirTemp("", "cri")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	s, err := Serve(filepath.Join(dir, "containerd.sock"), "containerd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	rt, err := criruntime.Connect(context.Background(), s.Endpoint(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	return s, rt
}
