package integration

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/test/integration/framework"
)

// newCloneSetV1beta1 is a v1beta1 CloneSet of one replica with nothing but what is required.
func newCloneSetV1beta1(name string) *appsv1beta1.CloneSet {
	labels := map[string]string{"app": name}
	return &appsv1beta1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1beta1.CloneSetSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(labels),
		},
	}
}

// TestCloneSetVersions: a CloneSet is one object served at v1alpha1 (stored there, as OpenKruise
// v1.9 serves it only there) and at v1beta1 (OpenKruise master's shape). What v1beta1 says that
// v1alpha1 has no field for travels as OpenKruise converts it (the image pre-download annotations,
// the excludePreparingDelete label) or in inplace.dev/v1beta1-fields (OnDelete's podUpdatePolicy),
// and a read-modify-write through v1alpha1 loses none of it.
func TestCloneSetVersions(t *testing.T) {
	s, ctx := parallelServer(t)
	alpha, beta := s.Client.AppsV1alpha1().CloneSets("default"), s.Client.AppsV1beta1().CloneSets("default")

	// Defaults at v1beta1: RollingUpdate with OpenKruise's rolling update defaults, no PVC reuse.
	created, err := beta.Create(ctx, newCloneSetV1beta1("plain"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a v1beta1 CloneSet: %v", err)
	}
	us := created.Spec.UpdateStrategy
	if ru := us.RollingUpdate; us.Type != appsv1beta1.RollingUpdateCloneSetUpdateStrategyType || ru == nil ||
		ru.PodUpdatePolicy != appsv1beta1.RecreateCloneSetPodUpdateStrategyType || ru.Partition.String() != "0" ||
		ru.MaxUnavailable.String() != "20%" || ru.MaxSurge.String() != "0" || created.Spec.ScaleStrategy.EnablePVCReuse ||
		len(created.Annotations) != 0 {
		t.Errorf("v1beta1 defaults: %+v %+v annotations %v", us, rollingUpdateOf(us), created.Annotations)
	}
	if a, err := alpha.Get(ctx, "plain", metav1.GetOptions{}); err != nil || a.Spec.UpdateStrategy.Type != appsv1alpha1.RecreateCloneSetUpdateStrategyType ||
		!a.Spec.ScaleStrategy.DisablePVCReuse || len(a.Annotations) != 0 {
		t.Errorf("read at v1alpha1: %+v %+v annotations %v (%v); want ReCreate, disablePVCReuse, no annotation",
			a.Spec.UpdateStrategy, a.Spec.ScaleStrategy, a.Annotations, err)
	}

	cs := newCloneSetV1beta1("web")
	cs.Spec.ScaleStrategy = appsv1beta1.CloneSetScaleStrategy{EnablePVCReuse: true, ExcludePreparingDelete: true}
	cs.Spec.UpdateStrategy = appsv1beta1.CloneSetUpdateStrategy{
		Type: appsv1beta1.OnDeleteCloneSetUpdateStrategyType,
		RollingUpdate: &appsv1beta1.RollingUpdateCloneSetStrategy{
			PodUpdatePolicy: appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType,
			InPlaceUpdateStrategy: &appsv1beta1.InPlaceUpdateStrategy{
				GracePeriodSeconds:                  3,
				ImagePreDownloadParallelism:         ptr.To(intstr.FromInt32(2)),
				ImagePreDownloadTimeoutSeconds:      ptr.To[int32](300),
				ImagePreDownloadMinUpdatedReadyPods: ptr.To[int32](1),
			},
		},
	}
	if _, err := beta.Create(ctx, cs, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating an OnDelete v1beta1 CloneSet: %v", err)
	}
	a, err := alpha.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading it at v1alpha1: %v", err)
	}
	wantAnnotations := map[string]string{
		appsv1alpha1.ImagePreDownloadParallelismKey:      "2",
		appsv1alpha1.ImagePreDownloadTimeoutSecondsKey:   "300",
		appsv1alpha1.ImagePreDownloadMinUpdatedReadyPods: "1",
	}
	for k, v := range wantAnnotations {
		if a.Annotations[k] != v {
			t.Errorf("v1alpha1 annotation %s = %q, want %q", k, a.Annotations[k], v)
		}
	}
	if a.Spec.UpdateStrategy.Type != appsv1alpha1.OnDeleteCloneSetUpdateStrategyType || a.Spec.ScaleStrategy.DisablePVCReuse ||
		a.Labels[appsv1beta1.CloneSetScalingExcludePreparingDeleteLabel] != "true" ||
		a.Spec.UpdateStrategy.InPlaceUpdateStrategy == nil || a.Spec.UpdateStrategy.InPlaceUpdateStrategy.GracePeriodSeconds != 3 ||
		!strings.Contains(a.Annotations[appsv1beta1.V1beta1FieldsAnnotation], "InPlaceIfPossible") {
		t.Errorf("read at v1alpha1: %+v %+v labels %v annotations %v; want OnDelete, PVC reuse, the exclude label, "+
			"gracePeriodSeconds 3, the podUpdatePolicy carried", a.Spec.UpdateStrategy, a.Spec.ScaleStrategy, a.Labels, a.Annotations)
	}

	// A v1alpha1 client changes what it knows, keeping the rest as it read it.
	a.Spec.MinReadySeconds = 5
	a.Annotations[appsv1alpha1.ImagePreDownloadParallelismKey] = "4"
	if _, err := alpha.Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating it at v1alpha1: %v", err)
	}
	b, err := beta.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bus := b.Spec.UpdateStrategy
	if b.Spec.MinReadySeconds != 5 || bus.Type != appsv1beta1.OnDeleteCloneSetUpdateStrategyType || bus.RollingUpdate == nil ||
		bus.RollingUpdate.PodUpdatePolicy != appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType ||
		!b.Spec.ScaleStrategy.ExcludePreparingDelete || !b.Spec.ScaleStrategy.EnablePVCReuse || len(b.Annotations) != 0 ||
		b.Labels[appsv1beta1.CloneSetScalingExcludePreparingDeleteLabel] != "" {
		t.Errorf("after a v1alpha1 update, v1beta1 reads %+v %+v labels %v annotations %v; want minReadySeconds 5 and everything kept",
			b.Spec.UpdateStrategy, b.Spec.ScaleStrategy, b.Labels, b.Annotations)
	}
	if ips := bus.RollingUpdate.InPlaceUpdateStrategy; ips == nil || ips.GracePeriodSeconds != 3 || ips.ImagePreDownloadParallelism.String() != "4" ||
		ptr.Deref(ips.ImagePreDownloadTimeoutSeconds, 0) != 300 || ptr.Deref(ips.ImagePreDownloadMinUpdatedReadyPods, 0) != 1 {
		t.Errorf("v1beta1 inPlaceUpdateStrategy %+v; want gracePeriodSeconds 3, parallelism 4 (changed at v1alpha1), timeout 300, min ready 1", ips)
	}

	// Status written at v1beta1 reads at v1alpha1.
	b.Status.UpdateRevision, b.Status.Replicas = "web-abc", 1
	if _, err := beta.UpdateStatus(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("v1beta1 status update: %v", err)
	}
	if a, err = alpha.Get(ctx, "web", metav1.GetOptions{}); err != nil || a.Status.UpdateRevision != "web-abc" || a.Status.Replicas != 1 {
		t.Errorf("after a v1beta1 status update, v1alpha1 reads %+v (%v)", a.Status, err)
	}

	// A v1alpha1 OnDelete CloneSet (OpenKruise v1.9's v1alpha1 has the type) reads as OnDelete.
	old := &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "old"},
		Spec: appsv1alpha1.CloneSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "old"}},
			Template:       podTemplate(map[string]string{"app": "old"}),
			UpdateStrategy: appsv1alpha1.CloneSetUpdateStrategy{Type: appsv1alpha1.OnDeleteCloneSetUpdateStrategyType},
		},
	}
	if _, err := alpha.Create(ctx, old, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a v1alpha1 OnDelete CloneSet: %v", err)
	}
	if b, err = beta.Get(ctx, "old", metav1.GetOptions{}); err != nil || b.Spec.UpdateStrategy.Type != appsv1beta1.OnDeleteCloneSetUpdateStrategyType ||
		len(b.Annotations) != 0 {
		t.Errorf("v1alpha1 OnDelete read at v1beta1: %+v annotations %v (%v)", b.Spec.UpdateStrategy, b.Annotations, err)
	}

	for _, name := range []string{"plain", "web", "old"} {
		if v := etcdValue(t, s, "/registry/apps.kruise.io/clonesets/default/"+name); !bytes.Contains(v, []byte("apps.kruise.io/v1alpha1")) {
			t.Errorf("%s stored as %q..., want apps.kruise.io/v1alpha1", name, v[:min(len(v), 60)])
		}
	}
}

// rollingUpdateOf is what rollingUpdate points to, for messages.
func rollingUpdateOf(us appsv1beta1.CloneSetUpdateStrategy) any {
	if us.RollingUpdate == nil {
		return nil
	}
	return *us.RollingUpdate
}

// TestCloneSetV1beta1ErrorPaths: validation runs once, on the hub, but a 422 names the field the
// client sent: spec.updateStrategy.rollingUpdate.partition at v1beta1,
// spec.updateStrategy.partition at v1alpha1.
func TestCloneSetV1beta1ErrorPaths(t *testing.T) {
	s, ctx := parallelServer(t)
	cs := newCloneSetV1beta1("bad")
	cs.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateCloneSetStrategy{Partition: ptr.To(intstr.FromInt32(-1))}
	_, err := s.Client.AppsV1beta1().CloneSets("default").Create(ctx, cs, metav1.CreateOptions{})
	checkInvalidField(t, "v1beta1", err, "spec.updateStrategy.rollingUpdate.partition")

	cs = newCloneSetV1beta1("bad")
	cs.Spec.UpdateStrategy.Type = "Sometimes"
	cs.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateCloneSetStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(1))}
	_, err = s.Client.AppsV1beta1().CloneSets("default").Create(ctx, cs, metav1.CreateOptions{})
	checkInvalidField(t, "v1beta1", err, "spec.updateStrategy.type")

	alpha := &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec: appsv1alpha1.CloneSetSpec{
			Selector:       cs.Spec.Selector,
			Template:       cs.Spec.Template,
			UpdateStrategy: appsv1alpha1.CloneSetUpdateStrategy{Partition: ptr.To(intstr.FromInt32(-1))},
		},
	}
	_, err = s.Client.AppsV1alpha1().CloneSets("default").Create(ctx, alpha, metav1.CreateOptions{})
	checkInvalidField(t, "v1alpha1", err, "spec.updateStrategy.partition")
}

// checkInvalidField checks that err is a 422 whose one cause is at field.
func checkInvalidField(t *testing.T, version string, err error, field string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("%s: %v, want 422 Invalid", version, err)
	}
	var fields []string
	if st, ok := err.(apierrors.APIStatus); ok && st.Status().Details != nil {
		for _, c := range st.Status().Details.Causes {
			fields = append(fields, c.Field)
		}
	}
	if len(fields) != 1 || fields[0] != field || !strings.Contains(err.Error(), field+":") {
		data, _ := json.Marshal(fields)
		t.Errorf("%s: causes at %s (%v), want one at %s", version, data, err, field)
	}
}

// TestCloneSetKubectl: `kubectl apply --server-side` of a v1beta1 CloneSet manifest and then of
// the same object as a v1alpha1 manifest (a changed field) succeeds and loses nothing v1beta1
// said; both versions print the same columns, and kubectl explains the v1beta1 fields.
func TestCloneSetKubectl(t *testing.T) {
	t.Parallel()
	s := framework.StartServer(t)
	k := newKubectl(t, kubectlBinary(t), s)
	k.mustRun("apply", "--server-side", "-f", k.writeFile("beta.yaml", `apiVersion: apps.kruise.io/v1beta1
kind: CloneSet
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  scaleStrategy: {excludePreparingDelete: true}
  updateStrategy:
    type: OnDelete
    rollingUpdate:
      inPlaceUpdateStrategy: {imagePreDownloadParallelism: 2}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: main, image: "inplace.local/app:v1"}]}
`))
	k.mustRun("apply", "--server-side", "-f", k.writeFile("alpha.yaml", `apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata:
  name: web
  namespace: default
  labels: {apps.kruise.io/cloneset-scaling-exclude-preparing-delete: "true"}
  annotations: {apps.kruise.io/image-predownload-parallelism: "2"}
spec:
  replicas: 2
  minReadySeconds: 7
  selector: {matchLabels: {app: web}}
  updateStrategy: {type: OnDelete}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: main, image: "inplace.local/app:v1"}]}
`))
	got := k.mustRun("get", "clonesets.v1beta1.apps.kruise.io", "web", "-n", "default", "-o",
		"jsonpath={.spec.minReadySeconds} {.spec.updateStrategy.type} {.spec.scaleStrategy.excludePreparingDelete} "+
			"{.spec.updateStrategy.rollingUpdate.inPlaceUpdateStrategy.imagePreDownloadParallelism} {.metadata.annotations}")
	if want := "7 OnDelete true 2 "; got != want {
		t.Errorf("v1beta1 after a v1beta1 and a v1alpha1 server-side apply: %q, want %q", got, want)
	}
	k.mustRun("apply", "--server-side", "-f", examplePath(t, "cloneset-v1beta1.yaml"))
	got = k.mustRun("get", "clonesets.v1alpha1.apps.kruise.io", "sample-beta", "-n", "default", "-o",
		`jsonpath={.spec.updateStrategy.type} {.spec.updateStrategy.maxUnavailable} {.metadata.annotations.apps\.kruise\.io/image-predownload-parallelism} `+
			`{.metadata.annotations.apps\.kruise\.io/image-predownload-timeout-seconds} {.metadata.labels.apps\.kruise\.io/cloneset-scaling-exclude-preparing-delete}`)
	if want := "InPlaceIfPossible 1 2 300 true"; got != want {
		t.Errorf("artifacts/examples/cloneset-v1beta1.yaml read at v1alpha1: %q, want %q", got, want)
	}
	for _, wide := range []bool{false, true} {
		args := func(resource string) []string {
			a := []string{"get", resource, "-n", "default"}
			if wide {
				a = append(a, "-o", "wide")
			}
			return a
		}
		alphaHeader, _ := table(t, k.mustRun(args("clonesets.v1alpha1.apps.kruise.io")...))
		betaHeader, _ := table(t, k.mustRun(args("clonesets.v1beta1.apps.kruise.io")...))
		if strings.Join(alphaHeader, " ") != strings.Join(betaHeader, " ") || len(alphaHeader) < 7 {
			t.Errorf("columns (wide %v): v1alpha1 %v, v1beta1 %v; want the same", wide, alphaHeader, betaHeader)
		}
	}
	out := strings.Join(strings.Fields(k.mustRun("explain", "--api-version=apps.kruise.io/v1beta1",
		"clonesets.spec.updateStrategy.rollingUpdate.inPlaceUpdateStrategy.imagePreDownloadParallelism")), " ")
	if !strings.Contains(out, "VERSION: v1beta1") || !strings.Contains(out, "apps.kruise.io/image-predownload-parallelism") {
		t.Errorf("kubectl explain of imagePreDownloadParallelism:\n%s", out)
	}
	// `kubectl get clonesets` names no version: kubectl takes a resource at its group's preferred
	// version when it is served there. Discovery has one preferred version per group, v1beta1 (as
	// kube-apiserver ranks OpenKruise's CRD versions, and as with OpenKruise's master, which serves
	// CloneSet at v1beta1 too), so it answers in v1beta1; clonesets.v1alpha1.apps.kruise.io, and
	// every client that names the version (the controllers, OpenKruise's clientset), get v1alpha1.
	if got := k.mustRun("get", "clonesets", "web", "-n", "default", "-o", "jsonpath={.apiVersion}"); got != "apps.kruise.io/v1beta1" {
		t.Errorf("kubectl get clonesets answers in %s, want apps.kruise.io/v1beta1, the group's preferred version", got)
	}
	if got := k.mustRun("get", "clonesets.v1alpha1.apps.kruise.io", "web", "-n", "default", "-o", "jsonpath={.apiVersion}"); got != "apps.kruise.io/v1alpha1" {
		t.Errorf("kubectl get clonesets.v1alpha1.apps.kruise.io answers in %s", got)
	}
}
