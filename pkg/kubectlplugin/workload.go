package kubectlplugin

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
)

// Workload is one CloneSet (*v1alpha1.CloneSet), Advanced StatefulSet (*v1beta1.StatefulSet) or
// Advanced DaemonSet (*v1alpha1.DaemonSet) as read from the server, with its apiVersion and kind
// set (the typed clients drop them) so that the printers can name it.
type Workload struct {
	Ref    Ref
	Object runtime.Object
}

func newWorkload(ref Ref, obj runtime.Object) *Workload {
	switch o := obj.(type) {
	case *v1alpha1.CloneSet:
		o.SetGroupVersionKind(v1alpha1.SchemeGroupVersion.WithKind("CloneSet"))
	case *v1beta1.StatefulSet:
		o.SetGroupVersionKind(v1beta1.SchemeGroupVersion.WithKind("StatefulSet"))
	case *v1alpha1.DaemonSet:
		o.SetGroupVersionKind(v1alpha1.SchemeGroupVersion.WithKind("DaemonSet"))
	}
	return &Workload{Ref: ref, Object: obj}
}

// Meta is the object's metadata.
func (w *Workload) Meta() metav1.Object { return w.Object.(metav1.Object) }

// Template is the workload's Pod template, in the object (changing it changes the object).
func (w *Workload) Template() *corev1.PodTemplateSpec {
	switch o := w.Object.(type) {
	case *v1alpha1.CloneSet:
		return &o.Spec.Template
	case *v1beta1.StatefulSet:
		return &o.Spec.Template
	case *v1alpha1.DaemonSet:
		return &o.Spec.Template
	}
	return nil
}

// Selector is the workload's Pod selector.
func (w *Workload) Selector() *metav1.LabelSelector {
	switch o := w.Object.(type) {
	case *v1alpha1.CloneSet:
		return o.Spec.Selector
	case *v1beta1.StatefulSet:
		return o.Spec.Selector
	case *v1alpha1.DaemonSet:
		return o.Spec.Selector
	}
	return nil
}

// Paused tells whether the workload's update is paused: CloneSet spec.updateStrategy.paused,
// Advanced StatefulSet and DaemonSet spec.updateStrategy.rollingUpdate.paused.
func (w *Workload) Paused() bool {
	switch o := w.Object.(type) {
	case *v1alpha1.CloneSet:
		return o.Spec.UpdateStrategy.Paused
	case *v1beta1.StatefulSet:
		return o.Spec.UpdateStrategy.RollingUpdate != nil && o.Spec.UpdateStrategy.RollingUpdate.Paused
	case *v1alpha1.DaemonSet:
		ru := o.Spec.UpdateStrategy.RollingUpdate
		return ru != nil && ru.Paused != nil && *ru.Paused
	}
	return false
}

// pausePatch is the JSON merge patch that sets the workload's paused field.
func pausePatch(kind Kind, paused bool) []byte {
	if kind == CloneSet {
		return fmt.Appendf(nil, `{"spec":{"updateStrategy":{"paused":%t}}}`, paused)
	}
	return fmt.Appendf(nil, `{"spec":{"updateStrategy":{"rollingUpdate":{"paused":%t}}}}`, paused)
}

// workloads reads and writes workloads of one namespace through the generated clientset.
type workloads struct {
	client    versioned.Interface
	namespace string
}

func (c workloads) get(ctx context.Context, ref Ref) (*Workload, error) {
	var obj runtime.Object
	var err error
	switch ref.Kind {
	case CloneSet:
		obj, err = c.client.AppsV1alpha1().CloneSets(c.namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	case StatefulSet:
		obj, err = c.client.AppsV1beta1().StatefulSets(c.namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	case DaemonSet:
		obj, err = c.client.AppsV1alpha1().DaemonSets(c.namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	default:
		return nil, fmt.Errorf("unknown kind %q", ref.Kind)
	}
	if err != nil {
		return nil, err
	}
	return newWorkload(ref, obj), nil
}

func (c workloads) list(ctx context.Context, kind Kind) ([]*Workload, error) {
	var out []*Workload
	switch kind {
	case CloneSet:
		l, err := c.client.AppsV1alpha1().CloneSets(c.namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for i := range l.Items {
			out = append(out, newWorkload(Ref{kind, l.Items[i].Name}, &l.Items[i]))
		}
	case StatefulSet:
		l, err := c.client.AppsV1beta1().StatefulSets(c.namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for i := range l.Items {
			out = append(out, newWorkload(Ref{kind, l.Items[i].Name}, &l.Items[i]))
		}
	case DaemonSet:
		l, err := c.client.AppsV1alpha1().DaemonSets(c.namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for i := range l.Items {
			out = append(out, newWorkload(Ref{kind, l.Items[i].Name}, &l.Items[i]))
		}
	}
	return out, nil
}

func (c workloads) update(ctx context.Context, w *Workload, opts metav1.UpdateOptions) (*Workload, error) {
	var obj runtime.Object
	var err error
	switch o := w.Object.(type) {
	case *v1alpha1.CloneSet:
		obj, err = c.client.AppsV1alpha1().CloneSets(c.namespace).Update(ctx, o, opts)
	case *v1beta1.StatefulSet:
		obj, err = c.client.AppsV1beta1().StatefulSets(c.namespace).Update(ctx, o, opts)
	case *v1alpha1.DaemonSet:
		obj, err = c.client.AppsV1alpha1().DaemonSets(c.namespace).Update(ctx, o, opts)
	default:
		return nil, fmt.Errorf("unknown workload %T", w.Object)
	}
	if err != nil {
		return nil, err
	}
	return newWorkload(w.Ref, obj), nil
}

func (c workloads) patch(ctx context.Context, ref Ref, pt types.PatchType, data []byte, opts metav1.PatchOptions) (*Workload, error) {
	var obj runtime.Object
	var err error
	switch ref.Kind {
	case CloneSet:
		obj, err = c.client.AppsV1alpha1().CloneSets(c.namespace).Patch(ctx, ref.Name, pt, data, opts)
	case StatefulSet:
		obj, err = c.client.AppsV1beta1().StatefulSets(c.namespace).Patch(ctx, ref.Name, pt, data, opts)
	case DaemonSet:
		obj, err = c.client.AppsV1alpha1().DaemonSets(c.namespace).Patch(ctx, ref.Name, pt, data, opts)
	default:
		return nil, fmt.Errorf("unknown kind %q", ref.Kind)
	}
	if err != nil {
		return nil, err
	}
	return newWorkload(ref, obj), nil
}

// watch watches the one workload from resourceVersion.
func (c workloads) watch(ctx context.Context, ref Ref, resourceVersion string) (watch.Interface, error) {
	opts := metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", ref.Name).String(),
		ResourceVersion: resourceVersion,
	}
	switch ref.Kind {
	case CloneSet:
		return c.client.AppsV1alpha1().CloneSets(c.namespace).Watch(ctx, opts)
	case StatefulSet:
		return c.client.AppsV1beta1().StatefulSets(c.namespace).Watch(ctx, opts)
	case DaemonSet:
		return c.client.AppsV1alpha1().DaemonSets(c.namespace).Watch(ctx, opts)
	}
	return nil, fmt.Errorf("unknown kind %q", ref.Kind)
}

// newWorkloads is the workloads client of the factory's namespace.
func newWorkloads(f Factory) (workloads, error) {
	ns, err := f.Namespace()
	if err != nil {
		return workloads{}, err
	}
	client, err := f.Kruise()
	if err != nil {
		return workloads{}, err
	}
	return workloads{client: client, namespace: ns}, nil
}
