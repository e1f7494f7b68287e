package integration

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// TestDefaults creates minimal objects of each kind and checks the defaults are stored: read back
// through the typed client, and on the wire as JSON (so an int stays an int and "20%" a string).
func TestDefaults(t *testing.T) {
	s, ctx := parallelServer(t)

	t.Run("CloneSet", func(t *testing.T) {
		c := s.Client.AppsV1alpha1().CloneSets("default")
		minimal := newCloneSet("minimal")
		minimal.Spec.Replicas = nil
		got := createAndRead(t, ctx, c, minimal)
		spec := got.Spec
		expectPtr(t, "spec.replicas", spec.Replicas, 1)
		expectPtr(t, "spec.revisionHistoryLimit", spec.RevisionHistoryLimit, 10)
		us := spec.UpdateStrategy
		if us.Type != appsv1alpha1.RecreateCloneSetUpdateStrategyType {
			t.Errorf("spec.updateStrategy.type: want ReCreate, got %q", us.Type)
		}
		expectIntOrString(t, "spec.updateStrategy.partition", us.Partition, intstr.FromInt32(0))
		expectIntOrString(t, "spec.updateStrategy.maxUnavailable", us.MaxUnavailable, intstr.FromString("20%"))
		expectIntOrString(t, "spec.updateStrategy.maxSurge", us.MaxSurge, intstr.FromInt32(0))
		if us.InPlaceUpdateStrategy != nil {
			t.Errorf("spec.updateStrategy.inPlaceUpdateStrategy: want none with ReCreate, got %+v", us.InPlaceUpdateStrategy)
		}
		pod := spec.Template.Spec
		if pod.RestartPolicy != corev1.RestartPolicyAlways || pod.DNSPolicy != corev1.DNSClusterFirst ||
			pod.SchedulerName != corev1.DefaultSchedulerName || pod.TerminationGracePeriodSeconds == nil ||
			*pod.TerminationGracePeriodSeconds != 30 || pod.SecurityContext == nil {
			t.Errorf("the Pod template is not defaulted as kube-apiserver would: %+v", pod)
		}
		main := pod.Containers[0]
		// OpenKruise defaults the pull policy of a CloneSet's containers to Always.
		if main.ImagePullPolicy != corev1.PullAlways || main.TerminationMessagePath != corev1.TerminationMessagePathDefault ||
			main.TerminationMessagePolicy != corev1.TerminationMessageReadFile {
			t.Errorf("the container is not defaulted: %+v", main)
		}

		u := getUnstructured(t, s, cloneSetsGVR, true, "minimal")
		expectWire(t, u, int64(1), "spec", "replicas")
		expectWire(t, u, int64(10), "spec", "revisionHistoryLimit")
		expectWire(t, u, "ReCreate", "spec", "updateStrategy", "type")
		expectWire(t, u, int64(0), "spec", "updateStrategy", "partition")
		expectWire(t, u, "20%", "spec", "updateStrategy", "maxUnavailable")
		expectWire(t, u, int64(0), "spec", "updateStrategy", "maxSurge")
	})

	t.Run("CloneSet InPlaceIfPossible", func(t *testing.T) {
		c := s.Client.AppsV1alpha1().CloneSets("default")
		cs := newCloneSet("inplace")
		cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
		got := createAndRead(t, ctx, c, cs)
		us := got.Spec.UpdateStrategy
		if us.Type != appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType {
			t.Errorf("spec.updateStrategy.type: want InPlaceIfPossible, got %q", us.Type)
		}
		if us.InPlaceUpdateStrategy == nil || us.InPlaceUpdateStrategy.GracePeriodSeconds != 0 {
			t.Errorf("spec.updateStrategy.inPlaceUpdateStrategy: want {}, got %+v", us.InPlaceUpdateStrategy)
		}
		expectIntOrString(t, "spec.updateStrategy.maxUnavailable", us.MaxUnavailable, intstr.FromString("20%"))
		u := getUnstructured(t, s, cloneSetsGVR, true, "inplace")
		expectWire(t, u, map[string]any{}, "spec", "updateStrategy", "inPlaceUpdateStrategy")

		// Defaults never overwrite what was given.
		given := newCloneSet("given")
		given.Spec.UpdateStrategy = appsv1alpha1.CloneSetUpdateStrategy{
			Type:           appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType,
			Partition:      ptr.To(intstr.FromString("50%")),
			MaxUnavailable: ptr.To(intstr.FromInt32(2)),
		}
		given.Spec.RevisionHistoryLimit = ptr.To[int32](3)
		given.Spec.Template.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
		if _, err := c.Create(ctx, given, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create: %v", err)
		}
		u = getUnstructured(t, s, cloneSetsGVR, true, "given")
		expectWire(t, u, "InPlaceOnly", "spec", "updateStrategy", "type")
		expectWire(t, u, "50%", "spec", "updateStrategy", "partition")
		expectWire(t, u, int64(2), "spec", "updateStrategy", "maxUnavailable")
		expectWire(t, u, int64(3), "spec", "revisionHistoryLimit")
		containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		if len(containers) != 1 || containers[0].(map[string]any)["imagePullPolicy"] != "Never" {
			t.Errorf("imagePullPolicy Never was not kept: %v", containers)
		}
	})

	t.Run("SidecarSet", func(t *testing.T) {
		c := s.Client.AppsV1alpha1().SidecarSets()
		got := createAndRead(t, ctx, c, newSidecarSet("minimal"))
		us := got.Spec.UpdateStrategy
		if us.Type != appsv1alpha1.RollingUpdateSidecarSetStrategyType {
			t.Errorf("spec.updateStrategy.type: want RollingUpdate, got %q", us.Type)
		}
		expectIntOrString(t, "spec.updateStrategy.maxUnavailable", us.MaxUnavailable, intstr.FromInt32(1))
		expectIntOrString(t, "spec.updateStrategy.partition", us.Partition, intstr.FromInt32(0))
		expectPtr(t, "spec.revisionHistoryLimit", got.Spec.RevisionHistoryLimit, 10)
		sc := got.Spec.Containers[0]
		if sc.PodInjectPolicy != appsv1alpha1.BeforeAppContainerType {
			t.Errorf("podInjectPolicy: want BeforeAppContainer, got %q", sc.PodInjectPolicy)
		}
		if sc.UpgradeStrategy.UpgradeType != appsv1alpha1.SidecarContainerColdUpgrade {
			t.Errorf("upgradeStrategy.upgradeType: want ColdUpgrade, got %q", sc.UpgradeStrategy.UpgradeType)
		}
		if sc.ShareVolumePolicy.Type != appsv1alpha1.ShareVolumePolicyDisabled {
			t.Errorf("shareVolumePolicy.type: want disabled, got %q", sc.ShareVolumePolicy.Type)
		}
		if sc.ImagePullPolicy != corev1.PullIfNotPresent || sc.TerminationMessagePath != corev1.TerminationMessagePathDefault {
			t.Errorf("the sidecar container is not defaulted as kube-apiserver would: %+v", sc.Container)
		}

		u := getUnstructured(t, s, sidecarSetGVR, false, "minimal")
		expectWire(t, u, "RollingUpdate", "spec", "updateStrategy", "type")
		expectWire(t, u, int64(1), "spec", "updateStrategy", "maxUnavailable")
		expectWire(t, u, int64(0), "spec", "updateStrategy", "partition")
		containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "containers")
		if len(containers) != 1 {
			t.Fatalf("spec.containers: %v", containers)
		}
		want := map[string]any{
			"podInjectPolicy":   "BeforeAppContainer",
			"upgradeStrategy":   map[string]any{"upgradeType": "ColdUpgrade"},
			"shareVolumePolicy": map[string]any{"type": "disabled"},
		}
		for k, v := range want {
			if got := containers[0].(map[string]any)[k]; !reflect.DeepEqual(got, v) {
				t.Errorf("spec.containers[0].%s on the wire: want %v, got %v", k, v, got)
			}
		}
	})

	t.Run("SidecarSet init containers", func(t *testing.T) {
		c := s.Client.AppsV1alpha1().SidecarSets()
		ss := newSidecarSet("init")
		ss.Spec.InitContainers = []appsv1alpha1.SidecarContainer{{Container: corev1.Container{Name: "init", Image: "inplace.local/app:v1"}}}
		got := createAndRead(t, ctx, c, ss)
		if p := got.Spec.InitContainers[0].PodInjectPolicy; p != appsv1alpha1.AfterAppContainerType {
			t.Errorf("initContainers[0].podInjectPolicy: want AfterAppContainer, got %q", p)
		}
	})

	t.Run("ContainerRecreateRequest", func(t *testing.T) {
		c := s.Client.AppsV1alpha1().ContainerRecreateRequests("default")
		crr := newCRR("minimal")
		if crr.Spec.Strategy != nil {
			t.Fatal("the fixture sets a strategy")
		}
		got := createAndRead(t, ctx, c, crr)
		if got.Spec.Strategy == nil || got.Spec.Strategy.FailurePolicy != appsv1alpha1.ContainerRecreateRequestFailurePolicyFail {
			t.Errorf("spec.strategy.failurePolicy: want Fail, got %+v", got.Spec.Strategy)
		}
		u := getUnstructured(t, s, crrGVR, true, "minimal")
		expectWire(t, u, "Fail", "spec", "strategy", "failurePolicy")

		ignore := newCRR("ignore")
		ignore.Spec.Strategy = &appsv1alpha1.ContainerRecreateRequestStrategy{FailurePolicy: appsv1alpha1.ContainerRecreateRequestFailurePolicyIgnore}
		created, err := c.Create(ctx, ignore, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		if created.Spec.Strategy.FailurePolicy != appsv1alpha1.ContainerRecreateRequestFailurePolicyIgnore {
			t.Errorf("failurePolicy Ignore was overwritten: %q", created.Spec.Strategy.FailurePolicy)
		}
	})
}

func expectPtr[T comparable](t *testing.T, field string, got *T, want T) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: want %v, got nil", field, want)
	} else if *got != want {
		t.Errorf("%s: want %v, got %v", field, want, *got)
	}
}

func expectIntOrString(t *testing.T, field string, got *intstr.IntOrString, want intstr.IntOrString) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: want %s, got nil", field, want.String())
	} else if *got != want {
		t.Errorf("%s: want %#v, got %#v", field, want, *got)
	}
}

// expectWire checks the JSON value at path of an unstructured object, type included.
func expectWire(t *testing.T, u *unstructured.Unstructured, want any, path ...string) {
	t.Helper()
	got, found, err := unstructured.NestedFieldNoCopy(u.Object, path...)
	if err != nil || !found {
		t.Errorf("%v: not on the wire (%v)", path, err)
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%v on the wire: want %#v, got %#v", path, want, got)
	}
}
