package integration

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
)

// asV1beta1 re-reads a v1alpha1 fixture as the v1beta1 type of the same kind: the image kinds
// have the same JSON at both versions.
func asV1beta1[T any](t *testing.T, alpha any) *T {
	t.Helper()
	data, err := json.Marshal(alpha)
	if err != nil {
		t.Fatal(err)
	}
	out := new(T)
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestImageKindsVersions: ImagePullJob, ImageListPullJob and NodeImage are each one object served
// at v1beta1 (stored there, as in OpenKruise v1.9) and v1alpha1: created at v1beta1, read and
// changed at v1alpha1, read back at v1beta1 with nothing lost, the NodeImage pull secret's mode
// (v1beta1 only) included: v1alpha1 carries it in the annotation inplace.dev/v1beta1-fields.
func TestImageKindsVersions(t *testing.T) {
	s, ctx := parallelServer(t)
	alpha, beta := s.Client.AppsV1alpha1(), s.Client.AppsV1beta1()

	job := asV1beta1[appsv1beta1.ImagePullJob](t, newImagePullJob("pull"))
	job.Spec.Parallelism = nil
	created, err := beta.ImagePullJobs("default").Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a v1beta1 ImagePullJob: %v", err)
	}
	if created.Spec.ImagePullPolicy != appsv1beta1.PullIfNotPresent || *created.Spec.PullPolicy.TimeoutSeconds != 600 {
		t.Errorf("v1beta1 ImagePullJob defaults: %+v, want IfNotPresent and timeout 600", created.Spec)
	}
	a, err := alpha.ImagePullJobs("default").Get(ctx, "pull", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading it at v1alpha1: %v", err)
	}
	a.Spec.Parallelism = ptr.To(intstr.FromInt32(2))
	if _, err := alpha.ImagePullJobs("default").Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating it at v1alpha1: %v", err)
	}
	b, err := beta.ImagePullJobs("default").Get(ctx, "pull", metav1.GetOptions{})
	if err != nil || b.Spec.Parallelism.IntValue() != 2 || b.Spec.Image != created.Spec.Image || !equality.Semantic.DeepEqual(b.Spec.Selector, created.Spec.Selector) {
		t.Errorf("after a v1alpha1 update, v1beta1 reads %+v (%v); want parallelism 2 and the rest kept", b, err)
	}

	list := asV1beta1[appsv1beta1.ImageListPullJob](t, newImageListPullJob("list"))
	if _, err := beta.ImageListPullJobs("default").Create(ctx, list, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a v1beta1 ImageListPullJob: %v", err)
	}
	al, err := alpha.ImageListPullJobs("default").Get(ctx, "list", metav1.GetOptions{})
	if err != nil || len(al.Spec.Images) != 2 {
		t.Fatalf("reading it at v1alpha1: %+v %v", al, err)
	}
	al.Spec.Images = append(al.Spec.Images, "inplace.local/app:v4")
	if _, err := alpha.ImageListPullJobs("default").Update(ctx, al, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating it at v1alpha1: %v", err)
	}
	if bl, err := beta.ImageListPullJobs("default").Get(ctx, "list", metav1.GetOptions{}); err != nil || len(bl.Spec.Images) != 3 {
		t.Errorf("after a v1alpha1 update, v1beta1 reads %+v (%v); want 3 images", bl, err)
	}

	node := asV1beta1[appsv1beta1.NodeImage](t, newNodeImage("node-1"))
	image := node.Spec.Images["inplace.local/app"]
	image.PullSecrets = []appsv1beta1.ReferenceObject{{Namespace: "default", Name: "creds", Mode: "batch"}, {Namespace: "default", Name: "old"}}
	node.Spec.Images["inplace.local/app"] = image
	if _, err := beta.NodeImages().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a v1beta1 NodeImage: %v", err)
	}
	an, err := alpha.NodeImages().Get(ctx, "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading it at v1alpha1: %v", err)
	}
	if carried := an.Annotations[appsv1alpha1.StatefulSetV1beta1FieldsAnnotation]; !strings.Contains(carried, `"inplace.local/app":["batch",""]`) {
		t.Errorf("v1alpha1 annotation %s = %q; want the pull secrets' modes", appsv1alpha1.StatefulSetV1beta1FieldsAnnotation, carried)
	}
	ai := an.Spec.Images["inplace.local/app"]
	ai.Tags = append(ai.Tags, appsv1alpha1.ImageTagSpec{Tag: "v3", PullPolicy: ai.Tags[0].PullPolicy})
	an.Spec.Images["inplace.local/app"] = ai
	if _, err := alpha.NodeImages().Update(ctx, an, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating it at v1alpha1: %v", err)
	}
	bn, err := beta.NodeImages().Get(ctx, "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if bi := bn.Spec.Images["inplace.local/app"]; len(bi.Tags) != 2 || len(bi.PullSecrets) != 2 || bi.PullSecrets[0].Mode != "batch" || bi.PullSecrets[1].Mode != "" ||
		bn.Annotations[appsv1alpha1.StatefulSetV1beta1FieldsAnnotation] != "" {
		t.Errorf("after a v1alpha1 update, v1beta1 reads %+v (annotations %v); want 2 tags and the modes kept, no annotation", bi, bn.Annotations)
	}

	for _, key := range []string{"imagepulljobs/default/pull", "imagelistpulljobs/default/list", "nodeimages/node-1"} {
		if v := etcdValue(t, s, "/registry/apps.kruise.io/"+key); !bytes.Contains(v, []byte("apps.kruise.io/v1beta1")) {
			t.Errorf("%s stored as %q..., want apps.kruise.io/v1beta1", key, v[:min(len(v), 60)])
		}
	}
}

// TestProtobufV1beta1: every kind this change serves at v1beta1 answers in protobuf, and the protobuf answer
// decodes to exactly what the JSON answer holds.
func TestProtobufV1beta1(t *testing.T) {
	s, ctx := parallelServer(t)
	beta := s.ProtobufClient.AppsV1beta1()
	if _, err := beta.SidecarSets().Create(ctx, newSidecarSetV1beta1("agent"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create SidecarSet over protobuf: %v", err)
	}
	if _, err := beta.ImagePullJobs("default").Create(ctx, asV1beta1[appsv1beta1.ImagePullJob](t, newImagePullJob("pull")), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ImagePullJob over protobuf: %v", err)
	}
	if _, err := beta.ImageListPullJobs("default").Create(ctx, asV1beta1[appsv1beta1.ImageListPullJob](t, newImageListPullJob("list")), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ImageListPullJob over protobuf: %v", err)
	}
	if _, err := beta.NodeImages().Create(ctx, asV1beta1[appsv1beta1.NodeImage](t, newNodeImage("node-1")), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create NodeImage over protobuf: %v", err)
	}
	labels := map[string]string{"app": "agent"}
	if _, err := beta.DaemonSets("default").Create(ctx, &appsv1beta1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: appsv1beta1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: podTemplate(labels),
			ScaleStrategy: &appsv1beta1.DaemonSetScaleStrategy{PartitionedScaling: true}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create DaemonSet over protobuf: %v", err)
	}
	if _, err := beta.CloneSets("default").Create(ctx, newCloneSetV1beta1("web"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CloneSet over protobuf: %v", err)
	}
	const prefix = "/apis/apps.kruise.io/v1beta1/"
	for path, obj := range map[string]func() runtime.Object{
		prefix + "sidecarsets/agent":                         func() runtime.Object { return &appsv1beta1.SidecarSet{} },
		prefix + "sidecarsets":                               func() runtime.Object { return &appsv1beta1.SidecarSetList{} },
		prefix + "namespaces/default/imagepulljobs/pull":     func() runtime.Object { return &appsv1beta1.ImagePullJob{} },
		prefix + "namespaces/default/imagelistpulljobs/list": func() runtime.Object { return &appsv1beta1.ImageListPullJob{} },
		prefix + "imagelistpulljobs":                         func() runtime.Object { return &appsv1beta1.ImageListPullJobList{} },
		prefix + "nodeimages/node-1":                         func() runtime.Object { return &appsv1beta1.NodeImage{} },
		prefix + "imagepulljobs":                             func() runtime.Object { return &appsv1beta1.ImagePullJobList{} },
		prefix + "namespaces/default/daemonsets/agent":       func() runtime.Object { return &appsv1beta1.DaemonSet{} },
		prefix + "daemonsets":                                func() runtime.Object { return &appsv1beta1.DaemonSetList{} },
		prefix + "namespaces/default/clonesets/web":          func() runtime.Object { return &appsv1beta1.CloneSet{} },
		prefix + "clonesets":                                 func() runtime.Object { return &appsv1beta1.CloneSetList{} },
	} {
		expectProtobufMatchesJSON(t, s, path, obj)
	}
}
