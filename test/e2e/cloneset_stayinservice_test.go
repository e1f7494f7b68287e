package e2e

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// TestCloneSetStayInService: a CloneSet annotated inplace.dev/stay-in-service-containers=logger
// updates its logger container in place without taking a Pod out of its Service: at every change
// the Pod watch and the EndpointSlice watch delivered, InPlaceUpdateReady and Ready stay True and
// the endpoint stays ready, no grace period is waited, and maxUnavailable still paces the update
// (one Pod Updating at a time). The same CloneSet's update of its main container, which is not
// listed, takes each Pod out of service through the grace period as usual: the watches would see
// it.
func TestCloneSetStayInService(t *testing.T) {
	ctx, ns := framework.Start(t, "stay-in-service")
	cs, before := framework.ReadyCloneSet(t, ctx, ns, 2, v1alpha1.CloneSetUpdateStrategy{
		Type:                  v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType,
		MaxUnavailable:        ptr.To(intstr.FromInt32(1)),
		InPlaceUpdateStrategy: &pub.InPlaceUpdateStrategy{GracePeriodSeconds: 2},
	}, func(cs *v1alpha1.CloneSet) {
		cs.Annotations = map[string]string{pub.StayInServiceContainersKey: "logger"}
		cs.Spec.Template.Spec.Containers = append(cs.Spec.Template.Spec.Containers, framework.Container("logger", framework.AppImageV1))
	})
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	if _, err := framework.Kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range before {
			if !yield(n) {
				return
			}
		}
	})
	endpoints := framework.RecordEndpoints(t, ctx, ns, "web")
	endpoints.WaitReady(t, ctx, names...)
	rec := framework.RecordPods(t, ctx, ns)

	framework.UpdateCloneSet(t, ctx, cs, func(cs *v1alpha1.CloneSet) {
		framework.FindContainer(cs.Spec.Template.Spec.Containers, "logger").Image = framework.AppImageV2
	})
	_, after := framework.WaitRolledOut(t, ctx, cs, 2)
	framework.CheckSamePods(t, before, after)
	for _, name := range names {
		main, logger := framework.ContainerStatus(t, after[name], "main"), framework.ContainerStatus(t, after[name], "logger")
		if was := framework.ContainerStatus(t, before[name], "main"); main.ContainerID != was.ContainerID || main.RestartCount != 0 {
			t.Errorf("pod %s: main %s restarts %d, was %s: only logger was to change", name, main.ContainerID, main.RestartCount, was.ContainerID)
		}
		if logger.Image != framework.AppImageV2 || logger.RestartCount != 1 {
			t.Errorf("pod %s: logger runs %s after %d restarts, want %s after 1", name, logger.Image, logger.RestartCount, framework.AppImageV2)
		}
	}
	left, graced, updating := outOfService(t, rec, rec.UpTo(t, ctx, ns))
	if len(left) > 0 {
		t.Errorf("pods left service during the logger's update: %v", left)
	}
	if len(graced) > 0 {
		t.Errorf("pods waited a grace period during the logger's update: %v", graced)
	}
	if updating != 1 {
		t.Errorf("at most %d Pods were Updating at once, want maxUnavailable's 1", updating)
	}
	endpoints.WaitReady(t, ctx, names...)
	if bad := endpoints.NotReady(); len(bad) > 0 {
		t.Errorf("the Service's endpoints were not ready during the logger's update: %v", bad)
	}

	// The main container is not listed: its update takes the Pods out of service.
	rec = framework.RecordPods(t, ctx, ns)
	framework.UpdateCloneSet(t, ctx, cs, func(cs *v1alpha1.CloneSet) {
		framework.FindContainer(cs.Spec.Template.Spec.Containers, "main").Image = framework.AppImageV2
	})
	framework.WaitRolledOut(t, ctx, cs, 2)
	left, graced, _ = outOfService(t, rec, rec.UpTo(t, ctx, ns))
	if !slices.Equal(left, names) || !slices.Equal(graced, names) {
		t.Errorf("the main container's update took %v out of service and %v through a grace period, want both %v", left, graced, names)
	}

	// A name that is not one of the template's containers is refused, with the field and why.
	_, stderr, err := framework.Kubectl(ctx, "", "-n", ns, "annotate", "--overwrite", "clone/web", pub.StayInServiceContainersKey+"=loger")
	if err == nil || !strings.Contains(stderr, "metadata.annotations["+pub.StayInServiceContainersKey+"]") || !strings.Contains(stderr, `"loger" is not a container`) {
		t.Errorf("annotating a misspelt container: err %v, stderr %q; want the annotation refused naming the field and the container", err, stderr)
	}
}

// outOfService replays a CloneSet's Pod events: the Pods whose InPlaceUpdateReady or Ready was
// ever False, those that ever waited an in-place update's grace period (sorted), and the most
// Pods in lifecycle state Updating at once.
func outOfService(t *testing.T, rec *framework.PodEvents, events []framework.PodEvent) (left, graced []string, updating int) {
	t.Helper()
	rec.Replay(events, func(_ framework.PodEvent, pods map[string]*corev1.Pod) {
		n := 0
		for name, p := range pods {
			if (framework.ConditionStatus(p, pub.InPlaceUpdateReady) == corev1.ConditionFalse || !framework.PodReady(p)) && !slices.Contains(left, name) {
				left = append(left, name)
			}
			if _, ok := p.Annotations[pub.InPlaceUpdateGraceKey]; ok && !slices.Contains(graced, name) {
				graced = append(graced, name)
			}
			if p.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStateUpdating) {
				n++
			}
		}
		updating = max(updating, n)
	})
	slices.Sort(left)
	slices.Sort(graced)
	t.Logf("replayed %d events: left service %v, grace %v, at most %d Updating", len(events), left, graced, updating)
	return left, graced, updating
}
