package integration

import (
	"bytes"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/test/integration/framework"
)

// crrGraceAt is the PreRecreateGrace condition as OpenKruise's controller writes it.
func crrGraceAt(at time.Time) metav1.Condition {
	return metav1.Condition{Type: appsv1beta1.ContainerRecreateRequestPreRecreateGraceType, Status: metav1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(at), Reason: "PreRecreateGrace",
		Message: "Pod has been forced to not-ready for unreadyGracePeriodSeconds drain"}
}

func newCRRV1beta1(name string) *appsv1beta1.ContainerRecreateRequest {
	return &appsv1beta1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1beta1.ContainerRecreateRequestSpec{
			PodName: name + "-pod",
			Containers: []appsv1beta1.ContainerRecreateRequestContainer{{Name: "main",
				PreStop: &appsv1beta1.CRRProbeHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "sleep 1"}}}}},
			Strategy: &appsv1beta1.ContainerRecreateRequestStrategy{UnreadyGracePeriodSeconds: ptr.To[int64](3)},
		},
	}
}

// TestContainerRecreateRequestVersions: a ContainerRecreateRequest is one object served at
// v1beta1 (OpenKruise's master) and v1alpha1, stored at v1alpha1. v1beta1's
// status.containerStatusSnapshot and PreRecreateGrace condition are v1alpha1's annotations
// crr.apps.kruise.io/sync-container-statuses and crr.apps.kruise.io/unready-acquired, what the
// annotation cannot hold (another condition, here) rides in inplace.dev/v1beta1-fields, and a
// read-modify-write through v1alpha1 loses nothing.
func TestContainerRecreateRequestVersions(t *testing.T) {
	s, ctx := parallelServer(t)
	alpha, beta := s.Client.AppsV1alpha1().ContainerRecreateRequests("default"), s.Client.AppsV1beta1().ContainerRecreateRequests("default")
	created, err := beta.Create(ctx, newCRRV1beta1("restart"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a v1beta1 ContainerRecreateRequest: %v", err)
	}
	if created.Spec.Strategy.FailurePolicy != appsv1beta1.ContainerRecreateRequestFailurePolicyFail {
		t.Errorf("v1beta1 defaults: strategy %+v, want failurePolicy Fail", created.Spec.Strategy)
	}
	at := time.Date(2026, 11, 27, 10, 0, 5, 0, time.UTC)
	custom := metav1.Condition{Type: "Custom", Status: metav1.ConditionFalse, LastTransitionTime: metav1.NewTime(at), Reason: "Because", Message: "kept"}
	created.Status = appsv1beta1.ContainerRecreateRequestStatus{
		Phase: appsv1beta1.ContainerRecreateRequestRecreating,
		ContainerStatusSnapshot: []appsv1beta1.ContainerRecreateRequestSyncContainerStatus{
			{Name: "main", Ready: true, RestartCount: 1, ContainerID: "containerd://new"}},
		Conditions: []metav1.Condition{crrGraceAt(at), custom},
	}
	if _, err := beta.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("v1beta1 status update: %v", err)
	}

	a, err := alpha.Get(ctx, "restart", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading it at v1alpha1: %v", err)
	}
	if got, want := a.Annotations[appsv1alpha1.ContainerRecreateRequestSyncContainerStatusesKey],
		`[{"name":"main","ready":true,"restartCount":1,"containerID":"containerd://new"}]`; got != want {
		t.Errorf("v1alpha1 sync-container-statuses %q, want %q", got, want)
	}
	if got := a.Annotations[appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey]; got != "2026-11-27T10:00:05Z" {
		t.Errorf("v1alpha1 unready-acquired %q, want the condition's time", got)
	}
	if a.Annotations[appsv1alpha1.StatefulSetV1beta1FieldsAnnotation] == "" {
		t.Errorf("v1alpha1 annotations %v: the Custom condition is not carried", a.Annotations)
	}
	if p := a.Spec.Containers[0].PreStop; p == nil || p.Exec == nil || len(p.Exec.Command) != 3 {
		t.Errorf("v1alpha1 preStop %+v, want the exec handler", p)
	}
	a.Labels = map[string]string{"changed": "at-v1alpha1"}
	if _, err := alpha.Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating it at v1alpha1: %v", err)
	}

	b, err := beta.Get(ctx, "restart", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Labels["changed"] != "at-v1alpha1" || len(b.Annotations) != 0 {
		t.Errorf("after a v1alpha1 update, v1beta1 metadata: labels %v annotations %v; want the new label and no annotation", b.Labels, b.Annotations)
	}
	if !equality.Semantic.DeepEqual(b.Status, created.Status) {
		t.Errorf("after a v1alpha1 update, v1beta1 status:\n got %+v\nwant %+v", b.Status, created.Status)
	}
	if !equality.Semantic.DeepEqual(b.Spec, created.Spec) {
		t.Errorf("after a v1alpha1 update, v1beta1 spec:\n got %+v\nwant %+v", b.Spec, created.Spec)
	}
	if v := etcdValue(t, s, "/registry/apps.kruise.io/containerrecreaterequests/default/restart"); !bytes.Contains(v, []byte("apps.kruise.io/v1alpha1")) {
		t.Errorf("stored as %q..., want apps.kruise.io/v1alpha1", v[:min(len(v), 60)])
	}

	// Written at v1alpha1 by the controller (the annotations), read at v1beta1 as status.
	old := newCRR("old")
	old.Annotations = map[string]string{
		appsv1alpha1.ContainerRecreateRequestSyncContainerStatusesKey: `[{"name":"main","ready":false,"restartCount":2,"containerID":"containerd://c2"}]`,
		appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey:       "2026-11-27T11:00:00Z",
	}
	if _, err := alpha.Create(ctx, old, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a v1alpha1 ContainerRecreateRequest: %v", err)
	}
	b, err = beta.Get(ctx, "old", metav1.GetOptions{})
	wantSnapshot := []appsv1beta1.ContainerRecreateRequestSyncContainerStatus{{Name: "main", RestartCount: 2, ContainerID: "containerd://c2"}}
	wantConditions := []metav1.Condition{crrGraceAt(time.Date(2026, 11, 27, 11, 0, 0, 0, time.UTC))}
	if err != nil || len(b.Annotations) != 0 || !equality.Semantic.DeepEqual(b.Status.ContainerStatusSnapshot, wantSnapshot) ||
		!equality.Semantic.DeepEqual(b.Status.Conditions, wantConditions) {
		t.Errorf("read at v1beta1: annotations %v status %+v (%v); want no annotation, snapshot %+v, conditions %+v",
			b.Annotations, b.Status, err, wantSnapshot, wantConditions)
	}

	// Validation answers in v1beta1's field paths (the same as v1alpha1's for the spec).
	bad := newCRRV1beta1("bad")
	bad.Spec.Containers[0].PreStop.TCPSocket = &corev1.TCPSocketAction{}
	_, err = beta.Create(ctx, bad, metav1.CreateOptions{})
	expectInvalid(t, err, "spec.containers[0].preStop")
}

// TestProtobufContainerRecreateRequestV1beta1: a v1beta1 ContainerRecreateRequest with the
// status v1beta1 alone has (snapshot, conditions) reads the same over protobuf as over JSON.
func TestProtobufContainerRecreateRequestV1beta1(t *testing.T) {
	s, ctx := parallelServer(t)
	beta := s.ProtobufClient.AppsV1beta1().ContainerRecreateRequests("default")
	created, err := beta.Create(ctx, newCRRV1beta1("restart"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create over protobuf: %v", err)
	}
	created.Status = appsv1beta1.ContainerRecreateRequestStatus{Phase: appsv1beta1.ContainerRecreateRequestRecreating,
		ContainerStatusSnapshot: []appsv1beta1.ContainerRecreateRequestSyncContainerStatus{{Name: "main", Ready: true, RestartCount: 1, ContainerID: "containerd://new"}},
		Conditions:              []metav1.Condition{crrGraceAt(time.Date(2026, 11, 27, 10, 0, 5, 0, time.UTC))}}
	written, err := beta.UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("status update over protobuf: %v", err)
	}
	if !equality.Semantic.DeepEqual(written.Status, created.Status) {
		t.Errorf("status over protobuf:\n got %+v\nwant %+v", written.Status, created.Status)
	}
	const prefix = "/apis/apps.kruise.io/v1beta1/"
	for path, obj := range map[string]func() runtime.Object{
		prefix + "namespaces/default/containerrecreaterequests/restart": func() runtime.Object { return &appsv1beta1.ContainerRecreateRequest{} },
		prefix + "containerrecreaterequests":                            func() runtime.Object { return &appsv1beta1.ContainerRecreateRequestList{} },
	} {
		expectProtobufMatchesJSON(t, s, path, obj)
	}
}

// TestApplyContainerRecreateRequestV1beta1ThenV1alpha1: `kubectl apply --server-side` of a v1beta1
// ContainerRecreateRequest and then of the same request as a v1alpha1 manifest (a new label: the
// spec cannot change) succeeds, and v1beta1 reads the label with the spec kept.
func TestApplyContainerRecreateRequestV1beta1ThenV1alpha1(t *testing.T) {
	t.Parallel()
	s := framework.StartServer(t)
	k := newKubectl(t, kubectlBinary(t), s)
	k.mustRun("apply", "--server-side", "-f", k.writeFile("beta.yaml", `apiVersion: apps.kruise.io/v1beta1
kind: ContainerRecreateRequest
metadata: {name: restart, namespace: default}
spec:
  podName: web
  containers: [{name: main, preStop: {exec: {command: [sh, -c, "sleep 1"]}}}]
  strategy: {unreadyGracePeriodSeconds: 3}
`))
	k.mustRun("apply", "--server-side", "-f", k.writeFile("alpha.yaml", `apiVersion: apps.kruise.io/v1alpha1
kind: ContainerRecreateRequest
metadata: {name: restart, namespace: default, labels: {applied: at-v1alpha1}}
spec:
  podName: web
  containers: [{name: main, preStop: {exec: {command: [sh, -c, "sleep 1"]}}}]
  strategy: {unreadyGracePeriodSeconds: 3}
`))
	got := k.mustRun("get", "containerrecreaterequests.v1beta1.apps.kruise.io", "restart", "-n", "default", "-o",
		"jsonpath={.apiVersion} {.metadata.labels.applied} {.spec.containers[0].preStop.exec.command[2]} {.spec.strategy.unreadyGracePeriodSeconds}")
	if want := "apps.kruise.io/v1beta1 at-v1alpha1 sleep 1 3"; got != want {
		t.Errorf("after a v1beta1 and a v1alpha1 server-side apply: %q, want %q", got, want)
	}
}
