package kubectlplugin

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/pkg/workload/history"
)

func TestChooseRollbackRevision(t *testing.T) {
	cs := cloneSet("s")
	v1, v2, v3 := template("app:v1"), template("app:v2"), template("app:v3")
	revs := []*appsv1.ControllerRevision{revision(t, cs, "CloneSet", 1, v1), revision(t, cs, "CloneSet", 2, v2), revision(t, cs, "CloneSet", 3, v3)}
	for _, tc := range []struct {
		name       string
		current    corev1.PodTemplateSpec
		revisions  []*appsv1.ControllerRevision
		toRevision int64
		want       int64
		wantErr    string
	}{
		{name: "previous of the newest", current: v3, revisions: revs, want: 2},
		{name: "template at an older revision not renumbered yet: the newest", current: v1, revisions: revs, want: 3},
		{name: "template with no revision yet: the newest", current: template("app:v4"), revisions: revs, want: 3},
		{name: "to revision", current: v3, revisions: revs, toRevision: 1, want: 1},
		{name: "to the current revision (undo then skips)", current: v3, revisions: revs, toRevision: 3, want: 3},
		{name: "missing revision", current: v3, revisions: revs, toRevision: 7, wantErr: "unable to find specified revision 7 in history"},
		{name: "negative", current: v3, revisions: revs, toRevision: -1, wantErr: "--to-revision must be"},
		{name: "no history", current: v3, wantErr: "no rollout history found"},
		{name: "only the current revision", current: v1, revisions: revs[:1], wantErr: "no previous revision"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, tmpl, err := ChooseRollbackRevision(&tc.current, tc.revisions, tc.toRevision)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v; want error %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || r.Revision != tc.want {
				t.Fatalf("got %v, %v; want revision %d", r, err, tc.want)
			}
			if want := template(map[int64]string{1: "app:v1", 2: "app:v2", 3: "app:v3"}[tc.want]); tmpl.Spec.Containers[0].Image != want.Spec.Containers[0].Image {
				t.Errorf("template image %s, want %s", tmpl.Spec.Containers[0].Image, want.Spec.Containers[0].Image)
			}
		})
	}
}

func TestRolloutUndo(t *testing.T) {
	ctx := context.Background()
	cs := cloneSet("s", func(c *v1alpha1.CloneSet) { c.Spec.Template = template("app:v2") })
	other := cloneSet("other")
	sts := statefulSet("db", func(s *v1beta1.StatefulSet) { s.Spec.Template = template("app:v2") })
	f, kruise, _ := newFakeFactory([]runtime.Object{cs, other, sts},
		revision(t, cs, "CloneSet", 1, template("app:v1")), revision(t, cs, "CloneSet", 2, template("app:v2")),
		// Another CloneSet's revision, selected by the same labels: not in cs's history.
		revision(t, other, "CloneSet", 3, template("app:v1")),
		revision(t, sts, "StatefulSet", 1, template("app:v1")), revision(t, sts, "StatefulSet", 2, template("app:v2")))

	out, _, err := run(t, f, "rollout", "undo", "clone/s", "--dry-run=client")
	if err != nil || out != "cloneset.apps.kruise.io/s rolled back (dry run)\n" {
		t.Fatalf("undo --dry-run=client: %q, %v", out, err)
	}
	if got, _ := kruise.AppsV1alpha1().CloneSets("default").Get(ctx, "s", metav1.GetOptions{}); got.Spec.Template.Spec.Containers[0].Image != "app:v2" {
		t.Fatalf("a client dry run changed the CloneSet")
	}
	out, _, err = run(t, f, "rollout", "undo", "clone/s")
	if err != nil || out != "cloneset.apps.kruise.io/s rolled back\n" {
		t.Fatalf("undo: %q, %v", out, err)
	}
	got, _ := kruise.AppsV1alpha1().CloneSets("default").Get(ctx, "s", metav1.GetOptions{})
	if img := got.Spec.Template.Spec.Containers[0].Image; img != "app:v1" {
		t.Fatalf("after undo the image is %s, want app:v1 (revision 1)", img)
	}
	out, _, err = run(t, f, "rollout", "undo", "clone/s", "--to-revision", "1")
	if err != nil || out != "cloneset.apps.kruise.io/s skipped rollback (current template already matches revision 1)\n" {
		t.Fatalf("undo to the current revision: %q, %v", out, err)
	}
	out, _, err = run(t, f, "rollout", "undo", "asts/db", "--to-revision=1", "-o", "name")
	if err != nil || out != "statefulset.apps.kruise.io/db\n" {
		t.Fatalf("undo asts: %q, %v", out, err)
	}
	if got, _ := kruise.AppsV1beta1().StatefulSets("default").Get(ctx, "db", metav1.GetOptions{}); got.Spec.Template.Spec.Containers[0].Image != "app:v1" {
		t.Fatalf("asts not rolled back: %s", got.Spec.Template.Spec.Containers[0].Image)
	}
	if _, _, err := run(t, f, "rollout", "undo", "clone/other"); err == nil || !strings.Contains(err.Error(), "no previous revision") {
		t.Fatalf("undo with one revision: %v", err)
	}
}

func TestRolloutHistory(t *testing.T) {
	cs := cloneSet("s")
	r1, r2 := revision(t, cs, "CloneSet", 1, template("app:v1")), revision(t, cs, "CloneSet", 2, template("app:v2"))
	r2.Annotations = map[string]string{history.ChangeCauseAnnotation: "kubectl inplace set image clone/s main=app:v2"}
	f, _, _ := newFakeFactory([]runtime.Object{cs}, r2, r1, revision(t, cloneSet("other"), "CloneSet", 5, template("x")))
	out, _, err := run(t, f, "rollout", "history", "clone/s")
	want := "cloneset.apps.kruise.io/s\nREVISION  CHANGE-CAUSE\n1         <none>\n2         kubectl inplace set image clone/s main=app:v2\n\n"
	if err != nil || out != want {
		t.Fatalf("history:\n%q, %v\nwant:\n%q", out, err, want)
	}
	out, _, err = run(t, f, "rollout", "history", "clone/s", "--revision", "2")
	if err != nil || !strings.HasPrefix(out, "cloneset.apps.kruise.io/s with revision #2 (s-c)\nPod Template:\n") || !strings.Contains(out, "image: app:v2") {
		t.Fatalf("history --revision 2:\n%s %v", out, err)
	}
	out, _, err = run(t, f, "rollout", "history", "clone/s", "-o", "name")
	if err != nil || out != "controllerrevision.apps/s-b\ncontrollerrevision.apps/s-c\n" {
		t.Fatalf("history -o name: %q %v", out, err)
	}
	if _, _, err := run(t, f, "rollout", "history", "clone/s", "--revision", "9"); err == nil {
		t.Fatalf("a missing revision: no error")
	}
}
