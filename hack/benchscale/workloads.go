package main

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	inplaceinformers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions"
)

// A workload is one kind the benchmark drives: inplace's CloneSet or the native Deployment, with
// the same Pod template, replicas and availability budget (maxUnavailable 20%, no surge).
type workload interface {
	// name is what the report calls the kind and the controller that drives it.
	name() string
	create(ctx context.Context, name string, replicas int32, image string) error
	setImage(ctx context.Context, name, image string) error
	scale(ctx context.Context, name string, replicas int32) error
	deleteAll(ctx context.Context) error
	// informer of the kind in the namespace, started by the caller.
	informer() cache.SharedIndexInformer
	// converged: obj's controller has seen its latest spec and every one of its replicas runs
	// image and is ready, with no other Pod left.
	converged(obj any, replicas int32, image string) bool
	// leftovers: what the kind's controller made that is still in the namespace after deletion.
	leftovers(ctx context.Context) (int, error)
}

// imagePatch replaces the image of the template's only container (JSON patch: the same for both
// kinds and any server).
func imagePatch(image string) []byte {
	return fmt.Appendf(nil, `[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":%q}]`, image)
}

func replicasPatch(replicas int32) []byte {
	return fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)
}

// podTemplate runs on kwok's fake nodes only (label type=kwok, their NoSchedule taint tolerated).
func podTemplate(name, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name, "bench": "scale"}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"type": "kwok"},
			Tolerations: []corev1.Toleration{{
				Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule,
			}},
			Containers: []corev1.Container{{Name: "app", Image: image}},
		},
	}
}

var twentyPercent = intstr.FromString("20%")

type cloneSets struct {
	client    clientset.Interface
	kube      kubernetes.Interface
	namespace string
	inf       cache.SharedIndexInformer
}

func newCloneSets(client clientset.Interface, kube kubernetes.Interface, namespace string) *cloneSets {
	f := inplaceinformers.NewSharedInformerFactoryWithOptions(client, 0, inplaceinformers.WithNamespace(namespace))
	return &cloneSets{client: client, kube: kube, namespace: namespace, inf: f.Apps().V1alpha1().CloneSets().Informer()}
}

func (c *cloneSets) name() string                        { return "CloneSet (inplace-controller)" }
func (c *cloneSets) informer() cache.SharedIndexInformer { return c.inf }

func (c *cloneSets) create(ctx context.Context, name string, replicas int32, image string) error {
	cs := &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.CloneSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: podTemplate(name, image),
			UpdateStrategy: appsv1alpha1.CloneSetUpdateStrategy{
				Type:           appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType,
				MaxUnavailable: &twentyPercent,
			},
		},
	}
	_, err := c.client.AppsV1alpha1().CloneSets(c.namespace).Create(ctx, cs, metav1.CreateOptions{})
	return err
}

func (c *cloneSets) setImage(ctx context.Context, name, image string) error {
	_, err := c.client.AppsV1alpha1().CloneSets(c.namespace).Patch(ctx, name, types.JSONPatchType, imagePatch(image), metav1.PatchOptions{})
	return err
}

func (c *cloneSets) scale(ctx context.Context, name string, replicas int32) error {
	_, err := c.client.AppsV1alpha1().CloneSets(c.namespace).Patch(ctx, name, types.MergePatchType, replicasPatch(replicas), metav1.PatchOptions{})
	return err
}

func (c *cloneSets) deleteAll(ctx context.Context) error {
	return c.client.AppsV1alpha1().CloneSets(c.namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
}

func (c *cloneSets) converged(obj any, replicas int32, image string) bool {
	cs, ok := obj.(*appsv1alpha1.CloneSet)
	if !ok || cs.Status.ObservedGeneration != cs.Generation || cs.Spec.Template.Spec.Containers[0].Image != image {
		return false
	}
	s := cs.Status
	return s.Replicas == replicas && s.ReadyReplicas == replicas && s.UpdatedReplicas == replicas && s.UpdatedReadyReplicas == replicas
}

// leftovers: the CloneSets' ControllerRevisions (garbage-collected through their owner).
func (c *cloneSets) leftovers(ctx context.Context) (int, error) {
	l, err := c.kube.AppsV1().ControllerRevisions(c.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	return len(l.Items), nil
}

type deployments struct {
	client    kubernetes.Interface
	namespace string
	inf       cache.SharedIndexInformer
}

func newDeployments(client kubernetes.Interface, namespace string) *deployments {
	f := kubeinformers.NewSharedInformerFactoryWithOptions(client, 0, kubeinformers.WithNamespace(namespace))
	return &deployments{client: client, namespace: namespace, inf: f.Apps().V1().Deployments().Informer()}
}

func (d *deployments) name() string                        { return "Deployment (kube-controller-manager)" }
func (d *deployments) informer() cache.SharedIndexInformer { return d.inf }

func (d *deployments) create(ctx context.Context, name string, replicas int32, image string) error {
	zero := intstr.FromInt32(0)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: podTemplate(name, image),
			Strategy: appsv1.DeploymentStrategy{
				Type:          appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &twentyPercent, MaxSurge: &zero},
			},
		},
	}
	_, err := d.client.AppsV1().Deployments(d.namespace).Create(ctx, dep, metav1.CreateOptions{})
	return err
}

func (d *deployments) setImage(ctx context.Context, name, image string) error {
	_, err := d.client.AppsV1().Deployments(d.namespace).Patch(ctx, name, types.JSONPatchType, imagePatch(image), metav1.PatchOptions{})
	return err
}

func (d *deployments) scale(ctx context.Context, name string, replicas int32) error {
	_, err := d.client.AppsV1().Deployments(d.namespace).Patch(ctx, name, types.MergePatchType, replicasPatch(replicas), metav1.PatchOptions{})
	return err
}

func (d *deployments) deleteAll(ctx context.Context) error {
	return d.client.AppsV1().Deployments(d.namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
}

func (d *deployments) converged(obj any, replicas int32, image string) bool {
	dep, ok := obj.(*appsv1.Deployment)
	if !ok || dep.Status.ObservedGeneration != dep.Generation || dep.Spec.Template.Spec.Containers[0].Image != image {
		return false
	}
	s := dep.Status
	return s.Replicas == replicas && s.ReadyReplicas == replicas && s.UpdatedReplicas == replicas && s.AvailableReplicas == replicas
}

// leftovers: the Deployments' ReplicaSets (garbage-collected through their owner).
func (d *deployments) leftovers(ctx context.Context) (int, error) {
	l, err := d.client.AppsV1().ReplicaSets(d.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	return len(l.Items), nil
}
