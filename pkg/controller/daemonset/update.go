package daemonset

import (
	"context"
	"errors"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
	"github.com/inplace-dev/inplace/pkg/updatesort"
	"github.com/inplace-dev/inplace/pkg/workload/availability"
	"github.com/inplace-dev/inplace/pkg/workload/history"
	"github.com/inplace-dev/inplace/pkg/workload/inplacerequest"
)

// updatePlan is what a rolling update step may do: the nodes whose old Pod may be replaced now
// (in place, or deleted for scaling to create the new one) and those that get a surge Pod beside
// the old one.
type updatePlan struct {
	replace []*nodeState
	surge   []*nodeState
}

// planUpdate picks the nodes to move to the update revision in this step, in node name order:
// only nodes rollingUpdate.selector matches; partition old Pods stay; maxUnavailable bounds the
// nodes without an available Pod (a node whose old Pod is already unavailable takes no budget);
// with maxSurge, up to that many nodes run a new Pod beside the old one instead.
func planUpdate(ds *v1alpha1.DaemonSet, states []*nodeState, updateRevision string, now time.Time) updatePlan {
	var plan updatePlan
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Spec.UpdateStrategy.Type == v1alpha1.OnDeleteDaemonSetStrategyType || ru == nil || (ru.Paused != nil && *ru.Paused) {
		return plan
	}
	var nodeSelector labels.Selector
	if ru.Selector != nil {
		s, err := metav1.LabelSelectorAsSelector(ru.Selector)
		if err != nil {
			return plan
		}
		nodeSelector = s
	}
	desired, updated, unavailable, surging := 0, 0, 0, 0
	var old []*nodeState
	for _, st := range states {
		if !st.run {
			continue
		}
		desired++
		available := false
		atUpdate := false
		for _, p := range st.pods {
			if ok, _ := availability.Available(p, ds.Spec.MinReadySeconds, now); ok {
				available = true
			}
			if p.Labels[appsv1.ControllerRevisionHashLabelKey] == updateRevision {
				atUpdate = true
			}
		}
		if !available {
			unavailable++
		}
		switch {
		case atUpdate:
			updated++
			if len(st.pods) > 1 {
				surging++
			}
		case len(st.pods) == 1 && (nodeSelector == nil || (st.node != nil && nodeSelector.Matches(labels.Set(st.node.Labels)))):
			old = append(old, st)
		}
	}
	partition := updatesort.Partition(ru.Partition, desired)
	left := desired - partition - updated
	if left <= 0 || len(old) == 0 {
		return plan
	}
	maxSurge := scaled(ru.MaxSurge, desired)
	if maxSurge > 0 && ru.Type != v1alpha1.InplaceRollingUpdateType {
		for _, st := range old {
			if len(plan.surge) >= min(left, maxSurge-surging) {
				break
			}
			plan.surge = append(plan.surge, st)
		}
		return plan
	}
	budget := scaled(ru.MaxUnavailable, desired) - unavailable
	for _, st := range old {
		if len(plan.replace) >= left {
			break
		}
		if ok, _ := availability.Available(st.pods[0], ds.Spec.MinReadySeconds, now); ok {
			if budget <= 0 {
				continue
			}
			budget--
		}
		plan.replace = append(plan.replace, st)
	}
	return plan
}

// scaled is a count or percentage of the desired nodes, percentages rounded up, as kube's
// DaemonSet reads maxUnavailable and maxSurge; nil is 0.
func scaled(v *intstr.IntOrString, desired int) int {
	if v == nil {
		return 0
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, desired, true)
	if err != nil {
		return 0
	}
	return n
}

// rollingUpdate carries out planUpdate.
func (c *Controller) rollingUpdate(ctx context.Context, ds *v1alpha1.DaemonSet, states []*nodeState, revs history.Revisions, revisions []*appsv1.ControllerRevision) error {
	plan := planUpdate(ds, states, revs.Update.Name, c.Clock.Now())
	byName := map[string]*appsv1.ControllerRevision{}
	for _, r := range revisions {
		byName[r.Name] = r
	}
	var errs []error
	for _, st := range plan.surge {
		errs = append(errs, c.createPod(ctx, ds, revs.Update, st.name))
	}
	for _, st := range plan.replace {
		pod := st.pods[0]
		if ds.Spec.UpdateStrategy.RollingUpdate.Type == v1alpha1.InplaceRollingUpdateType {
			spec, reason, err := inplacerequest.Decide(pod, byName, revs.Update)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if spec != nil {
				errs = append(errs, c.updateInPlace(ctx, ds, pod, spec, revs.Update.Name))
				continue
			}
			errs = append(errs, c.deletePod(ctx, ds, pod, "recreating for revision "+revs.Update.Name+": "+reason))
			continue
		}
		errs = append(errs, c.deletePod(ctx, ds, pod, "recreating for revision "+revs.Update.Name))
	}
	return errors.Join(errs...)
}

func (c *Controller) updateInPlace(ctx context.Context, ds *v1alpha1.DaemonSet, pod *corev1.Pod, spec *inplaceupdate.UpdateSpec, revision string) error {
	body := inplacerequest.Body(pod, spec, revision, inplacerequest.Options{Now: c.Clock.Now(), NoLifecycle: true})
	return c.UpdateInPlace(ctx, ds, pod, spec, body, revision)
}
