package kubectlplugin

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func TestRolloutPauseResume(t *testing.T) {
	ctx := context.Background()
	f, kruise, _ := newFakeFactory([]runtime.Object{cloneSet("s"), statefulSet("db"), daemonSet("agent")})
	paused := func(ref Ref) bool {
		w, err := workloads{client: kruise, namespace: "default"}.get(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		return w.Paused()
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"rollout", "pause", "clone/s"}, "cloneset.apps.kruise.io/s paused\n"},
		{[]string{"rollout", "pause", "clone/s"}, "cloneset.apps.kruise.io/s already paused\n"},
		{[]string{"rollout", "pause", "asts/db", "ads/agent"}, "statefulset.apps.kruise.io/db paused\ndaemonset.apps.kruise.io/agent paused\n"},
	} {
		if out, _, err := run(t, f, tc.args...); err != nil || out != tc.want {
			t.Fatalf("%v: %q, %v; want %q", tc.args, out, err, tc.want)
		}
	}
	for _, ref := range []Ref{{CloneSet, "s"}, {StatefulSet, "db"}, {DaemonSet, "agent"}} {
		if !paused(ref) {
			t.Errorf("%s not paused", ref)
		}
	}
	if _, _, err := run(t, f, "rollout", "restart", "clone/s"); err == nil || !strings.Contains(err.Error(), "can't restart paused cloneset.apps.kruise.io/s (run rollout resume first)") {
		t.Errorf("restart of a paused CloneSet: %v", err)
	}
	if out, _, err := run(t, f, "rollout", "resume", "clone/s", "asts/db", "ads/agent"); err != nil ||
		out != "cloneset.apps.kruise.io/s resumed\nstatefulset.apps.kruise.io/db resumed\ndaemonset.apps.kruise.io/agent resumed\n" {
		t.Fatalf("resume: %q, %v", out, err)
	}
	if out, _, err := run(t, f, "rollout", "resume", "clone/s"); err != nil || out != "cloneset.apps.kruise.io/s already resumed\n" {
		t.Fatalf("resume again: %q, %v", out, err)
	}
	for _, ref := range []Ref{{CloneSet, "s"}, {StatefulSet, "db"}, {DaemonSet, "agent"}} {
		if paused(ref) {
			t.Errorf("%s still paused", ref)
		}
	}
	if got := string(pausePatch(DaemonSet, true)); got != `{"spec":{"updateStrategy":{"rollingUpdate":{"paused":true}}}}` {
		t.Errorf("ads pause patch %s", got)
	}
	if got := string(pausePatch(CloneSet, false)); got != `{"spec":{"updateStrategy":{"paused":false}}}` {
		t.Errorf("clone resume patch %s", got)
	}
}

func TestRolloutRestart(t *testing.T) {
	ctx := context.Background()
	f, kruise, _ := newFakeFactory([]runtime.Object{cloneSet("s"), daemonSet("agent")})
	at := time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	o := &RestartOptions{PrintFlags: newPrintFlags("restarted"), now: func() time.Time { return at }, streams: streams}
	if err := o.Complete(f, []string{"clone/s", "ads/agent"}); err != nil {
		t.Fatal(err)
	}
	if err := o.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if out.String() != "cloneset.apps.kruise.io/s restarted\ndaemonset.apps.kruise.io/agent restarted\n" {
		t.Errorf("output %q", out)
	}
	cs, _ := kruise.AppsV1alpha1().CloneSets("default").Get(ctx, "s", metav1.GetOptions{})
	ds, _ := kruise.AppsV1alpha1().DaemonSets("default").Get(ctx, "agent", metav1.GetOptions{})
	for _, a := range []map[string]string{cs.Spec.Template.Annotations, ds.Spec.Template.Annotations} {
		if a[RestartedAtAnnotation] != "2026-05-04T03:02:01Z" {
			t.Errorf("template annotations %v", a)
		}
	}
	// The patch touches the template's annotations only: labels and containers stay.
	if cs.Spec.Template.Labels["app"] != "demo" || len(cs.Spec.Template.Spec.Containers) != 2 {
		t.Errorf("restart changed more than the annotation: %+v", cs.Spec.Template)
	}
}
