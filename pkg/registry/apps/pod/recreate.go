package pod

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/policy"
	"github.com/inplace-dev/inplace/pkg/registry/apps/strategy"
)

// RecreateStorage is what pods/recreate creates ContainerRecreateRequests with: their store and
// the server's admission chain, so that a request made here is admitted and stored exactly as a
// direct create of the containerrecreaterequests resource is.
type RecreateStorage struct {
	Store *genericregistry.Store
	// Admission is the server's admission chain; nil when admission is off (standalone mode).
	Admission        admission.Interface
	ObjectInterfaces admission.ObjectInterfaces
}

// RecreateREST is POST pods/NAME/recreate: it creates a ContainerRecreateRequest for the Pod NAME
// from the body (empty or {} means every container of the Pod, default strategy) and answers it.
// Whoever may create pods/recreate may do so, whatever their rights on
// containerrecreaterequests, as pods/eviction deletes Pods for whoever may create evictions.
type RecreateREST struct {
	pods corev1client.PodsGetter
	crrs RecreateStorage
	// budgets is charged (UPDATE) before the request is created; nil charges nothing.
	budgets Budgets
}

var _ rest.NamedCreater = &RecreateREST{}

// New returns an empty ContainerRecreateRequest body.
func (*RecreateREST) New() runtime.Object { return &apps.ContainerRecreateRequest{} }

// Destroy does nothing: the containerrecreaterequests resource owns the store.
func (*RecreateREST) Destroy() {}

// Create creates a ContainerRecreateRequest for the Pod name.
func (r *RecreateREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	if r.pods == nil {
		return nil, noCluster("pods/recreate", name)
	}
	body, err := strategy.Body[*apps.ContainerRecreateRequest](obj, "a ContainerRecreateRequest body")
	if err != nil {
		return nil, err
	}
	namespace := genericapirequest.NamespaceValue(ctx)
	crr := body.DeepCopy()
	if crr.Spec.PodName != "" && crr.Spec.PodName != name {
		return nil, apierrors.NewInvalid(apps.Kind("ContainerRecreateRequest"), crr.Name, field.ErrorList{field.Invalid(
			field.NewPath("spec", "podName"), crr.Spec.PodName, fmt.Sprintf("must be empty or %q, the Pod of the request path", name))})
	}
	crr.Spec.PodName = name
	crr.Namespace = namespace
	if crr.Name == "" && crr.GenerateName == "" {
		crr.GenerateName = name + "-"
	}
	// The Pod, read once for an empty container list and for the budget's charge.
	var pod *corev1.Pod
	if len(crr.Spec.Containers) == 0 {
		var err error
		if pod, err = r.pods.Pods(namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return nil, passOn(err)
		}
		for _, c := range pod.Spec.Containers {
			crr.Spec.Containers = append(crr.Spec.Containers, apps.ContainerRecreateRequestContainer{Name: c.Name})
		}
	}

	attributes := func(obj runtime.Object) admission.Attributes {
		user, _ := genericapirequest.UserFrom(ctx)
		created := obj.(*apps.ContainerRecreateRequest)
		return admission.NewAttributesRecord(obj, nil, apps.Kind("ContainerRecreateRequest").WithVersion(runtime.APIVersionInternal),
			namespace, created.Name, apps.Resource("containerrecreaterequests").WithVersion(runtime.APIVersionInternal), "",
			admission.Create, options, len(options.DryRun) > 0, user)
	}
	if m, ok := r.crrs.Admission.(admission.MutationInterface); ok && m.Handles(admission.Create) {
		if err := m.Admit(ctx, attributes(crr), r.crrs.ObjectInterfaces); err != nil {
			return nil, err
		}
	}
	validate := func(ctx context.Context, obj runtime.Object) error {
		if createValidation != nil {
			if err := createValidation(ctx, obj); err != nil {
				return err
			}
		}
		if v, ok := r.crrs.Admission.(admission.ValidationInterface); ok && v.Handles(admission.Create) {
			if err := v.Validate(ctx, attributes(obj), r.crrs.ObjectInterfaces); err != nil {
				return err
			}
		}
		// Last, once the request is known to be admitted: the Pod's budget (a 429 refuses it).
		return r.charge(ctx, namespace, name, pod, len(options.DryRun) > 0)
	}
	return r.crrs.Store.Create(ctx, crr, validate, options)
}

// charge takes a unit of the Pod's budget for the recreation (an UPDATE: its containers restart);
// pod is the Pod when the request already read it, else nil.
func (r *RecreateREST) charge(ctx context.Context, namespace, name string, pod *corev1.Pod, dryRun bool) error {
	if r.budgets == nil {
		return nil
	}
	if pod == nil {
		var err error
		if pod, err = r.pods.Pods(namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return passOn(err)
		}
	}
	return r.budgets.Charge(ctx, pod, policy.PubUpdateOperation, time.Now(), dryRun)
}

// passOn gives a client what kube-apiserver said (NotFound, Forbidden...) as it said it.
func passOn(err error) error {
	if status, ok := err.(apierrors.APIStatus); ok {
		return &apierrors.StatusError{ErrStatus: status.Status()}
	}
	return apierrors.NewInternalError(err)
}
