package rolloutmetrics

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
)

// TestCollector: a series per workload and state, from what the list returns at each scrape: a
// workload gone from the cache has no series left; nothing before Read.
func TestCollector(t *testing.T) {
	// ConfigMaps stand for workloads: the number of Pods in their data's length.
	c := New("test_pods", "Pods.", "workload", func(cm *corev1.ConfigMap) []Count {
		return []Count{{"desired", int32(len(cm.Data))}, {"ready", 1}}
	})
	const header = `
# HELP test_pods [ALPHA] Pods.
# TYPE test_pods gauge
`
	registry := metrics.NewKubeRegistry()
	registry.CustomMustRegister(c)
	if err := testutil.GatherAndCompare(registry, strings.NewReader(""), "test_pods"); err != nil {
		t.Errorf("before Read: %v", err)
	}
	cache := []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web"}, Data: map[string]string{"x": "", "y": ""}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "db"}},
	}
	c.Read(func(labels.Selector) ([]*corev1.ConfigMap, error) { return cache, nil })
	want := header + `test_pods{namespace="a",state="desired",workload="web"} 2
test_pods{namespace="a",state="ready",workload="web"} 1
test_pods{namespace="b",state="desired",workload="db"} 0
test_pods{namespace="b",state="ready",workload="db"} 1
`
	if err := testutil.GatherAndCompare(registry, strings.NewReader(want), "test_pods"); err != nil {
		t.Error(err)
	}
	cache = cache[1:]
	want = header + `test_pods{namespace="b",state="desired",workload="db"} 0
test_pods{namespace="b",state="ready",workload="db"} 1
`
	if err := testutil.GatherAndCompare(registry, strings.NewReader(want), "test_pods"); err != nil {
		t.Errorf("after web left the cache: %v", err)
	}
}
