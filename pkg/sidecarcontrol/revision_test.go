package sidecarcontrol

import (
	"context"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// revision is a ControllerRevision as OpenKruise's SidecarSet controller records one: data is
// {"spec": {...}} with the recorded fields.
func revision(name, set, customVersion string, number int64, data string) appsv1.ControllerRevision {
	r := appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "inplace-system", Labels: map[string]string{RevisionSetLabel: set}},
		Revision:   number,
		Data:       runtime.RawExtension{Raw: []byte(data)},
	}
	if customVersion != "" {
		r.Labels[appsv1alpha1.SidecarSetCustomVersionLabel] = customVersion
	}
	return r
}

func withImage(image string) func(*appsv1alpha1.SidecarSet) {
	return func(s *appsv1alpha1.SidecarSet) {
		s.Spec.Containers = []appsv1alpha1.SidecarContainer{{Container: corev1.Container{Name: "agent", Image: image}}}
	}
}

const v1Data = `{"spec":{"containers":[{"name":"agent","image":"agent:v1"}],"volumes":null,"initContainers":null,"imagePullSecrets":null,"patchPodMetadata":null}}`

func TestPickAndRestoreRevision(t *testing.T) {
	set := sidecarSet("agent", withImage("agent:v2"))
	revs := []appsv1.ControllerRevision{
		revision("agent-old", "agent", "1", 1, v1Data),
		revision("agent-newer", "agent", "1", 3, `{"spec":{"$patch":"replace","containers":[{"name":"agent","image":"agent:v1.1"}]}}`),
		revision("other-1", "other", "1", 9, v1Data),
	}

	set.Spec.InjectionStrategy.Revision = &appsv1alpha1.SidecarSetInjectRevision{RevisionName: ptr.To("agent-old")}
	rev, err := PickRevision(set, revs)
	if err != nil || rev.Name != "agent-old" {
		t.Fatalf("by name: %v %v", rev, err)
	}
	restored, err := Restore(set, rev)
	if err != nil {
		t.Fatal(err)
	}
	if got := restored.Spec.Containers[0].Image; got != "agent:v1" {
		t.Errorf("restored image %s, want agent:v1", got)
	}
	if restored.Status.LatestRevision != "agent-old" || restored.Spec.Selector == nil {
		t.Errorf("restored latestRevision %q, selector %v: want agent-old and the selector kept", restored.Status.LatestRevision, restored.Spec.Selector)
	}
	wantHash, _ := Hash(restored)
	if restored.Annotations[appsv1alpha1.SidecarSetHashAnnotation] != wantHash {
		t.Errorf("hash annotation %q, want the restored spec's %q", restored.Annotations[appsv1alpha1.SidecarSetHashAnnotation], wantHash)
	}
	if set.Spec.Containers[0].Image != "agent:v2" {
		t.Error("Restore modified the SidecarSet it was given")
	}

	set.Spec.InjectionStrategy.Revision = &appsv1alpha1.SidecarSetInjectRevision{CustomVersion: ptr.To("1")}
	if rev, err := PickRevision(set, revs); err != nil || rev.Name != "agent-newer" {
		t.Errorf("by custom version: %v %v, want the highest revision agent-newer", rev, err)
	} else if restored, err := Restore(set, rev); err != nil || restored.Spec.Containers[0].Image != "agent:v1.1" {
		t.Errorf("a $patch: replace revision: %v %v", restored, err)
	}

	set.Spec.InjectionStrategy.Revision = &appsv1alpha1.SidecarSetInjectRevision{CustomVersion: ptr.To("7")}
	if _, err := PickRevision(set, revs); err == nil || !strings.Contains(err.Error(), "customVersion") {
		t.Errorf("unknown custom version: %v", err)
	}
	set.Spec.InjectionStrategy.Revision = &appsv1alpha1.SidecarSetInjectRevision{RevisionName: ptr.To("other-1")}
	if _, err := PickRevision(set, revs); err == nil || !strings.Contains(err.Error(), "revisionName") {
		t.Errorf("another SidecarSet's revision: %v", err)
	}
}

func TestForCreation(t *testing.T) {
	current := sidecarSet("agent", withImage("agent:v2"))
	restored := sidecarSet("agent", withImage("agent:v1"))
	canary := labels.Set{"canary": "true"}
	stable := labels.Set{"canary": "false"}
	never, always := func() float64 { return 0.99 }, func() float64 { return 0 }
	cases := []struct {
		name   string
		mutate func(*appsv1alpha1.SidecarSet)
		pod    labels.Set
		random func() float64
		want   string
	}{
		{"Always", nil, canary, never, "agent:v1"},
		{"Partial, not selected by the update selector", func(s *appsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.Selector = &metav1.LabelSelector{MatchLabels: canary}
		}, stable, never, "agent:v1"},
		{"Partial, selected, no partition", func(s *appsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.Selector = &metav1.LabelSelector{MatchLabels: canary}
		}, canary, always, "agent:v2"},
		{"Partial, 50% partition, drawn under", func(s *appsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("50%"))
		}, canary, func() float64 { return 0.3 }, "agent:v1"},
		{"Partial, 50% partition, drawn over", func(s *appsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("50%"))
		}, canary, func() float64 { return 0.7 }, "agent:v2"},
		{"Partial, paused upgrade", func(s *appsv1alpha1.SidecarSet) { s.Spec.UpdateStrategy.Paused = true }, canary, never, "agent:v1"},
	}
	for _, tc := range cases {
		set := current.DeepCopy()
		set.Spec.InjectionStrategy.Revision = &appsv1alpha1.SidecarSetInjectRevision{CustomVersion: ptr.To("1")}
		if tc.name != "Always" {
			set.Spec.InjectionStrategy.Revision.Policy = appsv1alpha1.PartialSidecarSetInjectRevisionPolicy
		}
		if tc.mutate != nil {
			tc.mutate(set)
		}
		got, err := ForCreation(set, restored, tc.pod, tc.random)
		if err != nil || got.Spec.Containers[0].Image != tc.want {
			t.Errorf("%s: %v %v, want %s", tc.name, got, err, tc.want)
		}
	}
}

func TestAtRevisions(t *testing.T) {
	plain := sidecarSet("plain", withImage("plain:v2"))
	pinned := sidecarSet("agent", withImage("agent:v2"))
	pinned.Spec.InjectionStrategy.Revision = &appsv1alpha1.SidecarSetInjectRevision{RevisionName: ptr.To("agent-old")}
	list := func(_ context.Context, name string) ([]appsv1.ControllerRevision, error) {
		return []appsv1.ControllerRevision{revision("agent-old", name, "", 1, v1Data)}, nil
	}
	got, warnings := AtRevisions(context.Background(), []*appsv1alpha1.SidecarSet{plain, pinned}, labels.Set{}, list, rand0)
	if len(warnings) != 0 || got[0] != plain || got[1].Spec.Containers[0].Image != "agent:v1" {
		t.Errorf("got %v, %v; want plain as it is and agent at agent:v1", got, warnings)
	}
	failing := func(context.Context, string) ([]appsv1.ControllerRevision, error) {
		return nil, errors.New("forbidden")
	}
	for name, l := range map[string]RevisionLister{"list fails": failing, "standalone": nil} {
		got, warnings = AtRevisions(context.Background(), []*appsv1alpha1.SidecarSet{pinned}, labels.Set{}, l, rand0)
		if got[0] != pinned || len(warnings) != 1 || !strings.Contains(warnings[0], "SidecarSet agent injected at its current spec") {
			t.Errorf("%s: got %v, %q; want the current spec and a warning", name, got, warnings)
		}
	}
}

func rand0() float64 { return 0 }
