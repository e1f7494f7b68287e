package pod

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/validation"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate/podwriter"
	"github.com/inplace-dev/inplace/pkg/registry/apps/strategy"
)

// InPlaceUpdateREST is POST pods/NAME/inplaceupdate: it checks the InPlaceUpdate body against the
// live core Pod NAME and writes the first step of the update (readiness condition, state
// annotation, revision label, metadata, first batch of images, resize). The controller drives the
// rest. A refused request writes nothing.
type InPlaceUpdateREST struct {
	pods corev1client.PodsGetter
	now  func() time.Time
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
	write := podwriter.Apply
	if options != nil && len(options.DryRun) > 0 {
		write = podwriter.DryRun
	}
	pod, step, err := write(ctx, r.pods.Pods(namespace), name, func(pod *corev1.Pod) (*inplaceupdate.Step, error) {
		spec, err := inplaceupdate.SpecFromRequest(pod, req)
		if err != nil {
			return nil, err
		}
		return inplaceupdate.Begin(pod, spec, now)
	})
	if err != nil {
		return nil, requestError(name, err)
	}
	return &apps.InPlaceUpdate{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, ResourceVersion: pod.ResourceVersion},
		Spec:       req.Spec,
		Status:     apps.InPlaceUpdateStatus{State: step.State, Message: step.Message},
	}, nil
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
