package e2e

import (
	"fmt"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// TestCloneSetScale: Pods are created from the template with the CloneSet's labels, readiness
// gate and owner; `kubectl scale` works through the scale subresource; podsToDelete removes
// exactly the named Pod on scale-down.
func TestCloneSetScale(t *testing.T) {
	ctx, ns := framework.Start(t, "e2e-clone")
	labels := map[string]string{"app": "web"}
	cs, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Create(ctx, &v1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1alpha1.CloneSetSpec{
			Replicas:       ptr.To[int32](3),
			Selector:       &metav1.LabelSelector{MatchLabels: labels},
			Template:       framework.PodTemplate(labels, framework.Container("main", framework.AppImageV1)),
			UpdateStrategy: v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods := framework.WaitCloneSetReady(t, ctx, cs, 3)
	got, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.LabelSelector != "app=web" || got.Status.UpdateRevision == "" || got.Status.UpdatedReplicas != 3 {
		t.Errorf("status %+v: want labelSelector app=web, an updateRevision, 3 updated", got.Status)
	}
	for _, p := range pods {
		if p.Labels[v1alpha1.CloneSetInstanceID] == "" || p.Labels["controller-revision-hash"] != got.Status.UpdateRevision {
			t.Errorf("pod %s labels %v: want an instance id and revision %s", p.Name, p.Labels, got.Status.UpdateRevision)
		}
		if framework.ConditionStatus(p, pub.InPlaceUpdateReady) != corev1.ConditionTrue {
			t.Errorf("pod %s: InPlaceUpdateReady %s, want True (readiness gate injected and set)", p.Name, framework.ConditionStatus(p, pub.InPlaceUpdateReady))
		}
	}

	framework.MustKubectl(t, ctx, "", "-n", ns, "scale", "clone/web", "--replicas=5")
	pods = framework.WaitCloneSetReady(t, ctx, cs, 5)

	names := make([]string, 0, len(pods))
	for name := range pods {
		names = append(names, name)
	}
	sort.Strings(names)
	victim := names[2]
	patch := fmt.Sprintf(`{"spec":{"replicas":4,"scaleStrategy":{"podsToDelete":[%q]}}}`, victim)
	if _, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Patch(ctx, "web", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	after := framework.WaitCloneSetReady(t, ctx, cs, 4)
	if _, ok := after[victim]; ok {
		t.Errorf("pod %s named in podsToDelete is still there", victim)
	}
	for name, p := range after {
		before, ok := pods[name]
		if !ok || before.UID != p.UID {
			t.Errorf("pod %s was created or replaced on a scale-down that should only delete %s", name, victim)
		}
	}
}
