package sidecarset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/podcreate"
	"github.com/inplace-dev/inplace/pkg/registry/apps/strategy"
	"github.com/inplace-dev/inplace/pkg/sidecarcontrol"
)

// InjectREST is POST sidecarsets/NAME/inject: it takes a core Pod and answers the Pod as it would
// be created with that SidecarSet (pkg/podcreate, the code of the Pod webhook: the injection, and
// the readiness gate and launch barriers it brings), with no side effect. A Pod the SidecarSet does not select is refused with 422 saying why.
type InjectREST struct {
	sidecarSets rest.Getter
	// namespaces reads the labels a namespaceSelector matches; nil in standalone mode.
	namespaces corev1client.NamespacesGetter
	// revisions lists the SidecarSet's ControllerRevisions (injectionStrategy.revision); nil in
	// standalone mode.
	revisions sidecarcontrol.RevisionLister
	convertor runtime.ObjectConvertor
	now       func() time.Time
	random    func() float64
}

var (
	_ rest.NamedCreater             = &InjectREST{}
	_ rest.GroupVersionKindProvider = &InjectREST{}
)

// GroupVersionKind says the body and the answer are core v1 Pods.
func (*InjectREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return corev1.SchemeGroupVersion.WithKind("Pod")
}

// New returns an empty Pod.
func (*InjectREST) New() runtime.Object { return &corev1.Pod{} }

// Destroy does nothing.
func (*InjectREST) Destroy() {}

// Create answers the injected Pod.
func (r *InjectREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	pod, err := strategy.Body[*corev1.Pod](obj, "a Pod body")
	if err != nil {
		return nil, err
	}
	if createValidation != nil {
		if err := createValidation(ctx, pod); err != nil {
			return nil, err
		}
	}
	stored, err := r.sidecarSets.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	set := &v1alpha1.SidecarSet{}
	if err := r.convertor.Convert(stored.(*apps.SidecarSet), set, nil); err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("converting SidecarSet %s: %w", name, err))
	}
	// The generic handler cleared the body's namespace (sidecarsets are cluster-scoped); the
	// server's handler chain kept it aside.
	namespace := pod.Namespace
	if namespace == "" {
		namespace = PodNamespaceFrom(ctx)
	}
	if namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	pod.Namespace = namespace
	nsLabels, err := r.namespaceLabels(ctx, namespace, set)
	if err != nil {
		return nil, err
	}
	if ok, why := sidecarcontrol.Matches(pod, nsLabels, set); !ok {
		return nil, apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Pod").GroupKind(), pod.Name,
			field.ErrorList{field.Invalid(field.NewPath("metadata"), pod.Name, "not injected: "+why)})
	}
	canary, err := r.canaryInstead(ctx, pod, set)
	if err != nil {
		return nil, err
	}
	if canary != "" {
		return nil, apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Pod").GroupKind(), pod.Name,
			field.ErrorList{field.Invalid(field.NewPath("metadata"), pod.Name, fmt.Sprintf(
				"not injected: its canary SidecarSet %s selects this Pod too and injects instead (annotation %s)", canary, v1alpha1.SidecarSetBaseAnnotation))})
	}
	sets, warnings := sidecarcontrol.AtRevisions(ctx, []*v1alpha1.SidecarSet{set}, labels.Set(pod.Labels), r.revisions, r.random)
	for _, w := range warnings {
		warning.AddWarning(ctx, "", w)
	}
	res, err := podcreate.Mutate(pod, sets, metav1.NewTime(r.now()))
	if podErr := (*sidecarcontrol.PodError)(nil); errors.As(err, &podErr) {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("injecting SidecarSet %s: %v", name, err))
	}
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("injecting SidecarSet %s: %w", name, err))
	}
	for _, w := range res.Warnings {
		warning.AddWarning(ctx, "", w)
	}
	return res.Pod, nil
}

// namespaceLabels are the labels of the Pod's namespace, read from the cluster when the
// SidecarSet has a namespaceSelector. Standalone mode has no namespaces: there only the
// kubernetes.io/metadata.name label, which every namespace carries, is known.
func (r *InjectREST) namespaceLabels(ctx context.Context, namespace string, set *v1alpha1.SidecarSet) (map[string]string, error) {
	known := map[string]string{corev1.LabelMetadataName: namespace}
	if set.Spec.NamespaceSelector == nil {
		return known, nil
	}
	if r.namespaces == nil {
		warning.AddWarning(ctx, "", "standalone mode: spec.namespaceSelector is matched against the label "+
			corev1.LabelMetadataName+" only (there is no cluster to read the namespace from)")
		return known, nil
	}
	ns, err := r.namespaces.Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Pod").GroupKind(), "",
			field.ErrorList{field.NotFound(field.NewPath("metadata", "namespace"), namespace)})
	}
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("reading namespace %s: %w", namespace, err))
	}
	return ns.Labels, nil
}

type podNamespaceKey struct{}

// WithPodNamespace records the namespace written in the body of a sidecarsets/NAME/inject request.
func WithPodNamespace(ctx context.Context, namespace string) context.Context {
	return context.WithValue(ctx, podNamespaceKey{}, namespace)
}

// PodNamespaceFrom returns what WithPodNamespace recorded, "" when nothing.
func PodNamespaceFrom(ctx context.Context) string {
	ns, _ := ctx.Value(podNamespaceKey{}).(string)
	return ns
}

// canaryInstead names a canary SidecarSet of set that would inject into pod in its place, as the
// Pod webhook decides (sidecarcontrol.Matching drops a base whose canary matches); "" when none.
func (r *InjectREST) canaryInstead(ctx context.Context, pod *corev1.Pod, set *v1alpha1.SidecarSet) (string, error) {
	lister, ok := r.sidecarSets.(rest.Lister)
	if isCanary, _ := sidecarcontrol.IsCanary(set); isCanary || !ok {
		return "", nil
	}
	// From the watch cache (resourceVersion 0), as the webhook reads its informer.
	obj, err := lister.List(ctx, &metainternalversion.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return "", err
	}
	list := obj.(*apps.SidecarSetList)
	for i := range list.Items {
		c := &v1alpha1.SidecarSet{}
		if err := r.convertor.Convert(&list.Items[i], c, nil); err != nil {
			return "", apierrors.NewInternalError(fmt.Errorf("converting SidecarSet %s: %w", list.Items[i].Name, err))
		}
		if isCanary, base := sidecarcontrol.IsCanary(c); !isCanary || base != set.Name {
			continue
		}
		// The namespace's labels as the one with a namespaceSelector needs them.
		withSelector := set
		if c.Spec.NamespaceSelector != nil {
			withSelector = c
		}
		nsLabels, err := r.namespaceLabels(ctx, pod.Namespace, withSelector)
		if err != nil {
			return "", err
		}
		if matched := sidecarcontrol.Matching(pod, nsLabels, []*v1alpha1.SidecarSet{set, c}); !slices.ContainsFunc(matched, func(m *v1alpha1.SidecarSet) bool { return m.Name == set.Name }) {
			return c.Name, nil
		}
	}
	return "", nil
}
