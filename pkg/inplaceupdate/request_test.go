package inplaceupdate

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

func request(revision string, containers ...apps.InPlaceUpdateContainer) *apps.InPlaceUpdate {
	return &apps.InPlaceUpdate{Spec: apps.InPlaceUpdateSpec{Revision: revision, Containers: containers}}
}

func withMetadata(req *apps.InPlaceUpdate, labels, annotations map[string]string) *apps.InPlaceUpdate {
	req.Spec.Metadata = &apps.InPlaceUpdateMetadata{Labels: labels, Annotations: annotations}
	return req
}

func resizeTo(requests, limits string) *corev1.ResourceRequirements {
	r := resources(requests, limits)
	return &r
}

// requestPod: app (Burstable resources, reads label version), sidecar, and an init container.
func requestPod() *corev1.Pod {
	pod := withGate(runningPod(
		ctr("app", "app:v1", res("cpu=100m,memory=64Mi", "cpu=200m,memory=128Mi"), envLabel("VERSION", "version")),
		ctr("sidecar", "sidecar:v1"),
	))
	pod.Spec.InitContainers = []corev1.Container{ctr("init", "init:v1")}
	pod.Labels["version"] = "1"
	return pod
}

func TestSpecFromRequest(t *testing.T) {
	cases := []struct {
		name string
		req  *apps.InPlaceUpdate
		pod  func(*corev1.Pod) // changes requestPod, when set
		want *UpdateSpec
	}{{
		name: "image",
		req:  request("rev-2", apps.InPlaceUpdateContainer{Name: "sidecar", Image: "sidecar:v2"}),
		want: &UpdateSpec{Revision: "rev-2", ContainerImages: map[string]string{"sidecar": "sidecar:v2"}},
	}, {
		name: "values the pod already has are left out",
		req: withMetadata(request("rev-2",
			apps.InPlaceUpdateContainer{Name: "app", Image: "app:v1"},
			apps.InPlaceUpdateContainer{Name: "sidecar", Image: "sidecar:v2"}),
			map[string]string{"app": "web"}, map[string]string{"note": "x"}),
		want: &UpdateSpec{Revision: "rev-2", ContainerImages: map[string]string{"sidecar": "sidecar:v2"}},
	}, {
		name: "resources merge over the current ones",
		req:  request("rev-2", apps.InPlaceUpdateContainer{Name: "app", Resources: resizeTo("cpu=150m", "cpu=300m")}),
		want: &UpdateSpec{Revision: "rev-2", ContainerResources: map[string]corev1.ResourceRequirements{
			"app": resources("cpu=150m,memory=64Mi", "cpu=300m,memory=128Mi")}},
	}, {
		name: "labels, one read through env, annotations, grace period",
		req: func() *apps.InPlaceUpdate {
			r := withMetadata(request("rev-2"), map[string]string{"version": "2", "tier": "gold"}, map[string]string{"team": "a"})
			r.Spec.GracePeriodSeconds = 15
			return r
		}(),
		want: &UpdateSpec{Revision: "rev-2",
			ContainerRefMetadata:  map[string]metav1.ObjectMeta{"app": {Labels: map[string]string{"version": "2"}}},
			Metadata:              &MetadataChange{Labels: map[string]string{"tier": "gold"}, Annotations: map[string]string{"team": "a"}},
			UpdateEnvFromMetadata: true, GraceSeconds: 15},
	}, {
		// As in OpenKruise, a removed key restarts nothing, even for a container reading it.
		name: "labels and annotations removed; a container reading a removed label is not restarted; absent keys ignored",
		req: func() *apps.InPlaceUpdate {
			r := request("rev-2")
			r.Spec.Metadata = &apps.InPlaceUpdateMetadata{RemoveLabels: []string{"version", "absent"}, RemoveAnnotations: []string{"note"}}
			return r
		}(),
		want: &UpdateSpec{Revision: "rev-2",
			Metadata: &MetadataChange{RemoveLabels: []string{"version"}, RemoveAnnotations: []string{"note"}}},
	}, {
		// Edited by hand to the new value before the template changed: the container still runs
		// with the old one, so the key stays an env-from-metadata change (OpenKruise derives them
		// from the template diff, not from the live Pod). A key no container reads is left out.
		name: "a label a container reads that the pod already has (hand edit) stays an env change",
		req:  withMetadata(request("rev-2"), map[string]string{"version": "1", "app": "web"}, nil),
		want: &UpdateSpec{Revision: "rev-2",
			ContainerRefMetadata:  map[string]metav1.ObjectMeta{"app": {Labels: map[string]string{"version": "1"}}},
			UpdateEnvFromMetadata: true},
	}, {
		name: "an annotation a container reads that the pod already has stays an env change",
		req: withMetadata(request("rev-2", apps.InPlaceUpdateContainer{Name: "sidecar", Image: "sidecar:v2"}),
			nil, map[string]string{"note": "x"}),
		pod: func(p *corev1.Pod) {
			p.Spec.Containers[1].Env = append(p.Spec.Containers[1].Env, corev1.EnvVar{Name: "NOTE", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['note']"}}})
		},
		want: &UpdateSpec{Revision: "rev-2", ContainerImages: map[string]string{"sidecar": "sidecar:v2"},
			ContainerRefMetadata: map[string]metav1.ObjectMeta{"sidecar": {Annotations: map[string]string{"note": "x"}}}},
	}, {
		name: "a label a container reads that the pod already has, repeated for the pod's own revision: left out",
		req:  withMetadata(request("rev-1"), map[string]string{"version": "1"}, nil),
		pod: func(p *corev1.Pod) {
			p.Annotations[pub.InPlaceUpdateStateKey] = `{"revision":"rev-1","updateTimestamp":"2026-03-04T05:06:07Z","completedTimestamp":"2026-03-04T05:06:09Z"}`
		},
		want: &UpdateSpec{Revision: "rev-1"},
	}, {
		name: "only the revision changes",
		req:  request("rev-2", apps.InPlaceUpdateContainer{Name: "app", Image: "app:v1"}),
		want: &UpdateSpec{Revision: "rev-2"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := requestPod()
			if tc.pod != nil {
				tc.pod(pod)
			}
			before := pod.DeepCopy()
			got, err := SpecFromRequest(pod, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tc.want.String() {
				t.Fatalf("spec\n got %s\nwant %s", got, tc.want)
			}
			if !semEq(pod, before) {
				t.Fatal("SpecFromRequest modified the pod")
			}
		})
	}
}

// A request builds the spec CalculateSpec builds for the same change of template.
func TestSpecFromRequestMatchesCalculateSpec(t *testing.T) {
	pod := requestPod()
	oldT := &corev1.PodTemplateSpec{ObjectMeta: *pod.ObjectMeta.DeepCopy(), Spec: *pod.Spec.DeepCopy()}
	newT := oldT.DeepCopy()
	newT.Spec.Containers[1].Image = "sidecar:v2"
	newT.Spec.Containers[0].Resources = resources("cpu=150m,memory=64Mi", "cpu=300m,memory=128Mi")
	newT.Labels["version"] = "2"
	newT.Labels["tier"] = "gold"
	fromTemplates, err := CalculateSpec(oldT, newT, "rev-2")
	if err != nil {
		t.Fatal(err)
	}
	fromRequest, err := SpecFromRequest(pod, withMetadata(request("rev-2",
		apps.InPlaceUpdateContainer{Name: "sidecar", Image: "sidecar:v2"},
		apps.InPlaceUpdateContainer{Name: "app", Resources: resizeTo("cpu=150m", "cpu=300m")}),
		map[string]string{"version": "2", "tier": "gold"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if fromTemplates.String() != fromRequest.String() {
		t.Fatalf("\ntemplates %s\nrequest   %s", fromTemplates, fromRequest)
	}
}

func TestSpecFromRequestInvalid(t *testing.T) {
	type fieldErr struct {
		typ  field.ErrorType
		path string
	}
	guaranteed := runningPod(ctr("app", "app:v1", res("cpu=1,memory=1Gi", "cpu=1,memory=1Gi")))
	cases := []struct {
		name  string
		req   *apps.InPlaceUpdate
		want  []fieldErr
		words string
		pod   *corev1.Pod
	}{
		{"resize changing the QoS class", request("r", apps.InPlaceUpdateContainer{Name: "app", Resources: resizeTo("", "cpu=2")}),
			[]fieldErr{{field.ErrorTypeForbidden, "spec.containers[0].resources"}}, "QoS class from Guaranteed to Burstable", guaranteed},
		{"unknown container", request("r", apps.InPlaceUpdateContainer{Name: "nope", Image: "x:1"}),
			[]fieldErr{{field.ErrorTypeNotFound, "spec.containers[0].name"}}, "", nil},
		{"image of an init container", request("r", apps.InPlaceUpdateContainer{Name: "sidecar", Image: "s:2"}, apps.InPlaceUpdateContainer{Name: "init", Image: "init:v2"}),
			[]fieldErr{{field.ErrorTypeForbidden, "spec.containers[1].image"}}, "init containers cannot be updated in place", nil},
		{"resize of a resource other than cpu and memory", request("r", apps.InPlaceUpdateContainer{Name: "app", Resources: resizeTo("ephemeral-storage=1Gi", "")}),
			[]fieldErr{{field.ErrorTypeNotSupported, "spec.containers[0].resources.requests[ephemeral-storage]"}}, "", nil},
		{"revision label through metadata", withMetadata(request("r"), map[string]string{RevisionLabelKey: "x"}, nil),
			[]fieldErr{{field.ErrorTypeForbidden, "spec.metadata.labels[controller-revision-hash]"}}, "spec.revision", nil},
		{"state annotation through metadata", withMetadata(request("r"), nil, map[string]string{pub.InPlaceUpdateStateKey: "{}"}),
			[]fieldErr{{field.ErrorTypeForbidden, "spec.metadata.annotations[apps.kruise.io/inplace-update-state]"}}, "", nil},
		{"revision label removed", func() *apps.InPlaceUpdate {
			r := request("r")
			r.Spec.Metadata = &apps.InPlaceUpdateMetadata{RemoveLabels: []string{"app", RevisionLabelKey}}
			return r
		}(), []fieldErr{{field.ErrorTypeForbidden, "spec.metadata.removeLabels[1]"}}, "cannot be removed", nil},
		{"state annotation removed", func() *apps.InPlaceUpdate {
			r := request("r")
			r.Spec.Metadata = &apps.InPlaceUpdateMetadata{RemoveAnnotations: []string{pub.InPlaceUpdateStateKey}}
			return r
		}(), []fieldErr{{field.ErrorTypeForbidden, "spec.metadata.removeAnnotations[0]"}}, "written by inplace", nil},
		{"nothing to change", withMetadata(request("", apps.InPlaceUpdateContainer{Name: "app", Image: "app:v1"}), map[string]string{"app": "web"}, nil),
			[]fieldErr{{field.ErrorTypeInvalid, "spec"}}, "changes nothing", nil},
		{"nothing to change, revision the pod already has", request("rev-1", apps.InPlaceUpdateContainer{Name: "app", Image: "app:v1"}),
			[]fieldErr{{field.ErrorTypeInvalid, "spec"}}, "changes nothing", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := requestPod()
			if tc.pod != nil {
				pod = tc.pod
			}
			spec, err := SpecFromRequest(pod, tc.req)
			var invalid *InvalidRequestError
			if !errors.As(err, &invalid) {
				t.Fatalf("want *InvalidRequestError, got %v (spec %v)", err, spec)
			}
			if len(invalid.Errs) != len(tc.want) {
				t.Fatalf("errors %v", invalid.Errs)
			}
			for i, w := range tc.want {
				if e := invalid.Errs[i]; e.Type != w.typ || e.Field != w.path {
					t.Errorf("error %d: %s %s, want %s %s", i, e.Type, e.Field, w.typ, w.path)
				}
			}
			if !strings.Contains(err.Error(), tc.words) {
				t.Errorf("%q does not say %q", err, tc.words)
			}
		})
	}
}

func TestSpecFromRequestPodState(t *testing.T) {
	req := request("rev-2", apps.InPlaceUpdateContainer{Name: "sidecar", Image: "sidecar:v2"})
	cases := []struct {
		name  string
		pod   func() *corev1.Pod
		words string
	}{
		{"being deleted", func() *corev1.Pod {
			p := requestPod()
			p.DeletionTimestamp = &metav1.Time{Time: t0}
			return p
		}, "being deleted"},
		{"not scheduled", func() *corev1.Pod {
			p := requestPod()
			p.Spec.NodeName = ""
			p.Status.Phase = corev1.PodPending
			return p
		}, "not scheduled"},
		{"terminated", func() *corev1.Pod {
			p := requestPod()
			p.Status.Phase = corev1.PodSucceeded
			return p
		}, "terminated"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := SpecFromRequest(tc.pod(), req)
			if !errors.Is(err, ErrPodNotUpdatable) || !strings.Contains(err.Error(), tc.words) {
				t.Fatalf("got %v", err)
			}
		})
	}
	// Scheduled but still Pending (e.g. a wrong image that cannot be pulled) may be fixed in place.
	pending := requestPod()
	pending.Status.Phase = corev1.PodPending
	if _, err := SpecFromRequest(pending, req); err != nil {
		t.Fatalf("pending, scheduled pod: %v", err)
	}
}

func TestSpecFromRequestWhileInProgress(t *testing.T) {
	sidecarV2 := request("rev-2", apps.InPlaceUpdateContainer{Name: "sidecar", Image: "sidecar:v2"})
	begun := func(t *testing.T, req *apps.InPlaceUpdate) *corev1.Pod {
		pod := requestPod()
		spec, err := SpecFromRequest(pod, req)
		if err != nil {
			t.Fatal(err)
		}
		step, err := Begin(pod, spec, t0)
		if err != nil {
			t.Fatal(err)
		}
		return write(t, pod, step)
	}
	repeatIsUnchanged := func(t *testing.T, pod *corev1.Pod, req *apps.InPlaceUpdate) {
		t.Helper()
		spec, err := SpecFromRequest(pod, req)
		if err != nil {
			t.Fatalf("repeat refused: %v", err)
		}
		step, err := Begin(pod, spec, t0.Add(time.Minute))
		if err != nil || step.Pod != nil || len(step.Conditions) != 0 || step.State == nil || step.State.Revision != req.Spec.Revision {
			t.Fatalf("repeat must change nothing: %v %+v", err, step)
		}
	}

	t.Run("the same request again is idempotent", func(t *testing.T) {
		repeatIsUnchanged(t, begun(t, sidecarV2), sidecarV2)
	})
	t.Run("the same request again during its grace period", func(t *testing.T) {
		req := request("rev-2", apps.InPlaceUpdateContainer{Name: "sidecar", Image: "sidecar:v2"},
			apps.InPlaceUpdateContainer{Name: "app", Resources: resizeTo("cpu=150m", "")})
		req = withMetadata(req, map[string]string{"version": "2", "tier": "gold"}, nil)
		req.Spec.GracePeriodSeconds = 30
		repeatIsUnchanged(t, begun(t, req), req)
	})
	t.Run("the same request again while a later batch waits", func(t *testing.T) {
		pod := requestPod()
		pod.Spec.Containers[1].Env = append(pod.Spec.Containers[1].Env, corev1.EnvVar{Name: pub.ContainerLaunchPriorityEnvName, Value: "10"})
		req := request("rev-2", apps.InPlaceUpdateContainer{Name: "sidecar", Image: "sidecar:v2"}, apps.InPlaceUpdateContainer{Name: "app", Image: "app:v2"})
		spec, _ := SpecFromRequest(pod, req)
		step, _ := Begin(pod, spec, t0)
		pod = write(t, pod, step)
		if mustState(t, pod).NextContainerImages["app"] != "app:v2" {
			t.Fatal("app must wait for the next batch")
		}
		repeatIsUnchanged(t, pod, req)
	})
	t.Run("the same request again after it completed", func(t *testing.T) {
		pod := begun(t, sidecarV2)
		kubeletRestart(pod, "sidecar")
		step, _ := Progress(pod, t0.Add(time.Second))
		pod = write(t, pod, step)
		if !IsCompleted(pod) {
			t.Fatal("not completed")
		}
		repeatIsUnchanged(t, pod, sidecarV2)
	})
	t.Run("a different revision while in progress supersedes it", func(t *testing.T) {
		pod := begun(t, sidecarV2)
		spec, err := SpecFromRequest(pod, request("rev-3", apps.InPlaceUpdateContainer{Name: "sidecar", Image: "sidecar:v3"}))
		if err != nil || spec.Revision != "rev-3" || spec.ContainerImages["sidecar"] != "sidecar:v3" {
			t.Fatalf("got %v, %+v", err, spec)
		}
		step, err := Begin(pod, spec, t0.Add(time.Minute))
		if err != nil || step.State == nil || step.State.Revision != "rev-3" || !step.State.UpdateTimestamp.Equal(&metav1.Time{Time: t0.Add(time.Minute)}) {
			t.Fatalf("Begin: %v %+v: want a fresh state of rev-3", err, step)
		}
	})
	t.Run("an unnamed revision while in progress: conflict", func(t *testing.T) {
		_, err := SpecFromRequest(begun(t, sidecarV2), request("", apps.InPlaceUpdateContainer{Name: "sidecar", Image: "sidecar:v3"}))
		var inProgress *InProgressError
		if !errors.Is(err, ErrInProgress) || !errors.As(err, &inProgress) || inProgress.Revision != "rev-2" {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("a different revision during a grace period: conflict", func(t *testing.T) {
		req := request("rev-2", apps.InPlaceUpdateContainer{Name: "sidecar", Image: "sidecar:v2"})
		req.Spec.GracePeriodSeconds = 30
		_, err := SpecFromRequest(begun(t, req), request("rev-3", apps.InPlaceUpdateContainer{Name: "sidecar", Image: "sidecar:v3"}))
		var inProgress *InProgressError
		if !errors.Is(err, ErrInProgress) || !errors.As(err, &inProgress) || inProgress.Revision != "rev-2" || inProgress.Requested != "rev-3" {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("the same revision with other changes while in progress: conflict", func(t *testing.T) {
		_, err := SpecFromRequest(begun(t, sidecarV2), request("rev-2", apps.InPlaceUpdateContainer{Name: "app", Image: "app:v9"}))
		if !errors.Is(err, ErrInProgress) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("a different revision after completion", func(t *testing.T) {
		pod := begun(t, sidecarV2)
		kubeletRestart(pod, "sidecar")
		step, _ := Progress(pod, t0.Add(time.Second))
		pod = write(t, pod, step)
		spec, err := SpecFromRequest(pod, request("rev-3", apps.InPlaceUpdateContainer{Name: "sidecar", Image: "sidecar:v3"}))
		if err != nil || spec.ContainerImages["sidecar"] != "sidecar:v3" {
			t.Fatalf("%v %v", err, spec)
		}
	})
}

// Completion labels pass through to the spec; the revision label is not one of them.
func TestSpecFromRequestCompletionLabels(t *testing.T) {
	req := request("rev-2", apps.InPlaceUpdateContainer{Name: "sidecar", Image: "sidecar:v2"})
	req.Spec.CompletionLabels = map[string]string{pub.LifecycleStateKey: string(pub.LifecycleStateNormal)}
	spec, err := SpecFromRequest(requestPod(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !semEq(spec.CompletionLabels, req.Spec.CompletionLabels) {
		t.Errorf("completion labels %v, want %v", spec.CompletionLabels, req.Spec.CompletionLabels)
	}
	req.Spec.CompletionLabels = map[string]string{RevisionLabelKey: "rev-3"}
	_, err = SpecFromRequest(requestPod(), req)
	var invalid *InvalidRequestError
	if !errors.As(err, &invalid) || len(invalid.Errs) != 1 || invalid.Errs[0].Field != "spec.completionLabels[controller-revision-hash]" {
		t.Errorf("revision label among completion labels: %v, want spec.completionLabels[controller-revision-hash] forbidden", err)
	}
}
