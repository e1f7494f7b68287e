package integration

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	acv1alpha1 "github.com/inplace-dev/inplace/pkg/generated/applyconfiguration/apps/v1alpha1"
	acv1beta1 "github.com/inplace-dev/inplace/pkg/generated/applyconfiguration/apps/v1beta1"
)

func newStatefulSetV1beta1(name string) *appsv1beta1.StatefulSet {
	labels := map[string]string{"app": name}
	return &appsv1beta1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1beta1.StatefulSetSpec{
			Replicas:    ptr.To[int32](3),
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template:    podTemplate(labels),
			ServiceName: name,
		},
	}
}

// TestStatefulSetVersions: the Advanced StatefulSet is one object served at v1beta1 (stored) and
// v1alpha1, converted by the server itself (no conversion webhook): each version reads what the
// other wrote, with its own defaults; the v1beta1 fields v1alpha1 lacks survive a read-modify-write
// through v1alpha1; objects are stored at v1beta1 whatever version wrote them.
func TestStatefulSetVersions(t *testing.T) {
	s, ctx := parallelServer(t)
	alpha, beta := s.Client.AppsV1alpha1().StatefulSets("default"), s.Client.AppsV1beta1().StatefulSets("default")

	// Written at v1alpha1, read at v1beta1: the same object, with v1beta1's defaults.
	a := &appsv1alpha1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "from-alpha"},
		Spec: appsv1alpha1.StatefulSetSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}},
			Template: podTemplate(map[string]string{"app": "a"}),
			UpdateStrategy: appsv1alpha1.StatefulSetUpdateStrategy{RollingUpdate: &appsv1alpha1.RollingUpdateStatefulSetStrategy{
				PodUpdatePolicy: appsv1alpha1.InPlaceIfPossiblePodUpdateStrategyType,
			}},
		},
	}
	created, err := alpha.Create(ctx, a, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a v1alpha1 StatefulSet: %v", err)
	}
	got, err := beta.Get(ctx, "from-alpha", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading it at v1beta1: %v", err)
	}
	if got.UID != created.UID || *got.Spec.Replicas != 2 || got.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy != appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType {
		t.Errorf("read at v1beta1: uid %s replicas %d policy %s; want the v1alpha1 object (uid %s, 2, InPlaceIfPossible)",
			got.UID, *got.Spec.Replicas, got.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy, created.UID)
	}
	if p := got.Spec.PersistentVolumeClaimRetentionPolicy; p == nil || p.WhenDeleted != appsv1beta1.RetainPersistentVolumeClaimRetentionPolicyType {
		t.Errorf("read at v1beta1: persistentVolumeClaimRetentionPolicy %+v, want the v1beta1 default Retain", p)
	}
	if got.Spec.PodManagementPolicy != appsv1.OrderedReadyPodManagement || got.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable.IntValue() != 1 {
		t.Errorf("read at v1beta1: podManagementPolicy %q maxUnavailable %v, want OpenKruise's defaults OrderedReady, 1",
			got.Spec.PodManagementPolicy, got.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable)
	}
	if _, ok := created.Annotations[appsv1alpha1.StatefulSetV1beta1FieldsAnnotation]; ok {
		t.Errorf("a v1alpha1 object with only the default retention policy carries %s: %v", appsv1alpha1.StatefulSetV1beta1FieldsAnnotation, created.Annotations)
	}

	// Written at v1beta1 with fields v1alpha1 lacks: v1alpha1 shows them in the annotation, and a
	// v1alpha1 client that reads, changes replicas and writes back keeps them.
	b := newStatefulSetV1beta1("from-beta")
	b.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	b.Spec.ReserveOrdinals = []intstr.IntOrString{intstr.FromInt32(1), intstr.FromString("3-4")}
	b.Spec.Ordinals = &appsv1beta1.StatefulSetOrdinals{Start: 2}
	b.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{FinalizersHandler: []string{"example.com/hold"}}}
	b.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: appsv1beta1.DeletePersistentVolumeClaimRetentionPolicyType}
	if _, err := beta.Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a v1beta1 StatefulSet: %v", err)
	}
	asAlpha, err := alpha.Get(ctx, "from-beta", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading it at v1alpha1: %v", err)
	}
	carried := asAlpha.Annotations[appsv1alpha1.StatefulSetV1beta1FieldsAnnotation]
	for _, want := range []string{`"reserveOrdinals":[1,"3-4"]`, `"ordinals":{"start":2}`, `example.com/hold`, `"whenDeleted":"Delete"`} {
		if !strings.Contains(carried, want) {
			t.Errorf("v1alpha1 annotation %s = %s; want it to hold %s", appsv1alpha1.StatefulSetV1beta1FieldsAnnotation, carried, want)
		}
	}
	asAlpha.Spec.Replicas = ptr.To[int32](5)
	if _, err := alpha.Update(ctx, asAlpha, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating it at v1alpha1: %v", err)
	}
	back, err := beta.Get(ctx, "from-beta", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *back.Spec.Replicas != 5 || len(back.Spec.ReserveOrdinals) != 2 || back.Spec.Ordinals == nil || back.Spec.Ordinals.Start != 2 ||
		back.Spec.Lifecycle == nil || back.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted != appsv1beta1.DeletePersistentVolumeClaimRetentionPolicyType {
		t.Errorf("after a v1alpha1 update: replicas %d reserveOrdinals %v ordinals %+v lifecycle %+v retention %+v; want 5 and the v1beta1 fields kept",
			*back.Spec.Replicas, back.Spec.ReserveOrdinals, back.Spec.Ordinals, back.Spec.Lifecycle, back.Spec.PersistentVolumeClaimRetentionPolicy)
	}
	if _, ok := back.Annotations[appsv1alpha1.StatefulSetV1beta1FieldsAnnotation]; ok {
		t.Errorf("the carrying annotation is stored: %v", back.Annotations)
	}
	// A broken annotation is the client's mistake: a 400 that names it, nothing stored.
	asAlpha, _ = alpha.Get(ctx, "from-beta", metav1.GetOptions{})
	asAlpha.Annotations[appsv1alpha1.StatefulSetV1beta1FieldsAnnotation] = "{not json"
	if _, err := alpha.Update(ctx, asAlpha, metav1.UpdateOptions{}); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), appsv1alpha1.StatefulSetV1beta1FieldsAnnotation) {
		t.Errorf("update with a broken %s: %v, want 400 naming it", appsv1alpha1.StatefulSetV1beta1FieldsAnnotation, err)
	}

	// Stored at v1beta1, whichever version wrote it.
	for _, name := range []string{"from-alpha", "from-beta"} {
		if v := etcdValue(t, s, "/registry/apps.kruise.io/statefulsets/default/"+name); !bytes.Contains(v, []byte("apps.kruise.io/v1beta1")) {
			t.Errorf("%s stored as %q..., want apps.kruise.io/v1beta1", name, v[:min(len(v), 60)])
		}
	}

	// Both versions list and watch the same objects.
	alphaList, err := alpha.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	betaList, err := beta.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(alphaList.Items) != 2 || len(betaList.Items) != 2 {
		t.Errorf("listed %d at v1alpha1 and %d at v1beta1, want 2 each", len(alphaList.Items), len(betaList.Items))
	}

	// The scale subresource at either version.
	scale, err := alpha.GetScale(ctx, "from-beta", metav1.GetOptions{})
	if err != nil || scale.Spec.Replicas != 5 {
		t.Fatalf("v1alpha1 scale: %+v %v, want 5 replicas", scale, err)
	}
	scale.Spec.Replicas = 1
	if _, err := beta.UpdateScale(ctx, "from-beta", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("v1beta1 scale update: %v", err)
	}
	if got, _ := alpha.Get(ctx, "from-beta", metav1.GetOptions{}); got == nil || *got.Spec.Replicas != 1 {
		t.Errorf("after scaling to 1 through v1beta1, v1alpha1 reads %v", got)
	}
}

// TestStatefulSetApplyAcrossVersions: server-side apply keeps field ownership across versions:
// replicas applied by one manager at v1alpha1 conflict with another manager's apply at v1beta1,
// which takes them only with force.
func TestStatefulSetApplyAcrossVersions(t *testing.T) {
	s, ctx := parallelServer(t)
	labels := map[string]string{"app": "ssa"}
	alphaApply := acv1alpha1.StatefulSet("ssa", "default").WithSpec(acv1alpha1.StatefulSetSpec().
		WithReplicas(2).
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
		WithTemplate(corev1ac.PodTemplateSpec().
			WithLabels(labels).
			WithSpec(corev1ac.PodSpec().WithContainers(corev1ac.Container().WithName("main").WithImage("inplace.local/app:v1")))))
	if _, err := s.Client.AppsV1alpha1().StatefulSets("default").Apply(ctx, alphaApply, metav1.ApplyOptions{FieldManager: "team-alpha"}); err != nil {
		t.Fatalf("apply at v1alpha1: %v", err)
	}
	betaApply := acv1beta1.StatefulSet("ssa", "default").WithSpec(acv1beta1.StatefulSetSpec().WithReplicas(4))
	_, err := s.Client.AppsV1beta1().StatefulSets("default").Apply(ctx, betaApply, metav1.ApplyOptions{FieldManager: "team-beta"})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "team-alpha") || !strings.Contains(err.Error(), ".spec.replicas") {
		t.Fatalf("apply of replicas at v1beta1 by another manager: %v, want a conflict on .spec.replicas with team-alpha", err)
	}
	got, err := s.Client.AppsV1beta1().StatefulSets("default").Apply(ctx, betaApply, metav1.ApplyOptions{FieldManager: "team-beta", Force: true})
	if err != nil || *got.Spec.Replicas != 4 {
		t.Fatalf("forced apply at v1beta1: %v %v, want 4 replicas", got, err)
	}
	// team-beta now owns replicas, at v1beta1, and team-alpha keeps the rest.
	var owners []string
	for _, m := range got.ManagedFields {
		if m.FieldsV1 != nil && strings.Contains(m.FieldsV1.GetRawString(), `"f:replicas"`) {
			owners = append(owners, m.Manager+"@"+m.APIVersion)
		}
	}
	if len(owners) != 1 || owners[0] != "team-beta@apps.kruise.io/v1beta1" {
		t.Errorf("owners of spec.replicas: %v, want only team-beta@apps.kruise.io/v1beta1", owners)
	}
}

// TestDaemonSetDefaults: an Advanced DaemonSet as OpenKruise defaults it (the deprecated
// Surging becomes Standard with maxSurge 1, maxUnavailable 0), through the typed client, and the
// raw object uses OpenKruise's JSON names.
func TestDaemonSetDefaults(t *testing.T) {
	s, ctx := parallelServer(t)
	got, err := s.Client.AppsV1alpha1().DaemonSets("default").Create(ctx, newSurgingDaemonSet("agent"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a DaemonSet: %v", err)
	}
	ru := got.Spec.UpdateStrategy.RollingUpdate
	if got.Spec.UpdateStrategy.Type != appsv1alpha1.RollingUpdateDaemonSetStrategyType || ru.Type != appsv1alpha1.StandardRollingUpdateType ||
		ru.MaxSurge.IntValue() != 1 || ru.MaxUnavailable.IntValue() != 0 || got.Spec.BurstReplicas.IntValue() != 250 || *got.Spec.RevisionHistoryLimit != 10 {
		t.Errorf("defaults: %+v burstReplicas %v revisionHistoryLimit %v; want RollingUpdate/Standard, maxSurge 1, maxUnavailable 0, 250, 10",
			got.Spec.UpdateStrategy, got.Spec.BurstReplicas, got.Spec.RevisionHistoryLimit)
	}
	raw, err := s.Client.AppsV1alpha1().RESTClient().Get().AbsPath("/apis/apps.kruise.io/v1alpha1/namespaces/default/daemonsets/agent").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		t.Fatal(err)
	}
	spec := obj["spec"].(map[string]any)
	if _, ok := spec["updateStrategy"].(map[string]any)["rollingUpdate"].(map[string]any)["rollingUpdateType"]; !ok {
		t.Errorf("the raw DaemonSet has no spec.updateStrategy.rollingUpdate.rollingUpdateType: %s", raw)
	}
}
