package pod

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/validation"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate/podwriter"
	"github.com/inplace-dev/inplace/pkg/podbudget"
	"github.com/inplace-dev/inplace/pkg/registry/apps/strategy"
	"github.com/inplace-dev/inplace/pkg/sidecarcontrol"
)

// InPlaceUpdateREST is POST pods/NAME/inplaceupdate: it checks the InPlaceUpdate body against the
// live core Pod NAME and writes the first step of the update (readiness condition, state
// annotation, revision label, metadata, first batch of images, resize). The controller drives the
// rest. A refused request writes nothing.
type InPlaceUpdateREST struct {
	pods corev1client.PodsGetter
	now  func() time.Time
	// sidecarSets lists the SidecarSets whose resourcesPolicy sidecars follow a resize of their
	// targets (followingSidecars); nil leaves sidecars as they are.
	sidecarSets func() ([]*v1alpha1.SidecarSet, error)
	// budgets is charged for an update that makes the Pod unavailable; nil charges nothing.
	budgets Budgets
}

var _ rest.NamedCreater = &InPlaceUpdateREST{}

// New returns an empty InPlaceUpdate body.
func (*InPlaceUpdateREST) New() runtime.Object { return &apps.InPlaceUpdate{} }

// Destroy does nothing.
func (*InPlaceUpdateREST) Destroy() {}

// Create starts an in-place update of the core Pod name and answers the resulting state.
func (r *InPlaceUpdateREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	if r.pods == nil {
		return nil, noCluster("pods/inplaceupdate", name)
	}
	req, err := strategy.Body[*apps.InPlaceUpdate](obj, "an InPlaceUpdate body")
	if err != nil {
		return nil, err
	}
	namespace := genericapirequest.NamespaceValue(ctx)
	if errs := validation.ValidateInPlaceUpdate(req); len(errs) > 0 {
		return nil, apierrors.NewInvalid(apps.Kind("InPlaceUpdate"), name, errs)
	}
	if createValidation != nil {
		if err := createValidation(ctx, req); err != nil {
			return nil, err
		}
	}
	now := r.now()
	// dryRun=All: every write is sent with dryRun, so kube-apiserver's admission and validation
	// answer, and nothing is stored.
	write, dryRun := podwriter.Apply, options != nil && len(options.DryRun) > 0
	if dryRun {
		write = podwriter.DryRun
	}
	effective := req
	pod, step, err := write(ctx, r.pods.Pods(namespace), name, func(pod *corev1.Pod) (*inplaceupdate.Step, error) {
		effective = r.followingSidecars(ctx, pod, req)
		spec, err := inplaceupdate.SpecFromRequest(pod, effective)
		if err != nil {
			return nil, err
		}
		step, err := inplaceupdate.Begin(pod, spec, now)
		if err != nil {
			return nil, err
		}
		// The Pod's budget is charged once the update is known to be possible, before the Pod is
		// written: a refusal (429) leaves the Pod untouched. A write that then fails leaves a unit
		// taken until the budget's entry for the Pod times out; a retried write does not charge again.
		if op, disrupts := podbudget.Operation(pod, spec); disrupts && r.budgets != nil {
			if err := r.budgets.Charge(ctx, pod, op, now, dryRun); err != nil {
				return nil, err
			}
		}
		return step, nil
	})
	if err != nil {
		return nil, requestError(name, err)
	}
	return &apps.InPlaceUpdate{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, ResourceVersion: pod.ResourceVersion},
		Spec:       effective.Spec,
		Status:     apps.InPlaceUpdateStatus{State: step.State, Message: step.Message},
	}, nil
}

// followingSidecars is req plus the resize of every sidecar whose SidecarSet's resourcesPolicy
// computes its resources from containers req resizes (sidecarcontrol.ResizedSidecars), so the
// sidecar follows its app in the same update and is checked with it (QoS class, feasibility). A
// sidecar req names itself is left as req says. A policy that cannot be evaluated for the resized
// Pod leaves the sidecars as they are: the app's resize is what was asked for.
func (r *InPlaceUpdateREST) followingSidecars(ctx context.Context, pod *corev1.Pod, req *apps.InPlaceUpdate) *apps.InPlaceUpdate {
	resizes := slices.ContainsFunc(req.Spec.Containers, func(c apps.InPlaceUpdateContainer) bool { return c.Resources != nil })
	if r.sidecarSets == nil || req.Spec.SidecarSet != nil || !resizes {
		// No copy of the Pod on the way of every image update.
		return req
	}
	resized, named := pod.DeepCopy(), map[string]bool{}
	for _, rc := range req.Spec.Containers {
		named[rc.Name] = true
		for i := range resized.Spec.Containers {
			if c := &resized.Spec.Containers[i]; c.Name == rc.Name && rc.Resources != nil {
				c.Resources = inplaceupdate.MergeResources(c.Resources, *rc.Resources)
			}
		}
	}
	if apiequality.Semantic.DeepEqual(resized.Spec.Containers, pod.Spec.Containers) {
		return req
	}
	sets, err := r.sidecarSets()
	if err == nil {
		var follow map[string]corev1.ResourceRequirements
		if follow, err = sidecarcontrol.ResizedSidecars(resized, sets); err == nil {
			out := req.DeepCopy()
			for _, name := range slices.Sorted(maps.Keys(follow)) {
				if !named[name] {
					res := follow[name]
					out.Spec.Containers = append(out.Spec.Containers, apps.InPlaceUpdateContainer{Name: name, Resources: &res})
				}
			}
			return out
		}
	}
	klog.FromContext(ctx).Info("Sidecar resources not recomputed for a resize", "pod", klog.KObj(pod), "err", err)
	return req
}

// requestError turns what the engine or the core API said into the status a client reads.
func requestError(name string, err error) error {
	var invalid *inplaceupdate.InvalidRequestError
	var notUpdatable *inplaceupdate.PodNotUpdatableError
	var inProgress *inplaceupdate.InProgressError
	var busy *inplaceupdate.ContainerBusyError
	var status *apierrors.StatusError
	switch {
	case errors.As(err, &invalid):
		return apierrors.NewInvalid(apps.Kind("InPlaceUpdate"), name, invalid.Errs)
	case errors.As(err, &notUpdatable), errors.As(err, &inProgress), errors.As(err, &busy):
		return apierrors.NewConflict(corev1.Resource("pods"), name, err)
	case errors.As(err, &status):
		// NotFound, Forbidden, Invalid, ... from kube-apiserver: pass them on as they are (the
		// unwrapped status, or the client would see a 500).
		return status
	default:
		return apierrors.NewInternalError(err)
	}
}

func noCluster(subresource, name string) error {
	return apierrors.NewServiceUnavailable(fmt.Sprintf(
		"%s of %q: this inplace-apiserver runs in standalone mode, with no cluster to reach Pods in; run it with --mode=aggregated", subresource, name))
}
