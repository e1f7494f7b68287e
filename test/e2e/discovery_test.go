package e2e

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// TestDiscovery: kube-apiserver lists apps.kruise.io/v1beta1 (preferred, as for OpenKruise's CRDs)
// and v1alpha1 (served by inplace-apiserver through the aggregator) with their resources, kubectl
// finds statefulsets.apps.kruise.io at v1beta1 beside the native StatefulSets, and the group's
// verb-less pods resource does not take `kubectl get pods` away from the core Pods.
func TestDiscovery(t *testing.T) {
	ctx := framework.Context(t)

	t.Run("group", func(t *testing.T) {
		groups, err := framework.Kube.Discovery().ServerGroups()
		if err != nil {
			t.Fatal(err)
		}
		var found *metav1.APIGroup
		for i := range groups.Groups {
			if groups.Groups[i].Name == "apps.kruise.io" {
				found = &groups.Groups[i]
			}
		}
		if found == nil {
			t.Fatalf("apps.kruise.io missing from kube-apiserver's discovery")
		}
		var versions []string
		for _, v := range found.Versions {
			versions = append(versions, v.GroupVersion)
		}
		if want := []string{"apps.kruise.io/v1beta1", framework.GroupVersion}; found.PreferredVersion.GroupVersion != want[0] || !slices.Equal(versions, want) {
			t.Errorf("preferred version %q, versions %v; want %v, the first preferred", found.PreferredVersion.GroupVersion, versions, want)
		}
	})

	t.Run("resources", func(t *testing.T) {
		list, err := framework.Kube.Discovery().ServerResourcesForGroupVersion(framework.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]metav1.APIResource{}
		for _, r := range list.APIResources {
			got[r.Name] = r
		}
		want := []struct {
			name       string
			namespaced bool
			verbs      []string // a subset of the resource's verbs; nil: no verbs at all
			shortNames []string
		}{
			{"clonesets", true, []string{"create", "delete", "get", "list", "patch", "update", "watch"}, []string{"clone"}},
			{"clonesets/status", true, []string{"get", "patch", "update"}, nil},
			{"clonesets/scale", true, []string{"get", "patch", "update"}, nil},
			{"sidecarsets", false, []string{"create", "delete", "get", "list", "patch", "update", "watch"}, nil},
			{"sidecarsets/status", false, []string{"get", "patch", "update"}, nil},
			{"sidecarsets/inject", false, []string{"create"}, nil},
			{"containerrecreaterequests", true, []string{"create", "delete", "get", "list", "watch"}, []string{"crr"}},
			{"containerrecreaterequests/status", true, []string{"get"}, nil},
			{"pods", true, nil, nil},
			{"pods/inplaceupdate", true, []string{"create"}, nil},
			{"pods/recreate", true, []string{"create"}, nil},
			{"statefulsets", true, []string{"create", "delete", "get", "list", "patch", "update", "watch"}, []string{"asts"}},
			{"statefulsets/scale", true, []string{"get", "patch", "update"}, nil},
			{"daemonsets", true, []string{"create", "delete", "get", "list", "patch", "update", "watch"}, []string{"ads"}},
		}
		for _, w := range want {
			r, ok := got[w.name]
			if !ok {
				t.Errorf("resource %s missing from discovery of %s (got %v)", w.name, framework.GroupVersion, keys(got))
				continue
			}
			if r.Namespaced != w.namespaced {
				t.Errorf("%s: namespaced %v, want %v", w.name, r.Namespaced, w.namespaced)
			}
			if w.verbs == nil && len(r.Verbs) != 0 {
				t.Errorf("%s: verbs %v, want none", w.name, r.Verbs)
			}
			for _, v := range w.verbs {
				if !slices.Contains(r.Verbs, v) {
					t.Errorf("%s: verbs %v lack %q", w.name, r.Verbs, v)
				}
			}
			for _, s := range w.shortNames {
				if !slices.Contains(r.ShortNames, s) {
					t.Errorf("%s: short names %v lack %q", w.name, r.ShortNames, s)
				}
			}
		}
	})

	t.Run("kubectl api-resources", func(t *testing.T) {
		out := framework.MustKubectl(t, ctx, "", "api-resources", "--api-group=apps.kruise.io", "-o", "name")
		for _, name := range []string{"clonesets.apps.kruise.io", "sidecarsets.apps.kruise.io", "containerrecreaterequests.apps.kruise.io",
			"statefulsets.apps.kruise.io", "daemonsets.apps.kruise.io"} {
			if !slices.Contains(strings.Fields(out), name) {
				t.Errorf("kubectl api-resources lacks %s:\n%s", name, out)
			}
		}
	})

	t.Run("statefulsets stays native", func(t *testing.T) {
		// The group's lower priority keeps the plain name (and sts) for apps/v1; asts is ours.
		out := framework.MustKubectl(t, ctx, "", "explain", "statefulsets", "--api-version=apps/v1")
		if !strings.Contains(out, "GROUP:      apps") {
			t.Errorf("kubectl explain statefulsets:\n%s", out)
		}
		out = framework.MustKubectl(t, ctx, "", "explain", "asts")
		if !strings.Contains(out, "apps.kruise.io") || !strings.Contains(out, "v1beta1") {
			t.Errorf("kubectl explain asts:\n%.400s", out)
		}
	})

	t.Run("kubectl get pods is core", func(t *testing.T) {
		ns := framework.NewNamespace(t, ctx, "discovery")
		if _, err := framework.Kube.CoreV1().Pods(ns).Create(ctx, framework.AppPod(ns, "core-pod", framework.AppImageV1), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		out := framework.MustKubectl(t, ctx, "", "get", "pods", "-n", ns, "-o", "name")
		if strings.TrimSpace(out) != "pod/core-pod" {
			t.Errorf("kubectl get pods -o name: got %q, want pod/core-pod", out)
		}
		out = framework.MustKubectl(t, ctx, "", "get", "pods", "-n", ns, "-o", "jsonpath={.items[*].apiVersion}/{.items[*].kind}")
		if out != "v1/Pod" {
			t.Errorf("kubectl get pods: apiVersion/kind %q, want v1/Pod", out)
		}
		out = framework.MustKubectl(t, ctx, "", "get", "po", "core-pod", "-n", ns, "-o", "jsonpath={.metadata.name}")
		if out != "core-pod" {
			t.Errorf("kubectl get po core-pod: %q", out)
		}
		// The group's own pods resource serves nothing.
		if _, stderr, err := framework.Kubectl(ctx, "", "get", "pods.apps.kruise.io", "-n", ns); err == nil {
			t.Errorf("kubectl get pods.apps.kruise.io succeeded; want an error (the resource has no verbs)")
		} else {
			t.Logf("kubectl get pods.apps.kruise.io, as expected: %s", strings.TrimSpace(stderr))
		}
	})
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
