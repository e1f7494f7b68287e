package integration

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	"github.com/inplace-dev/inplace/pkg/kubectlplugin"
	"github.com/inplace-dev/inplace/test/integration/framework"
)

// pluginFactory points kubectl-inplace's commands at the test server.
type pluginFactory struct{ s *framework.Server }

func (pluginFactory) Namespace() (string, error)             { return "default", nil }
func (f pluginFactory) Kruise() (versioned.Interface, error) { return f.s.Client, nil }
func (f pluginFactory) Kube() (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(f.s.Config)
}

// TestKubectlPlugin: kubectl-inplace's commands that need no kube-apiserver, against a real
// inplace-apiserver (standalone, real etcd): set image (and its server dry run), scale with
// podsToDelete, pause/resume of the three workloads, rollout status watching until --timeout, and
// update pod --dry-run=server answered by a server with no cluster.
func TestKubectlPlugin(t *testing.T) {
	s, ctx := parallelServer(t)
	kubectlInplace := func(args ...string) (string, error) {
		t.Helper()
		streams, _, out, errOut := genericiooptions.NewTestIOStreams()
		cmd := kubectlplugin.NewCommand(pluginFactory{s}, streams)
		cmd.SetArgs(args)
		err := cmd.ExecuteContext(ctx)
		return out.String() + errOut.String(), err
	}
	clones := s.Client.AppsV1alpha1().CloneSets("default")
	if _, err := clones.Create(ctx, newCloneSet("web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sts := newCloneSet("db") // for its template and selector
	if _, err := s.Client.AppsV1beta1().StatefulSets("default").Create(ctx, &appsv1beta1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec:       appsv1beta1.StatefulSetSpec{Replicas: ptr.To[int32](2), Selector: sts.Spec.Selector, Template: sts.Spec.Template},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// set image: a server dry run stores nothing, then the real one.
	if out, err := kubectlInplace("set", "image", "clone/web", "main=inplace.local/app:v2", "--dry-run=server", "-o", "jsonpath={.spec.template.spec.containers[0].image}"); err != nil || out != "inplace.local/app:v2" {
		t.Fatalf("set image --dry-run=server: %q %v", out, err)
	}
	if cs, _ := clones.Get(ctx, "web", metav1.GetOptions{}); cs.Spec.Template.Spec.Containers[0].Image != "inplace.local/app:v1" {
		t.Fatalf("a server dry run stored the image")
	}
	if out, err := kubectlInplace("set", "image", "clone/web", "main=inplace.local/app:v2"); err != nil || out != "cloneset.apps.kruise.io/web image updated\n" {
		t.Fatalf("set image: %q %v", out, err)
	}
	cs, err := clones.Get(ctx, "web", metav1.GetOptions{})
	if err != nil || cs.Spec.Template.Spec.Containers[0].Image != "inplace.local/app:v2" || cs.Generation != 2 {
		t.Fatalf("after set image: %+v %v", cs, err)
	}
	if _, err := kubectlInplace("set", "image", "clone/web", "nope=x"); err == nil || !strings.Contains(err.Error(), `unable to find container named "nope"`) {
		t.Fatalf("set image of an unknown container: %v", err)
	}

	// scale with podsToDelete.
	if out, err := kubectlInplace("scale", "clone/web", "--replicas", "1", "--pods", "web-abcde"); err != nil || out != "cloneset.apps.kruise.io/web scaled\n" {
		t.Fatalf("scale: %q %v", out, err)
	}
	if cs, _ := clones.Get(ctx, "web", metav1.GetOptions{}); *cs.Spec.Replicas != 1 || len(cs.Spec.ScaleStrategy.PodsToDelete) != 1 || cs.Spec.ScaleStrategy.PodsToDelete[0] != "web-abcde" {
		t.Fatalf("after scale: replicas %d, podsToDelete %v", *cs.Spec.Replicas, cs.Spec.ScaleStrategy.PodsToDelete)
	}

	// pause and resume, through the server's merge patch.
	if out, err := kubectlInplace("rollout", "pause", "clone/web", "asts/db"); err != nil || out != "cloneset.apps.kruise.io/web paused\nstatefulset.apps.kruise.io/db paused\n" {
		t.Fatalf("pause: %q %v", out, err)
	}
	if cs, _ := clones.Get(ctx, "web", metav1.GetOptions{}); !cs.Spec.UpdateStrategy.Paused {
		t.Fatalf("the CloneSet is not paused")
	}
	if got, _ := s.Client.AppsV1beta1().StatefulSets("default").Get(ctx, "db", metav1.GetOptions{}); !got.Spec.UpdateStrategy.RollingUpdate.Paused {
		t.Fatalf("the StatefulSet is not paused")
	}
	if out, err := kubectlInplace("rollout", "pause", "clone/web"); err != nil || out != "cloneset.apps.kruise.io/web already paused\n" {
		t.Fatalf("pause again: %q %v", out, err)
	}
	if out, err := kubectlInplace("rollout", "resume", "clonesets.apps.kruise.io/web", "asts/db"); err != nil || out != "cloneset.apps.kruise.io/web resumed\nstatefulset.apps.kruise.io/db resumed\n" {
		t.Fatalf("resume: %q %v", out, err)
	}
	if cs, _ := clones.Get(ctx, "web", metav1.GetOptions{}); cs.Spec.UpdateStrategy.Paused {
		t.Fatalf("the CloneSet is still paused")
	}

	// rollout status: no controller runs here, so the spec is never observed; the real watch
	// ends at --timeout with an error.
	start := time.Now()
	out, err := kubectlInplace("rollout", "status", "clone/web", "--timeout", "2s")
	if err == nil || !strings.Contains(err.Error(), "timed out after 2s waiting for the rollout of cloneset.apps.kruise.io/web") ||
		out != "Waiting for cloneset spec update to be observed...\n" {
		t.Fatalf("rollout status --timeout: %q %v", out, err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("rollout status --timeout 2s took %s", d)
	}

	// update pod: a standalone server has no Pods and says so, dry run or not.
	if _, err := kubectlInplace("update", "pod", "demo", "--image", "main=inplace.local/app:v2", "--dry-run=server"); err == nil || !strings.Contains(err.Error(), "standalone mode") {
		t.Fatalf("update pod --dry-run=server on a standalone server: %v", err)
	}
}
