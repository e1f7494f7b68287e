package integration

import (
	"bytes"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/test/integration/framework"
)

// TestDaemonSetVersions: the Advanced DaemonSet is one object served at v1beta1 (stored there, as
// in OpenKruise v1.9) and v1alpha1. v1beta1's spec.scaleStrategy.partitionedScaling is v1alpha1's
// annotation daemonset.kruise.io/progressive-create-pod and status.updateRevision is
// status.daemonSetHash, as OpenKruise converts them; a read-modify-write through the other
// version loses neither.
func TestDaemonSetVersions(t *testing.T) {
	s, ctx := parallelServer(t)
	alpha, beta := s.Client.AppsV1alpha1().DaemonSets("default"), s.Client.AppsV1beta1().DaemonSets("default")
	labels := map[string]string{"app": "agent"}
	ds := &appsv1beta1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: appsv1beta1.DaemonSetSpec{
			Selector:      &metav1.LabelSelector{MatchLabels: labels},
			Template:      podTemplate(labels),
			ScaleStrategy: &appsv1beta1.DaemonSetScaleStrategy{PartitionedScaling: true},
		},
	}
	created, err := beta.Create(ctx, ds, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a v1beta1 DaemonSet: %v", err)
	}
	if ru := created.Spec.UpdateStrategy.RollingUpdate; ru == nil || ru.Type != appsv1beta1.StandardRollingUpdateType || ru.MaxUnavailable.IntValue() != 1 ||
		created.Spec.BurstReplicas.IntValue() != 250 || len(created.Annotations) != 0 {
		t.Errorf("v1beta1 defaults: %+v annotations %v; want RollingUpdate/Standard, maxUnavailable 1, burstReplicas 250, no annotation", created.Spec, created.Annotations)
	}
	a, err := alpha.Get(ctx, "agent", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading it at v1alpha1: %v", err)
	}
	if a.Annotations[appsv1beta1.ProgressiveCreatePodAnnotation] != "true" {
		t.Errorf("v1alpha1 annotations %v, want %s=true", a.Annotations, appsv1beta1.ProgressiveCreatePodAnnotation)
	}
	a.Spec.MinReadySeconds = 5
	if _, err := alpha.Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating it at v1alpha1: %v", err)
	}
	b, err := beta.Get(ctx, "agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Spec.MinReadySeconds != 5 || b.Spec.ScaleStrategy == nil || !b.Spec.ScaleStrategy.PartitionedScaling || len(b.Annotations) != 0 {
		t.Errorf("after a v1alpha1 update, v1beta1 reads %+v annotations %v; want minReadySeconds 5 and partitionedScaling kept", b.Spec, b.Annotations)
	}
	b.Status.UpdateRevision = "agent-abc"
	b.Status.DesiredNumberScheduled = 2
	if _, err := beta.UpdateStatus(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("v1beta1 status update: %v", err)
	}
	if a, err = alpha.Get(ctx, "agent", metav1.GetOptions{}); err != nil || a.Status.DaemonSetHash != "agent-abc" || a.Status.DesiredNumberScheduled != 2 {
		t.Errorf("after a v1beta1 status update, v1alpha1 reads %+v (%v); want daemonSetHash agent-abc", a.Status, err)
	}

	// Written at v1alpha1 (the deprecated Surging), read at v1beta1 without a scaleStrategy.
	if _, err := alpha.Create(ctx, newSurgingDaemonSet("old"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a v1alpha1 DaemonSet: %v", err)
	}
	if b, err = beta.Get(ctx, "old", metav1.GetOptions{}); err != nil || b.Spec.ScaleStrategy != nil ||
		b.Spec.UpdateStrategy.RollingUpdate.Type != appsv1beta1.StandardRollingUpdateType || b.Spec.UpdateStrategy.RollingUpdate.MaxSurge.IntValue() != 1 {
		t.Errorf("read at v1beta1: %+v (%v); want no scaleStrategy and Surging defaulted to Standard with maxSurge 1", b, err)
	}
	for _, name := range []string{"agent", "old"} {
		if v := etcdValue(t, s, "/registry/apps.kruise.io/daemonsets/default/"+name); !bytes.Contains(v, []byte("apps.kruise.io/v1beta1")) {
			t.Errorf("%s stored as %q..., want apps.kruise.io/v1beta1", name, v[:min(len(v), 60)])
		}
	}
}

// TestApplyV1beta1ThenV1alpha1: for each kind this change serves at v1beta1, `kubectl apply
// --server-side` of a v1beta1 manifest and then of the same object as a v1alpha1 manifest (a
// changed field) succeeds, and v1beta1 reads the change with the v1beta1-only field kept.
func TestApplyV1beta1ThenV1alpha1(t *testing.T) {
	t.Parallel()
	s := framework.StartServer(t)
	k := newKubectl(t, kubectlBinary(t), s)
	for _, c := range []struct {
		resource, beta, alpha, jsonpath, want string
	}{{
		resource: "daemonsets.v1beta1.apps.kruise.io",
		beta: `apiVersion: apps.kruise.io/v1beta1
kind: DaemonSet
metadata: {name: agent, namespace: default}
spec:
  selector: {matchLabels: {app: agent}}
  scaleStrategy: {partitionedScaling: true}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: main, image: "inplace.local/app:v1"}]}
`,
		alpha: `apiVersion: apps.kruise.io/v1alpha1
kind: DaemonSet
metadata:
  name: agent
  namespace: default
  annotations: {daemonset.kruise.io/progressive-create-pod: "true"}
spec:
  selector: {matchLabels: {app: agent}}
  minReadySeconds: 7
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: main, image: "inplace.local/app:v1"}]}
`,
		jsonpath: "{.spec.minReadySeconds} {.spec.scaleStrategy.partitionedScaling}", want: "7 true",
	}, {
		resource: "imagepulljobs.v1beta1.apps.kruise.io",
		beta: `apiVersion: apps.kruise.io/v1beta1
kind: ImagePullJob
metadata: {name: pull, namespace: default}
spec:
  image: inplace.local/app:v2
  selector: {names: [node-1]}
  completionPolicy: {type: Always}
`,
		alpha: `apiVersion: apps.kruise.io/v1alpha1
kind: ImagePullJob
metadata: {name: pull, namespace: default}
spec:
  image: inplace.local/app:v2
  selector: {names: [node-1]}
  parallelism: 3
  completionPolicy: {type: Always}
`,
		jsonpath: "{.apiVersion} {.spec.parallelism}", want: "apps.kruise.io/v1beta1 3",
	}, {
		resource: "imagelistpulljobs.v1beta1.apps.kruise.io",
		beta: `apiVersion: apps.kruise.io/v1beta1
kind: ImageListPullJob
metadata: {name: list, namespace: default}
spec:
  images: ["inplace.local/app:v2"]
  completionPolicy: {type: Always}
`,
		alpha: `apiVersion: apps.kruise.io/v1alpha1
kind: ImageListPullJob
metadata: {name: list, namespace: default}
spec:
  images: ["inplace.local/app:v2", "inplace.local/app:v3"]
  completionPolicy: {type: Always}
`,
		jsonpath: "{.spec.images}", want: `["inplace.local/app:v2","inplace.local/app:v3"]`,
	}, {
		resource: "nodeimages.v1beta1.apps.kruise.io",
		beta: `apiVersion: apps.kruise.io/v1beta1
kind: NodeImage
metadata: {name: node-1}
spec:
  images:
    inplace.local/app:
      pullSecrets: [{namespace: default, name: creds, mode: batch}]
      tags: [{tag: v2, pullPolicy: {ttlSecondsAfterFinished: 300}}]
`,
		alpha: `apiVersion: apps.kruise.io/v1alpha1
kind: NodeImage
metadata: {name: node-1}
spec:
  images:
    inplace.local/app:
      pullSecrets: [{namespace: default, name: creds}]
      tags: [{tag: v2, pullPolicy: {ttlSecondsAfterFinished: 600}}]
`,
		jsonpath: "{.spec.images.inplace\\.local/app.tags[0].pullPolicy.ttlSecondsAfterFinished} {.spec.images.inplace\\.local/app.pullSecrets[0].mode}",
		want:     "600 batch",
	}} {
		k.mustRun("apply", "--server-side", "-f", k.writeFile("beta.yaml", c.beta))
		k.mustRun("apply", "--server-side", "-f", k.writeFile("alpha.yaml", c.alpha))
		args := []string{"get", c.resource, "-o", "jsonpath=" + c.jsonpath}
		if !strings.HasPrefix(c.resource, "nodeimages") {
			args = append(args, "-n", "default")
		}
		name := map[string]string{"daemonsets": "agent", "imagepulljobs": "pull", "imagelistpulljobs": "list", "nodeimages": "node-1"}[strings.Split(c.resource, ".")[0]]
		args = append(args[:2], append([]string{name}, args[2:]...)...)
		if got := k.mustRun(args...); got != c.want {
			t.Errorf("%s after a v1beta1 and a v1alpha1 server-side apply: %q, want %q", c.resource, got, c.want)
		}
	}
}
