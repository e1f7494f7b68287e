package e2e

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// TestAdvancedDaemonSetInPlaceResize (OpenKruise InplaceVPA "should upgrade resources and image
// one by one"): an image and a resource change together update every Pod of the Advanced
// DaemonSet in place: same Pod, main restarted once (for its image) on the new image, the new
// resources in spec and status.
func TestAdvancedDaemonSetInPlaceResize(t *testing.T) {
	ctx, ns := framework.Start(t, "ads-resize")
	n, before := framework.ReadyDaemonSet(t, ctx, ns, func(ds *v1alpha1.DaemonSet) {
		ds.Spec.Template.Spec.Containers[0].Resources = *resizeOld.DeepCopy()
	})
	uids := map[types.UID]bool{}
	for _, p := range before {
		uids[p.UID] = true
	}
	framework.UpdateDaemonSet(t, ctx, ns, func(ds *v1alpha1.DaemonSet) {
		ds.Spec.Template.Spec.Containers[0].Image = framework.AppImageV2
		ds.Spec.Template.Spec.Containers[0].Resources = *resizeNew.DeepCopy()
	})
	after := framework.WaitDaemonSet(t, ctx, ns, n, n)
	for _, p := range after {
		if !uids[p.UID] {
			t.Errorf("pod %s was recreated: want an in-place update", p.Name)
		}
		s := framework.FindStatus(&p, "main")
		if s == nil || s.RestartCount != 1 || s.Image != framework.AppImageV2 {
			t.Errorf("pod %s: container %+v, want %s restarted once", p.Name, s, framework.AppImageV2)
			continue
		}
		if spec := p.Spec.Containers[0].Resources; !sameResources(&spec, &resizeNew) || !sameResources(s.Resources, &spec) {
			t.Errorf("pod %s resources: spec %+v, status %+v; want both %+v", p.Name, spec, s.Resources, resizeNew)
		}
	}
}
