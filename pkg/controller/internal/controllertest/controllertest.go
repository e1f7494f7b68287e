// Package controllertest holds the fixtures the controllers' unit tests share: a fixed clock
// start, the Events a fake recorder caught, and informer caches filled by hand (the tests never
// start their informers).
package controllertest

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
)

// Now is where the tests' fake clocks start.
var Now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// Events drains what the recorder caught so far, one Event a line.
func Events(recorder *record.FakeRecorder) string {
	var out []string
	for {
		select {
		case e := <-recorder.Events:
			out = append(out, e)
		default:
			return strings.Join(out, "\n")
		}
	}
}

// Add puts objs in an informer's cache, as if the informer had seen them.
func Add(t testing.TB, idx cache.Indexer, objs ...any) {
	t.Helper()
	for _, o := range objs {
		if err := idx.Add(o); err != nil {
			t.Fatal(err)
		}
	}
}

// Replace makes an informer's cache hold exactly items (a List's Items), as a relist would.
func Replace[T any](t testing.TB, idx cache.Indexer, items []T) {
	t.Helper()
	objs := make([]any, len(items))
	for i := range items {
		objs[i] = &items[i]
	}
	if err := idx.Replace(objs, ""); err != nil {
		t.Fatal(err)
	}
}

// RuntimeObjects is objs as a fake clientset takes them.
func RuntimeObjects[T runtime.Object](objs []T) []runtime.Object {
	out := make([]runtime.Object, len(objs))
	for i, o := range objs {
		out[i] = o
	}
	return out
}
