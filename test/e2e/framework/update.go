package framework

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// GetUpdater is the part of a generated typed client (CloneSets(ns), SidecarSets(), the
// v1beta1 ones...) that Modify needs.
type GetUpdater[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// Modify reads the object, changes it and writes it back, again from a fresh read when the write
// conflicts (inplace-controller writes the status of what it manages at any moment), and returns
// what the update answered; it fails the test when it cannot.
func Modify[T any](t *testing.T, ctx context.Context, c GetUpdater[T], name string, change func(T)) T {
	t.Helper()
	var out T
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := c.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(cur)
		out, err = c.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("updating %T %s: %v", out, name, err)
	}
	return out
}

// WaitPod polls the Pod until check accepts it (returns nil; its error says why not yet) and
// returns the Pod as check last saw it.
func WaitPod(t *testing.T, ctx context.Context, timeout time.Duration, what, namespace, name string, check func(*corev1.Pod) error) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	Poll(t, ctx, timeout, what, func(ctx context.Context) (bool, error) {
		var err error
		if pod, err = Kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		if err := check(pod); err != nil {
			return false, err
		}
		return true, nil
	})
	return pod
}

// JSONFile writes v as JSON to a file named name in a directory of its own, removed at the end
// of the test, and returns the file's path. Not t.TempDir(): kubectl -f splits its argument at
// commas, which subtest names may have.
func JSONFile(t *testing.T, name string, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "inplace-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}
