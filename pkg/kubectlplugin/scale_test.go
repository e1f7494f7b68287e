package kubectlplugin

import (
	"context"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

func TestScale(t *testing.T) {
	cs := cloneSet("s", func(c *v1alpha1.CloneSet) { c.Spec.ScaleStrategy.PodsToDelete = []string{"s-old"} })
	if !Scale(cs, 2, []string{"s-x", "s-old"}) || *cs.Spec.Replicas != 2 || !reflect.DeepEqual(cs.Spec.ScaleStrategy.PodsToDelete, []string{"s-old", "s-x"}) {
		t.Fatalf("Scale: %d %v", *cs.Spec.Replicas, cs.Spec.ScaleStrategy.PodsToDelete)
	}
	if Scale(cs, 2, []string{"s-x"}) || Scale(cs, -1, nil) {
		t.Errorf("no change reported as a change")
	}
}

func TestScaleCommand(t *testing.T) {
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-1", Namespace: "default"}}
	f, kruise, kube := newFakeFactory([]runtime.Object{cloneSet("s"), statefulSet("db"), daemonSet("agent")}, pod)
	out, _, err := run(t, f, "scale", "clone/s", "--replicas", "2", "--pods", "s-a,s-b")
	if err != nil || out != "cloneset.apps.kruise.io/s scaled\n" {
		t.Fatalf("scale: %q %v", out, err)
	}
	cs, _ := kruise.AppsV1alpha1().CloneSets("default").Get(ctx, "s", metav1.GetOptions{})
	if *cs.Spec.Replicas != 2 || !reflect.DeepEqual(cs.Spec.ScaleStrategy.PodsToDelete, []string{"s-a", "s-b"}) {
		t.Fatalf("after scale: %d %v", *cs.Spec.Replicas, cs.Spec.ScaleStrategy.PodsToDelete)
	}
	if _, _, err := run(t, f, "scale", "clone/s", "--replicas", "5", "--current-replicas", "3"); err == nil || err.Error() != "expected replicas to be 3, was 2" {
		t.Fatalf("--current-replicas: %v", err)
	}
	out, _, err = run(t, f, "scale", "asts/db", "--replicas", "4", "--pods", "db-1")
	if err != nil || out != "pod/db-1 labeled apps.kruise.io/specified-delete=true\nstatefulset.apps.kruise.io/db scaled\n" {
		t.Fatalf("scale asts: %q %v", out, err)
	}
	p, _ := kube.CoreV1().Pods("default").Get(ctx, "db-1", metav1.GetOptions{})
	sts, _ := kruise.AppsV1beta1().StatefulSets("default").Get(ctx, "db", metav1.GetOptions{})
	if p.Labels[v1alpha1.SpecifiedDeleteKey] != "true" || *sts.Spec.Replicas != 4 {
		t.Fatalf("asts: pod labels %v, replicas %d", p.Labels, *sts.Spec.Replicas)
	}
	for _, args := range [][]string{{"scale", "ads/agent", "--replicas", "1"}, {"scale", "clone/s"}, {"scale", "clone/s", "--replicas", "-3"}} {
		if _, _, err := run(t, f, args...); err == nil {
			t.Errorf("%v: no error", args)
		} else if args[1] == "ads/agent" && !strings.Contains(err.Error(), "has no replicas") {
			t.Errorf("%v: %v", args, err)
		}
	}
}
