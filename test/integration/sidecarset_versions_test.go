package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/pkg/apiserver"
	"github.com/inplace-dev/inplace/test/integration/framework"
)

// newSidecarSetV1beta1 is a v1beta1 SidecarSet with the fields v1alpha1 has elsewhere or not at
// all: customVersion, a namespaceSelector, resourcesPolicy, patchPodMetadata and an injection
// revision policy.
func newSidecarSetV1beta1(name string) *appsv1beta1.SidecarSet {
	return &appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1beta1.SidecarSetSpec{
			Selector:          &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
			Containers: []appsv1beta1.SidecarContainer{{
				Container: corev1.Container{Name: "sidecar", Image: "inplace.local/app:v1"},
				ResourcesPolicy: &appsv1beta1.ResourcesPolicy{
					TargetContainersMode: appsv1beta1.TargetContainersModeSum,
					ResourcesExpr:        appsv1beta1.ResourcesExpr{Requests: &appsv1beta1.ResourceExprRequests{CPU: "cpu*0.5"}},
				},
			}},
			PatchPodMetadata: []appsv1beta1.SidecarSetPatchPodMetadata{{Annotations: map[string]string{"example.com/x": "1"}}},
			InjectionStrategy: appsv1beta1.SidecarSetInjectionStrategy{Revision: &appsv1beta1.SidecarSetInjectRevision{
				CustomVersion: ptr.To("v1"), Policy: appsv1beta1.PartialSidecarSetInjectRevisionPolicy,
			}},
			CustomVersion: "v2",
		},
	}
}

// TestSidecarSetVersions: the SidecarSet is one object served at v1beta1 (stored) and v1alpha1.
// Each version reads what the other wrote, and a read-modify-write through the other version
// loses nothing: v1beta1's customVersion is v1alpha1's label apps.kruise.io/sidecarset-custom-version
// (as in OpenKruise), and v1alpha1's spec.namespace, which OpenKruise turns into a namespaceSelector
// and forgets, comes back from the annotation inplace.dev/v1alpha1-fields.
func TestSidecarSetVersions(t *testing.T) {
	s, ctx := parallelServer(t)
	alpha, beta := s.Client.AppsV1alpha1().SidecarSets(), s.Client.AppsV1beta1().SidecarSets()

	// Written at v1beta1, read and changed at v1alpha1, read back at v1beta1.
	if _, err := beta.Create(ctx, newSidecarSetV1beta1("from-beta"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a v1beta1 SidecarSet: %v", err)
	}
	a, err := alpha.Get(ctx, "from-beta", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading it at v1alpha1: %v", err)
	}
	if a.Labels[appsv1alpha1.SidecarSetCustomVersionLabel] != "v2" || a.Spec.Namespace != "" || a.Spec.NamespaceSelector.MatchLabels["team"] != "a" ||
		a.Spec.Containers[0].ResourcesPolicy == nil || a.Spec.Containers[0].ResourcesPolicy.TargetContainersNameRegex != ".*" ||
		a.Spec.InjectionStrategy.Revision.Policy != appsv1alpha1.PartialSidecarSetInjectRevisionPolicy || len(a.Spec.PatchPodMetadata) != 1 {
		t.Errorf("read at v1alpha1: labels %v spec %+v; want the custom version as a label and the v1beta1 fields", a.Labels, a.Spec)
	}
	a.Spec.Containers[0].Image = "inplace.local/app:v2"
	if _, err := alpha.Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating it at v1alpha1: %v", err)
	}
	b, err := beta.Get(ctx, "from-beta", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Spec.CustomVersion != "v2" || b.Labels[appsv1beta1.SidecarSetCustomVersionLabel] != "" || b.Spec.Containers[0].Image != "inplace.local/app:v2" ||
		b.Spec.Containers[0].ResourcesPolicy == nil || b.Spec.NamespaceSelector.MatchLabels["team"] != "a" {
		t.Errorf("after a v1alpha1 update, v1beta1 reads labels %v spec %+v; want customVersion v2, the new image, the rest kept", b.Labels, b.Spec)
	}

	// Written at v1alpha1 with a namespace: v1beta1 reads OpenKruise's namespaceSelector, and a
	// v1beta1 read-modify-write keeps the namespace for v1alpha1.
	old := newSidecarSet("from-alpha")
	old.Labels = map[string]string{appsv1alpha1.SidecarSetCustomVersionLabel: "v7"}
	old.Spec.Namespace = "team-a"
	if _, err := alpha.Create(ctx, old, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a v1alpha1 SidecarSet: %v", err)
	}
	b, err = beta.Get(ctx, "from-alpha", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Spec.CustomVersion != "v7" || len(b.Labels) != 0 || b.Spec.NamespaceSelector == nil ||
		b.Spec.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "team-a" ||
		!strings.Contains(b.Annotations[appsv1beta1.V1alpha1FieldsAnnotation], `"namespace":"team-a"`) {
		t.Errorf("read at v1beta1: labels %v annotations %v spec %+v; want customVersion v7, the namespace's selector and the carrying annotation",
			b.Labels, b.Annotations, b.Spec)
	}
	b.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(1))
	if _, err := beta.Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating it at v1beta1: %v", err)
	}
	a, err = alpha.Get(ctx, "from-alpha", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Spec.Namespace != "team-a" || a.Spec.NamespaceSelector != nil || a.Labels[appsv1alpha1.SidecarSetCustomVersionLabel] != "v7" ||
		a.Spec.UpdateStrategy.Partition.IntValue() != 1 || a.Annotations[appsv1beta1.V1alpha1FieldsAnnotation] != "" {
		t.Errorf("after a v1beta1 update, v1alpha1 reads labels %v annotations %v spec %+v; want namespace team-a, no selector, label v7, partition 1",
			a.Labels, a.Annotations, a.Spec)
	}
	// A v1beta1 client that changes the selector means it: the namespace is dropped.
	b, _ = beta.Get(ctx, "from-alpha", metav1.GetOptions{})
	b.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}
	if _, err := beta.Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if a, _ = alpha.Get(ctx, "from-alpha", metav1.GetOptions{}); a == nil || a.Spec.Namespace != "" || a.Spec.NamespaceSelector.MatchLabels["team"] != "b" {
		t.Errorf("after a v1beta1 selector change, v1alpha1 reads %+v; want no namespace and the new selector", a)
	}
	// A broken annotation is the client's mistake: a 400 that names it.
	b, _ = beta.Get(ctx, "from-beta", metav1.GetOptions{})
	b.Annotations = map[string]string{appsv1beta1.V1alpha1FieldsAnnotation: "{not json"}
	if _, err := beta.Update(ctx, b, metav1.UpdateOptions{}); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), appsv1beta1.V1alpha1FieldsAnnotation) {
		t.Errorf("update with a broken %s: %v, want 400 naming it", appsv1beta1.V1alpha1FieldsAnnotation, err)
	}

	// Stored at v1beta1, whichever version wrote it; the status subresource at either version.
	for _, name := range []string{"from-alpha", "from-beta"} {
		if v := etcdValue(t, s, "/registry/apps.kruise.io/sidecarsets/"+name); !bytes.Contains(v, []byte("apps.kruise.io/v1beta1")) {
			t.Errorf("%s stored as %q..., want apps.kruise.io/v1beta1", name, v[:min(len(v), 60)])
		}
	}
	b, _ = beta.Get(ctx, "from-beta", metav1.GetOptions{})
	b.Status.MatchedPods = 3
	if _, err := beta.UpdateStatus(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("v1beta1 status update: %v", err)
	}
	if a, _ = alpha.Get(ctx, "from-beta", metav1.GetOptions{}); a == nil || a.Status.MatchedPods != 3 {
		t.Errorf("after a v1beta1 status update, v1alpha1 reads status %+v, want matchedPods 3", a)
	}
	// Validation runs once, on the internal object, whichever version sent it.
	bad := newSidecarSetV1beta1("bad")
	bad.Spec.Containers[0].Name = ""
	if _, err := beta.Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.containers[0].name") {
		t.Errorf("a v1beta1 SidecarSet without a container name: %v, want invalid at spec.containers[0].name", err)
	}
}

// TestSidecarSetEarlierEncoding: SidecarSets an earlier inplace release stored at v1alpha1 (as
// protobuf, and as JSON) are read at both versions and rewritten at v1beta1 on their next write.
func TestSidecarSetEarlierEncoding(t *testing.T) {
	s, ctx := parallelServer(t)
	client, err := clientv3.New(clientv3.Config{Endpoints: s.EtcdURLs, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Close() }()
	for i, mediaType := range []string{runtime.ContentTypeProtobuf, runtime.ContentTypeJSON} {
		name := fmt.Sprintf("old-%d", i)
		old := newSidecarSet(name)
		old.UID = types.UID(fmt.Sprintf("00000000-0000-0000-0000-00000000000%d", i))
		old.CreationTimestamp = metav1.Now()
		old.Generation = 1
		old.Labels = map[string]string{appsv1alpha1.SidecarSetCustomVersionLabel: "v1"}
		old.Spec.Namespace = "team-a"
		appsv1alpha1.SetObjectDefaults_SidecarSet(old)
		info, ok := runtime.SerializerInfoForMediaType(apiserver.Codecs.SupportedMediaTypes(), mediaType)
		if !ok {
			t.Fatalf("no serializer for %s", mediaType)
		}
		data, err := runtime.Encode(apiserver.Codecs.EncoderForVersion(info.Serializer, appsv1alpha1.SchemeGroupVersion), old)
		if err != nil {
			t.Fatal(err)
		}
		key := "/registry/apps.kruise.io/sidecarsets/" + name
		if _, err := client.Put(ctx, key, string(data)); err != nil {
			t.Fatalf("writing %s: %v", key, err)
		}

		a, err := s.Client.AppsV1alpha1().SidecarSets().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: reading at v1alpha1: %v", mediaType, err)
		}
		if a.UID != old.UID || a.Spec.Namespace != "team-a" || a.Labels[appsv1alpha1.SidecarSetCustomVersionLabel] != "v1" || a.Spec.Containers[0].Image != "inplace.local/app:v1" {
			t.Errorf("%s: v1alpha1 reads %+v; want the stored object", mediaType, a)
		}
		b, err := s.Client.AppsV1beta1().SidecarSets().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: reading at v1beta1: %v", mediaType, err)
		}
		if b.UID != old.UID || b.Spec.CustomVersion != "v1" || b.Spec.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "team-a" {
			t.Errorf("%s: v1beta1 reads %+v; want the stored object in v1beta1's fields", mediaType, b)
		}
		b.Spec.Containers[0].Image = "inplace.local/app:v2"
		if _, err := s.Client.AppsV1beta1().SidecarSets().Update(ctx, b, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("%s: updating at v1beta1: %v", mediaType, err)
		}
		if v := etcdValue(t, s, key); !bytes.Contains(v, []byte("apps.kruise.io/v1beta1")) || !bytes.HasPrefix(v, protobufMagic) {
			t.Errorf("%s: after a write stored as %q..., want protobuf at apps.kruise.io/v1beta1", mediaType, v[:min(len(v), 60)])
		}
		a, err = s.Client.AppsV1alpha1().SidecarSets().Get(ctx, name, metav1.GetOptions{})
		if err != nil || a.Spec.Namespace != "team-a" || a.Spec.Containers[0].Image != "inplace.local/app:v2" {
			t.Errorf("%s: after the migration v1alpha1 reads %+v (%v); want namespace team-a and image v2", mediaType, a, err)
		}
	}
}

// TestSidecarSetKubectl: kubectl answers in v1beta1, as with OpenKruise v1.9; a v1beta1 manifest
// and then the same object as a v1alpha1 manifest apply server-side; explain knows v1beta1's
// fields; the columns are OpenKruise's.
func TestSidecarSetKubectl(t *testing.T) {
	t.Parallel()
	s := framework.StartServer(t)
	k := newKubectl(t, kubectlBinary(t), s)
	// What both manifests' specs say, the same at both versions but for the image.
	selectorsAndLogger := func(image string) string {
		return `  selector:
    matchLabels:
      app: web
  namespaceSelector:
    matchLabels:
      kubernetes.io/metadata.name: default
  containers:
  - name: logger
    image: ` + image + "\n"
	}
	beta := k.writeFile("beta.yaml", `apiVersion: apps.kruise.io/v1beta1
kind: SidecarSet
metadata:
  name: logs
spec:
  customVersion: v1
`+selectorsAndLogger("inplace.local/app:v1"))
	k.mustRun("apply", "--server-side", "-f", beta)
	if v := k.mustRun("get", "sidecarsets", "logs", "-o", "yaml"); !strings.Contains(v, "apiVersion: apps.kruise.io/v1beta1") || !strings.Contains(v, "customVersion: v1") {
		t.Errorf("kubectl get sidecarsets -o yaml:\n%s\nwant apps.kruise.io/v1beta1 with customVersion", v)
	}
	alpha := k.writeFile("alpha.yaml", `apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata:
  name: logs
  labels:
    apps.kruise.io/sidecarset-custom-version: v1
spec:
`+selectorsAndLogger("inplace.local/app:v2"))
	k.mustRun("apply", "--server-side", "-f", alpha)
	got := k.mustRun("get", "sidecarsets.v1beta1.apps.kruise.io", "logs", "-o", "jsonpath={.spec.customVersion} {.spec.containers[0].image}")
	if got != "v1 inplace.local/app:v2" {
		t.Errorf("after applying the v1alpha1 manifest, v1beta1 reads %q, want %q", got, "v1 inplace.local/app:v2")
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(k.mustRun("get", "sidecarsets.v1alpha1.apps.kruise.io", "logs", "-o", "json")), &obj); err != nil {
		t.Fatal(err)
	}
	if obj["apiVersion"] != "apps.kruise.io/v1alpha1" {
		t.Errorf("kubectl get sidecarsets.v1alpha1.apps.kruise.io answered %v", obj["apiVersion"])
	}
	header, _ := table(t, k.mustRun("get", "sidecarsets"))
	if want := []string{"NAME", "MATCHED", "UPDATED", "READY", "AGE"}; strings.Join(header, " ") != strings.Join(want, " ") {
		t.Errorf("kubectl get sidecarsets columns %v, want %v", header, want)
	}
	// customVersion exists at v1beta1 only: kubectl explains it from the preferred version.
	if out := strings.Join(strings.Fields(k.mustRun("explain", "sidecarsets.spec.customVersion")), " "); !strings.Contains(out, "VERSION: v1beta1") {
		t.Errorf("kubectl explain sidecarsets.spec.customVersion:\n%s\nwant the v1beta1 field", out)
	}
}
