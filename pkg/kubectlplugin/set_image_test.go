package kubectlplugin

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
)

func TestParseImageArgs(t *testing.T) {
	res, images, err := ParseImageArgs([]string{"clone/a", "asts/b", "main=app:v2", "*=app:v3"})
	if err != nil || len(res) != 2 || images["main"] != "app:v2" || images["*"] != "app:v3" {
		t.Fatalf("got %v %v %v", res, images, err)
	}
	for _, args := range [][]string{{"clone/a"}, {"main=app:v2", "clone/a"}, {"clone/a", "main="}, {"clone/a", "=img"}} {
		if _, _, err := ParseImageArgs(args); err == nil {
			t.Errorf("ParseImageArgs(%q): no error", args)
		}
	}
}

func TestSetImages(t *testing.T) {
	tmpl := template("app:v1")
	if changed, err := SetImages(&tmpl, map[string]string{"main": "app:v2"}); !changed || err != nil || tmpl.Spec.Containers[0].Image != "app:v2" || tmpl.Spec.Containers[1].Image != "side:v1" {
		t.Fatalf("main=app:v2: %v %v %+v", changed, err, tmpl.Spec.Containers)
	}
	if changed, err := SetImages(&tmpl, map[string]string{"main": "app:v2"}); changed || err != nil {
		t.Fatalf("the same image again: changed %v, %v", changed, err)
	}
	if _, err := SetImages(&tmpl, map[string]string{"nope": "x"}); err == nil || err.Error() != `unable to find container named "nope"` {
		t.Fatalf("an unknown container: %v", err)
	}
	if changed, err := SetImages(&tmpl, map[string]string{"*": "all:v9"}); !changed || err != nil {
		t.Fatalf("*: %v %v", changed, err)
	}
	for _, c := range append(tmpl.Spec.InitContainers, tmpl.Spec.Containers...) {
		if c.Image != "all:v9" {
			t.Errorf("* left %s at %s", c.Name, c.Image)
		}
	}
	if _, err := SetImages(&tmpl, map[string]string{"init": "busybox:2"}); err != nil || tmpl.Spec.InitContainers[0].Image != "busybox:2" {
		t.Errorf("an init container: %v", err)
	}
}

func TestSetImageCommand(t *testing.T) {
	ctx := context.Background()
	f, kruise, _ := newFakeFactory([]runtime.Object{cloneSet("a"), cloneSet("b"), statefulSet("db"), daemonSet("agent")})
	image := func(ref Ref) string {
		w, err := workloads{client: kruise, namespace: "default"}.get(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		return w.Template().Spec.Containers[0].Image
	}
	out, _, err := run(t, f, "set", "image", "clone/a", "asts/db", "ads/agent", "main=app:v2")
	if err != nil || out != "cloneset.apps.kruise.io/a image updated\nstatefulset.apps.kruise.io/db image updated\ndaemonset.apps.kruise.io/agent image updated\n" {
		t.Fatalf("set image: %q %v", out, err)
	}
	for _, ref := range []Ref{{CloneSet, "a"}, {StatefulSet, "db"}, {DaemonSet, "agent"}} {
		if got := image(ref); got != "app:v2" {
			t.Errorf("%s image %s", ref, got)
		}
	}
	if image(Ref{CloneSet, "b"}) != "app:v1" {
		t.Errorf("clone/b changed")
	}
	out, _, err = run(t, f, "set", "image", "clone", "--all", "main=app:v3", "--dry-run=client")
	if err != nil || out != "cloneset.apps.kruise.io/a image updated (dry run)\ncloneset.apps.kruise.io/b image updated (dry run)\n" || image(Ref{CloneSet, "b"}) != "app:v1" {
		t.Fatalf("--all --dry-run=client: %q %v", out, err)
	}
	// A server dry run sends dryRun=All.
	var dryRun []string
	kruise.PrependReactor("update", "clonesets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		dryRun = a.(clienttesting.UpdateActionImpl).UpdateOptions.DryRun
		return false, nil, nil
	})
	if _, _, err := run(t, f, "set", "image", "clone/b", "main=app:v4", "--dry-run=server"); err != nil || len(dryRun) != 1 || dryRun[0] != metav1.DryRunAll {
		t.Fatalf("--dry-run=server sent dryRun %v (%v)", dryRun, err)
	}
	if _, _, err := run(t, f, "set", "image", "clone/a", "nope=x"); err == nil || !strings.Contains(err.Error(), `unable to find container named "nope"`) {
		t.Fatalf("unknown container: %v", err)
	}
	if _, _, err := run(t, f, "set", "image", "clone/a", "main=x", "--dry-run=maybe"); err == nil {
		t.Fatalf("a bad --dry-run: no error")
	}
}
