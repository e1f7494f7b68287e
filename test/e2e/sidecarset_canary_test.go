package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/util/retry"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// TestSidecarSetCanaryBase (OpenKruise master "inject pod sidecar with canary sidecarSet"): a base
// SidecarSet selects app=LABEL and its canary (annotations apps.kruise.io/sidecarset-canary "true"
// and apps.kruise.io/sidecarset-base BASE) app=LABEL,track=canary, both with a sidecar "agent".
// The canary is created right after its base (the base is found though the admission cache may
// lag). A Pod both select gets the canary's agent and only the canary; a Pod only the base selects
// gets the base's. The base can still be updated with the same container name as its canary. The
// pairings OpenKruise refuses answer 422 at the field path: a missing base, a base that is itself a
// canary, a canary that is its own base, a canary not NotUpdate, a canary changing its base (a
// second canary of the same base, with its own container name, is allowed).
func TestSidecarSetCanaryBase(t *testing.T) {
	ctx, ns := framework.Start(t, "ss-canarybase")
	label := "e2e-cb-" + utilrand.String(5)
	baseName, canaryName := label+"-base", label+"-canary"
	sets := framework.Inplace.AppsV1alpha1().SidecarSets()

	newSet := func(name, image string, annotations map[string]string) *v1alpha1.SidecarSet {
		s := framework.ScopedSidecarSet(name, ns, label)
		s.Annotations = annotations
		s.Spec.Containers = []v1alpha1.SidecarContainer{framework.Sidecar(framework.Container("agent", image), v1alpha1.AfterAppContainerType)}
		s.Spec.UpdateStrategy.Type = v1alpha1.NotUpdateSidecarSetStrategyType
		return s
	}
	canaryOf := func(name, base string) *v1alpha1.SidecarSet {
		s := newSet(name, framework.AppImageV2, map[string]string{
			v1alpha1.SidecarSetCanaryAnnotation: "true", v1alpha1.SidecarSetBaseAnnotation: base})
		s.Spec.Selector.MatchLabels["track"] = "canary"
		return s
	}
	framework.CreateSidecarSet(t, ctx, newSet(baseName, framework.AppImageV1, nil))
	framework.CreateSidecarSet(t, ctx, canaryOf(canaryName, baseName))

	podOf := func(name, track string) *corev1.Pod {
		p := framework.LabeledPod(ns, name, label, framework.Container("main", framework.AppImageV1))
		if track != "" {
			p.Labels["track"] = track
		}
		return p
	}
	for _, tc := range []struct{ pod, track, set, image string }{
		{"canary", "canary", canaryName, framework.AppImageV2},
		{"stable", "", baseName, framework.AppImageV1},
	} {
		// CreateInjectedPod waits for the injected list to be exactly the one SidecarSet.
		p := framework.CreateInjectedPod(t, ctx, podOf(tc.pod, tc.track), tc.set)
		agent := framework.FindContainer(p.Spec.Containers, "agent")
		if agent == nil || agent.Image != tc.image {
			t.Errorf("pod %s: agent %+v, want image %s of SidecarSet %s", tc.pod, agent, tc.image, tc.set)
		}
		if got := framework.ContainerNames(p.Spec.Containers); len(got) != 2 {
			t.Errorf("pod %s: containers %v, want main and one agent", tc.pod, got)
		}
	}

	// The base's preview (sidecarsets/BASE/inject) says so for a Pod its canary takes, and
	// injects the base into the others, as the webhook does.
	for _, tc := range []struct {
		track string
		code  int
	}{{"canary", http.StatusUnprocessableEntity}, {"", http.StatusCreated}} {
		preview := podOf("preview", tc.track)
		preview.APIVersion, preview.Kind = "v1", "Pod"
		body, err := json.Marshal(preview)
		if err != nil {
			t.Fatal(err)
		}
		r := framework.KubectlCreateRaw(ctx, "/apis/apps.kruise.io/v1alpha1/sidecarsets/"+baseName+"/inject", string(body), "-")
		if r.Code != tc.code || (tc.code == http.StatusUnprocessableEntity && !strings.Contains(r.ErrMsg+r.Body, "canary SidecarSet "+canaryName)) {
			t.Errorf("preview of SidecarSet %s for a Pod with track=%q: %d %s%s, want %d (naming the canary when refused)", baseName, tc.track, r.Code, r.ErrMsg, r.Body, tc.code)
		}
	}

	// The base is updated although its canary has a container of the same name: they never
	// inject into the same Pod, so they do not clash.
	framework.UpdateSidecarSet(t, ctx, baseName, func(s *v1alpha1.SidecarSet) {
		s.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "BASE", Value: "2"}}
	})

	basePath := "metadata.annotations[" + v1alpha1.SidecarSetBaseAnnotation + "]"
	expect422 := func(what string, err error, path, detail string) {
		t.Helper()
		status, ok := err.(apierrors.APIStatus)
		if !apierrors.IsInvalid(err) || !ok || status.Status().Code != http.StatusUnprocessableEntity {
			t.Errorf("%s: %v, want 422 Invalid", what, err)
			return
		}
		for _, c := range status.Status().Details.Causes {
			if c.Field == path && strings.Contains(c.Message, detail) {
				return
			}
		}
		t.Errorf("%s: %v, want a cause at %s saying %q", what, err, path, detail)
	}
	create := func(s *v1alpha1.SidecarSet) error {
		created, err := sets.Create(ctx, s, metav1.CreateOptions{})
		if err == nil {
			_ = sets.Delete(context.Background(), created.Name, metav1.DeleteOptions{})
		}
		return err
	}
	missing := label + "-missing"
	expect422("a canary of a missing base", create(canaryOf(label+"-c1", missing)), basePath,
		fmt.Sprintf("the base SidecarSet %s of this canary (annotation %s) does not exist", missing, v1alpha1.SidecarSetCanaryAnnotation))
	expect422("a canary of a canary", create(canaryOf(label+"-c2", canaryName)), basePath,
		fmt.Sprintf("the base SidecarSet %s is itself a canary (of %s)", canaryName, baseName))
	// With containers of their own, these clash with nothing: the admission plugin lets them
	// through to validation, which refuses them.
	itself := canaryOf(label+"-c3", label+"-c3")
	itself.Spec.Containers[0].Name = "agent3"
	expect422("a canary of itself", create(itself), basePath, "a canary SidecarSet cannot be its own base")
	rolling := canaryOf(label+"-c4", baseName)
	rolling.Spec.UpdateStrategy.Type = "" // defaulted to RollingUpdate
	rolling.Spec.Containers[0].Name = "agent4"
	expect422("a canary with RollingUpdate", create(rolling), "spec.updateStrategy.type", "updateStrategy.type must be NotUpdate")

	// The base cannot change. A second canary of the base, with a container of its own (so that
	// it clashes with nothing, and the admission plugin lets the update through to validation),
	// asks to move to another SidecarSet.
	second := canaryOf(label+"-c5", baseName)
	second.Spec.Containers[0].Name = "agent5"
	framework.CreateSidecarSet(t, ctx, second)
	other := newSet(label+"-other", framework.AppImageV1, nil)
	other.Spec.Selector.MatchLabels["app"] = label + "-other"
	framework.CreateSidecarSet(t, ctx, other)
	// The SidecarSet controller writes the new canary's status meanwhile: a 409 is sent again.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got, err := sets.Get(ctx, second.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		got.Annotations[v1alpha1.SidecarSetBaseAnnotation] = other.Name
		_, err = sets.Update(ctx, got, metav1.UpdateOptions{})
		return err
	})
	expect422("a canary changing its base", err, basePath, fmt.Sprintf("the base of a canary SidecarSet is immutable (was %q)", baseName))
}
