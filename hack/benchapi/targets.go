package main

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	typedv1alpha1 "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned/typed/apps/v1alpha1"
)

// A target is the client of one path, in one namespace. It keeps what each create answered, so
// that update sends it back with one field changed, without reading first.
type target interface {
	create(ctx context.Context, name string, labels map[string]string) error
	get(ctx context.Context, name string) error
	update(ctx context.Context, name string) error
	// list returns one page: its number of objects, the continue token and the resourceVersion.
	list(ctx context.Context, limit int64, cont string) (int, string, string, error)
	// watchAdded watches from rv and sends the name of every ADDED object until ctx ends.
	watchAdded(ctx context.Context, rv, labelSelector string) (<-chan string, error)
	deleteAll(ctx context.Context) error
}

// dynamicTarget speaks JSON through the dynamic client, as kubectl and most tools do.
type dynamicTarget struct {
	res        dynamic.ResourceInterface
	apiVersion string
	stored     sync.Map // name -> *unstructured.Unstructured
}

func newDynamicTarget(cfg *rest.Config, gvr schema.GroupVersionResource, namespace string) (target, error) {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &dynamicTarget{res: client.Resource(gvr).Namespace(namespace), apiVersion: gvr.GroupVersion().String()}, nil
}

func (d *dynamicTarget) create(ctx context.Context, name string, labels map[string]string) error {
	obj := cloneSet(d.apiVersion, name)
	if labels != nil {
		obj.SetLabels(labels)
	}
	created, err := d.res.Create(ctx, obj, metav1.CreateOptions{})
	if err == nil {
		d.stored.Store(name, created)
	}
	return err
}

func (d *dynamicTarget) get(ctx context.Context, name string) error {
	_, err := d.res.Get(ctx, name, metav1.GetOptions{})
	return err
}

func (d *dynamicTarget) update(ctx context.Context, name string) error {
	v, ok := d.stored.Load(name)
	if !ok {
		return fmt.Errorf("%s was not created", name)
	}
	obj := v.(*unstructured.Unstructured)
	if err := unstructured.SetNestedField(obj.Object, int64(3), "spec", "replicas"); err != nil {
		return err
	}
	_, err := d.res.Update(ctx, obj, metav1.UpdateOptions{})
	return err
}

func (d *dynamicTarget) list(ctx context.Context, limit int64, cont string) (int, string, string, error) {
	l, err := d.res.List(ctx, metav1.ListOptions{Limit: limit, Continue: cont})
	if err != nil {
		return 0, "", "", err
	}
	return len(l.Items), l.GetContinue(), l.GetResourceVersion(), nil
}

func (d *dynamicTarget) watchAdded(ctx context.Context, rv, labelSelector string) (<-chan string, error) {
	w, err := d.res.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, LabelSelector: labelSelector})
	if err != nil {
		return nil, err
	}
	return added(ctx, w, func(obj runtime.Object) (string, bool) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return "", false
		}
		return u.GetName(), true
	}), nil
}

func (d *dynamicTarget) deleteAll(ctx context.Context) error {
	d.stored.Clear()
	return d.res.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
}

// protobufTarget speaks protobuf through inplace's generated clientset, as inplace's own programs
// and kube-controller-manager's collectors do.
type protobufTarget struct {
	client typedv1alpha1.CloneSetInterface
	stored sync.Map // name -> *v1alpha1.CloneSet
}

func newProtobufTarget(cfg *rest.Config, namespace string) (target, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf
	client, err := clientset.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &protobufTarget{client: client.AppsV1alpha1().CloneSets(namespace)}, nil
}

func (p *protobufTarget) create(ctx context.Context, name string, labels map[string]string) error {
	obj := &v1alpha1.CloneSet{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(cloneSet(v1alpha1.SchemeGroupVersion.String(), name).Object, obj); err != nil {
		return err
	}
	if labels != nil {
		obj.Labels = labels
	}
	created, err := p.client.Create(ctx, obj, metav1.CreateOptions{})
	if err == nil {
		p.stored.Store(name, created)
	}
	return err
}

func (p *protobufTarget) get(ctx context.Context, name string) error {
	_, err := p.client.Get(ctx, name, metav1.GetOptions{})
	return err
}

func (p *protobufTarget) update(ctx context.Context, name string) error {
	v, ok := p.stored.Load(name)
	if !ok {
		return fmt.Errorf("%s was not created", name)
	}
	obj := v.(*v1alpha1.CloneSet)
	replicas := int32(3)
	obj.Spec.Replicas = &replicas
	_, err := p.client.Update(ctx, obj, metav1.UpdateOptions{})
	return err
}

func (p *protobufTarget) list(ctx context.Context, limit int64, cont string) (int, string, string, error) {
	l, err := p.client.List(ctx, metav1.ListOptions{Limit: limit, Continue: cont})
	if err != nil {
		return 0, "", "", err
	}
	return len(l.Items), l.Continue, l.ResourceVersion, nil
}

func (p *protobufTarget) watchAdded(ctx context.Context, rv, labelSelector string) (<-chan string, error) {
	w, err := p.client.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, LabelSelector: labelSelector})
	if err != nil {
		return nil, err
	}
	return added(ctx, w, func(obj runtime.Object) (string, bool) {
		c, ok := obj.(*v1alpha1.CloneSet)
		if !ok {
			return "", false
		}
		return c.Name, true
	}), nil
}

func (p *protobufTarget) deleteAll(ctx context.Context) error {
	p.stored.Clear()
	return p.client.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
}

// added sends the name of every ADDED object of w until ctx ends, then stops w.
func added(ctx context.Context, w watch.Interface, nameOf func(runtime.Object) (string, bool)) <-chan string {
	out := make(chan string)
	go func() {
		defer close(out)
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				if name, ok := nameOf(ev.Object); ok && ev.Type == watch.Added {
					select {
					case out <- name:
					case <-ctx.Done():
						return
					}
				}
			}
		}
	}()
	return out
}
