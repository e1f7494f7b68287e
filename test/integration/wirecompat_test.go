package integration

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/inplace-dev/inplace/test/integration/framework"
)

// TestWireCompatibility creates the sample manifests (written as in OpenKruise's docs) as
// unstructured objects, so that nothing of this project's Go types is involved on the client side,
// and checks that every field of each manifest is stored with the same value, and that the server
// added nothing but defaults, server-set metadata and status.
func TestWireCompatibility(t *testing.T) {
	t.Parallel()
	s := framework.StartServer(t)
	dyn := dynamicClient(t, s)

	// Server-set metadata every stored object gets.
	serverMetadata := []string{
		"metadata.creationTimestamp", "metadata.generation", "metadata.managedFields",
		"metadata.resourceVersion", "metadata.uid",
	}
	cases := []struct {
		file       string
		gvr        schema.GroupVersionResource
		namespaced bool
		// defaults are the exact paths the server may add to the manifest's spec.
		defaults []string
		// zeroOmitted are fields the manifest sets to their zero value that a typed server leaves
		// out (omitempty), as kube-apiserver does for built-in kinds: absent and false mean the same.
		zeroOmitted []string
	}{{
		file: "cloneset.yaml", gvr: cloneSetsGVR, namespaced: true,
		defaults: []string{
			"spec.revisionHistoryLimit",
			"spec.scaleStrategy",
			"spec.updateStrategy.partition",
			"spec.updateStrategy.maxSurge",
			"spec.template.spec.restartPolicy",
			"spec.template.spec.dnsPolicy",
			"spec.template.spec.schedulerName",
			"spec.template.spec.securityContext",
			"spec.template.spec.terminationGracePeriodSeconds",
			"spec.template.spec.containers[0].resources",
			"spec.template.spec.containers[0].terminationMessagePath",
			"spec.template.spec.containers[0].terminationMessagePolicy",
			"spec.template.spec.containers[0].env[0].valueFrom.fieldRef.apiVersion",
		},
	}, {
		file: "sidecarset.yaml", gvr: sidecarSetGVR, namespaced: false,
		defaults: []string{
			"spec.revisionHistoryLimit",
			"spec.injectionStrategy",
			"spec.updateStrategy.partition",
			"spec.containers[0].resources",
			"spec.containers[0].terminationMessagePath",
			"spec.containers[0].terminationMessagePolicy",
			"spec.containers[0].upgradeStrategy",
			"spec.containers[0].upgradeStrategy.upgradeType",
			// Not a default: the SidecarSet admission plugin's kruise.io/sidecarset-hash and
			// -without-image (TestStandaloneSidecarSetHash checks their values).
			"metadata.annotations",
		},
	}, {
		file: "containerrecreaterequest.yaml", gvr: crrGVR, namespaced: true,
		defaults:    nil,
		zeroOmitted: []string{"spec.strategy.orderedRecreate"},
	}, {
		file: "imagepulljob.yaml", gvr: imagePullJobGVR, namespaced: true,
		defaults: []string{"spec.imagePullPolicy"},
	}, {
		file: "imagelistpulljob.yaml", gvr: imageListPullJobGVR, namespaced: true,
		defaults: []string{"spec.pullPolicy"},
	}, {
		file: "nodeimage.yaml", gvr: nodeImageGVR, namespaced: false,
		defaults: []string{
			"spec.images.nginx.tags[0].createdAt",
			"spec.images.nginx.tags[0].pullPolicy.timeoutSeconds",
			"spec.images.nginx.tags[0].pullPolicy.backoffLimit",
		},
	}}

	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			ctx := testContext(t)
			manifest := readManifest(t, examplePath(t, tc.file))
			// expected is the manifest as the server should echo it.
			expected := manifest.DeepCopy()
			for _, p := range tc.zeroOmitted {
				fields := strings.Split(p, ".")
				v, found, _ := unstructured.NestedFieldNoCopy(expected.Object, fields...)
				if !found || !reflect.ValueOf(v).IsZero() {
					t.Fatalf("%s: %s is %#v in the manifest, not a zero value", tc.file, p, v)
				}
				unstructured.RemoveNestedField(expected.Object, fields...)
			}
			if got := manifest.GroupVersionKind().GroupVersion().String(); got != groupVersion {
				t.Fatalf("%s is %s, want %s", tc.file, got, groupVersion)
			}
			client := resourceFor(dyn, tc.gvr, tc.namespaced)
			created, err := client.Create(ctx, manifest.DeepCopy(), metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create %s: %v", tc.file, err)
			}
			stored, err := client.Get(ctx, manifest.GetName(), metav1.GetOptions{})
			if err != nil {
				t.Fatalf("get: %v", err)
			}
			if stored.GetResourceVersion() != created.GetResourceVersion() {
				t.Errorf("get: resourceVersion %s, create answered %s", stored.GetResourceVersion(), created.GetResourceVersion())
			}
			for _, obj := range []*unstructured.Unstructured{created, stored} {
				if diffs := subsetDiff("", expected.Object, obj.Object); len(diffs) > 0 {
					t.Errorf("fields of %s not stored as written:\n  %s", tc.file, strings.Join(diffs, "\n  "))
				}
			}

			allowed := slices.Concat(serverMetadata, tc.defaults)
			if tc.namespaced {
				allowed = append(allowed, "metadata.namespace")
			}
			var unexpected []string
			for _, p := range additions("", expected.Object, stored.Object) {
				if p == "status" || strings.HasPrefix(p, "status.") || slices.Contains(allowed, p) {
					continue
				}
				unexpected = append(unexpected, p)
			}
			if len(unexpected) > 0 {
				t.Errorf("the server added fields that are neither defaults, metadata nor status:\n  %s", strings.Join(unexpected, "\n  "))
			}
			// Every expected default is really there (so the allowlist is not stale).
			for _, p := range tc.defaults {
				if !hasPath(stored.Object, p) {
					t.Errorf("expected default %s is missing", p)
				}
			}
			if stored.GetGeneration() != 1 || stored.GetUID() == "" {
				t.Errorf("server metadata: generation %d, uid %q", stored.GetGeneration(), stored.GetUID())
			}

			// The list endpoint serves the same object.
			list, err := client.List(ctx, metav1.ListOptions{})
			if err != nil || len(list.Items) != 1 {
				t.Fatalf("list: %v %v", list, err)
			}
			if diffs := subsetDiff("", expected.Object, list.Items[0].Object); len(diffs) > 0 {
				t.Errorf("listed object differs from the manifest:\n  %s", strings.Join(diffs, "\n  "))
			}
		})
	}
}

// readManifest reads a YAML manifest into an unstructured object, decoding numbers as int64 as the
// dynamic client does.
func readManifest(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.ToJSON(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	obj, err := runtime.Decode(unstructured.UnstructuredJSONScheme, js)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		t.Fatalf("%s: decoded as %T", path, obj)
	}
	return u
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// subsetDiff lists where want is not contained in got: every map key of want must be in got with
// a contained value, lists must have the same length with contained elements, and scalars must be
// equal (type included).
func subsetDiff(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want an object, got %#v", path, got)}
		}
		var diffs []string
		for _, k := range sortedKeys(w) {
			gv, ok := g[k]
			if !ok {
				diffs = append(diffs, fmt.Sprintf("%s: missing", join(path, k)))
				continue
			}
			diffs = append(diffs, subsetDiff(join(path, k), w[k], gv)...)
		}
		return diffs
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: want %d elements, got %#v", path, len(w), got)}
		}
		var diffs []string
		for i := range w {
			diffs = append(diffs, subsetDiff(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return diffs
	default:
		if !reflect.DeepEqual(want, got) {
			return []string{fmt.Sprintf("%s: want %#v, got %#v", path, want, got)}
		}
		return nil
	}
}

// additions lists the paths present in got but not in want (not descending into added subtrees).
func additions(path string, want, got any) []string {
	switch g := got.(type) {
	case map[string]any:
		w, _ := want.(map[string]any)
		var out []string
		for _, k := range sortedKeys(g) {
			wv, ok := w[k]
			if !ok {
				out = append(out, join(path, k))
				continue
			}
			out = append(out, additions(join(path, k), wv, g[k])...)
		}
		return out
	case []any:
		w, _ := want.([]any)
		var out []string
		for i := range g {
			if i >= len(w) {
				out = append(out, fmt.Sprintf("%s[%d]", path, i))
				continue
			}
			out = append(out, additions(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return out
	default:
		return nil
	}
}

// hasPath tells whether a path written as additions writes it exists in obj.
func hasPath(obj any, path string) bool {
	cur := obj
	for _, part := range strings.Split(path, ".") {
		name, index, hasIndex := strings.Cut(part, "[")
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[name]; !ok {
			return false
		}
		if hasIndex {
			var i int
			if _, err := fmt.Sscanf(index, "%d]", &i); err != nil {
				return false
			}
			l, ok := cur.([]any)
			if !ok || i >= len(l) {
				return false
			}
			cur = l[i]
		}
	}
	return true
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
