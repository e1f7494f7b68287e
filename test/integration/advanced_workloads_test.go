package integration

import (
	"strings"
	"testing"

	kruisev1alpha1 "github.com/openkruise/kruise-api/apps/v1alpha1"
	kruisev1beta1 "github.com/openkruise/kruise-api/apps/v1beta1"
	kruiseclient "github.com/openkruise/kruise-api/client/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/test/integration/framework"
)

// TestKruiseClientAdvancedWorkloads: OpenKruise's own typed clients (kruise-api v1.8.0), unchanged,
// create, read and update an Advanced StatefulSet at v1beta1 and at v1alpha1 and an Advanced
// DaemonSet, and see OpenKruise's defaults.
func TestKruiseClientAdvancedWorkloads(t *testing.T) {
	s, ctx := parallelServer(t)
	kc := kruiseClient(t, s)
	labels := map[string]string{"app": "kruise"}
	tmpl := podTemplate(labels)

	sts := kc.AppsV1beta1().StatefulSets("default")
	created, err := sts.Create(ctx, &kruisev1beta1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "kruise-beta"},
		Spec: kruisev1beta1.StatefulSetSpec{
			Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl,
			PodManagementPolicy: "Parallel",
			UpdateStrategy: kruisev1beta1.StatefulSetUpdateStrategy{RollingUpdate: &kruisev1beta1.RollingUpdateStatefulSetStrategy{
				PodUpdatePolicy: kruisev1beta1.InPlaceIfPossiblePodUpdateStrategyType, MaxUnavailable: ptr.To(intstr.FromString("50%")),
			}},
			ReserveOrdinals: []intstr.IntOrString{intstr.FromInt32(0)},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("kruise-api v1beta1 create: %v", err)
	}
	if created.Spec.UpdateStrategy.Type != "RollingUpdate" || *created.Spec.UpdateStrategy.RollingUpdate.Partition != 0 ||
		*created.Spec.RevisionHistoryLimit != 10 || len(created.Spec.ReserveOrdinals) != 1 {
		t.Errorf("kruise-api v1beta1 create answered %+v; want OpenKruise's defaults and the reserved ordinal", created.Spec)
	}
	created.Spec.Replicas = ptr.To[int32](4)
	if _, err := sts.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("kruise-api v1beta1 update: %v", err)
	}

	// OpenKruise's v1alpha1 type has no reserveOrdinals: it reads the object, the annotation keeps
	// them across its update.
	alpha := kc.AppsV1alpha1().StatefulSets("default")
	a, err := alpha.Get(ctx, "kruise-beta", metav1.GetOptions{})
	if err != nil || *a.Spec.Replicas != 4 {
		t.Fatalf("kruise-api v1alpha1 get: %+v %v, want 4 replicas", a, err)
	}
	a.Spec.UpdateStrategy.RollingUpdate.Paused = true
	if _, err := alpha.Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("kruise-api v1alpha1 update: %v", err)
	}
	b, err := sts.Get(ctx, "kruise-beta", metav1.GetOptions{})
	if err != nil || !b.Spec.UpdateStrategy.RollingUpdate.Paused || len(b.Spec.ReserveOrdinals) != 1 {
		t.Errorf("after the v1alpha1 update, v1beta1 reads %+v (%v); want paused and the reserved ordinal kept", b, err)
	}

	ds := kc.AppsV1alpha1().DaemonSets("default")
	d, err := ds.Create(ctx, &kruisev1alpha1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "kruise-ds"},
		Spec:       kruisev1alpha1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("kruise-api DaemonSet create: %v", err)
	}
	if ru := d.Spec.UpdateStrategy.RollingUpdate; ru == nil || ru.Type != kruisev1alpha1.StandardRollingUpdateType || ru.MaxUnavailable.IntValue() != 1 {
		t.Errorf("kruise-api DaemonSet defaults: %+v", d.Spec.UpdateStrategy)
	}
	d.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](1)
	if _, err := ds.Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("kruise-api DaemonSet update: %v", err)
	}
	if got, err := ds.Get(ctx, "kruise-ds", metav1.GetOptions{}); err != nil || got.Spec.UpdateStrategy.RollingUpdate.Partition == nil || *got.Spec.UpdateStrategy.RollingUpdate.Partition != 1 {
		t.Errorf("kruise-api DaemonSet get after update: %+v %v, want partition 1", got, err)
	}
}

// TestKubectlAdvancedWorkloads: the sample manifests (OpenKruise's documentation's, at v1beta1 and
// v1alpha1) apply with kubectl; kubectl prints OpenKruise's columns, finds the short names and
// reads either version; validation errors name the field.
func TestKubectlAdvancedWorkloads(t *testing.T) {
	t.Parallel()
	binary := kubectlBinary(t)
	s := framework.StartServer(t)
	k := newKubectl(t, binary, s)
	for _, f := range []string{"statefulset.yaml", "statefulset-v1alpha1.yaml", "daemonset.yaml"} {
		k.mustRun("apply", "--server-side", "-f", examplePath(t, f))
	}
	out := k.mustRun("get", "statefulsets.apps.kruise.io")
	if header := strings.Fields(strings.SplitN(out, "\n", 2)[0]); strings.Join(header, " ") != "NAME DESIRED CURRENT UPDATED READY AGE" {
		t.Errorf("kubectl get statefulsets.apps.kruise.io header %v", header)
	}
	for _, name := range []string{"sample", "sample-alpha"} {
		if !strings.Contains(out, name) {
			t.Errorf("kubectl get statefulsets.apps.kruise.io lacks %s:\n%s", name, out)
		}
	}
	if out := k.mustRun("get", "asts", "-o", "wide"); !strings.Contains(out, "inplace.local/app:v1") || !strings.Contains(out, "CONTAINERS") {
		t.Errorf("kubectl get asts -o wide:\n%s", out)
	}
	if v := k.mustRun("get", "statefulsets.v1alpha1.apps.kruise.io", "sample", "-o", "jsonpath={.apiVersion} {.spec.updateStrategy.rollingUpdate.maxUnavailable}"); v != "apps.kruise.io/v1alpha1 2" {
		t.Errorf("sample read at v1alpha1: %q", v)
	}
	if v := k.mustRun("get", "statefulsets.apps.kruise.io", "sample-alpha", "-o", "jsonpath={.apiVersion} {.spec.persistentVolumeClaimRetentionPolicy.whenScaled}"); v != "apps.kruise.io/v1beta1 Retain" {
		t.Errorf("sample-alpha read at the preferred version: %q", v)
	}
	out = k.mustRun("get", "ads")
	if header := strings.Fields(strings.SplitN(out, "\n", 2)[0]); strings.Join(header, " ") != "NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE AGE" {
		t.Errorf("kubectl get ads header %v", header)
	}
	k.mustRun("scale", "statefulsets.apps.kruise.io/sample", "--replicas=5")
	if v := k.mustRun("get", "asts", "sample", "-o", "jsonpath={.spec.replicas}"); v != "5" {
		t.Errorf("after kubectl scale --replicas=5: %q", v)
	}
	_, stderr, err := k.run("patch", "asts", "sample", "--type=merge", "-p", `{"spec":{"podManagementPolicy":"OrderedReady"}}`)
	if err == nil || !strings.Contains(stderr, "spec.podManagementPolicy") {
		t.Errorf("changing podManagementPolicy: err %v, stderr %s; want a refusal naming spec.podManagementPolicy", err, stderr)
	}
}

// kruiseClient is OpenKruise's own typed clientset (kruise-api), unchanged, on the server.
func kruiseClient(t *testing.T, s *framework.Server) kruiseclient.Interface {
	t.Helper()
	return clientOf(t, s, kruiseclient.NewForConfig)
}
