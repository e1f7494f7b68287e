package kubectlplugin

import (
	"context"
	"testing"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	inplacefake "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned/fake"
	"github.com/inplace-dev/inplace/pkg/workload/history"
)

// testFactory hands the commands fake (or httptest-backed) clients.
type testFactory struct {
	namespace string
	kruise    versioned.Interface
	kube      kubernetes.Interface
}

func (f *testFactory) Namespace() (string, error)           { return f.namespace, nil }
func (f *testFactory) Kruise() (versioned.Interface, error) { return f.kruise, nil }
func (f *testFactory) Kube() (kubernetes.Interface, error)  { return f.kube, nil }

func newFakeFactory(kruiseObjs []runtime.Object, kubeObjs ...runtime.Object) (*testFactory, *inplacefake.Clientset, *kubefake.Clientset) {
	k := inplacefake.NewClientset(kruiseObjs...)
	c := kubefake.NewClientset(kubeObjs...)
	return &testFactory{namespace: "default", kruise: k, kube: c}, k, c
}

// run runs `kubectl inplace ARGS...` on the factory and returns its output.
func run(t *testing.T, f Factory, args ...string) (string, string, error) {
	t.Helper()
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	cmd := NewCommand(f, streams)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

func template(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "demo"}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
			Containers:     []corev1.Container{{Name: "main", Image: image}, {Name: "side", Image: "side:v1"}},
		},
	}
}

func cloneSet(name string, mutate ...func(*v1alpha1.CloneSet)) *v1alpha1.CloneSet {
	cs := &v1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Generation: 1},
		Spec: v1alpha1.CloneSetSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "demo"}},
			Template: template("app:v1"),
		},
		Status: v1alpha1.CloneSetStatus{ObservedGeneration: 1, Replicas: 3, UpdatedReplicas: 3, UpdatedReadyReplicas: 3, ReadyReplicas: 3, ExpectedUpdatedReplicas: 3},
	}
	for _, m := range mutate {
		m(cs)
	}
	return cs
}

func statefulSet(name string, mutate ...func(*v1beta1.StatefulSet)) *v1beta1.StatefulSet {
	s := &v1beta1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Generation: 1},
		Spec: v1beta1.StatefulSetSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "demo"}},
			Template: template("app:v1"),
			UpdateStrategy: v1beta1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &v1beta1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0)}},
		},
		Status: v1beta1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 3, ReadyReplicas: 3, UpdatedReplicas: 3, UpdatedReadyReplicas: 3, UpdateRevision: name + "-2"},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func daemonSet(name string, mutate ...func(*v1alpha1.DaemonSet)) *v1alpha1.DaemonSet {
	d := &v1alpha1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Generation: 1},
		Spec: v1alpha1.DaemonSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "demo"}},
			Template:       template("app:v1"),
			UpdateStrategy: v1alpha1.DaemonSetUpdateStrategy{Type: v1alpha1.RollingUpdateDaemonSetStrategyType, RollingUpdate: &v1alpha1.RollingUpdateDaemonSet{}},
		},
		Status: v1alpha1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 2, UpdatedNumberScheduled: 2, NumberAvailable: 2, NumberReady: 2},
	}
	for _, m := range mutate {
		m(d)
	}
	return d
}

// revision is a ControllerRevision of owner holding t, as the controllers store it.
func revision(t *testing.T, owner metav1.Object, kind string, n int64, tmpl corev1.PodTemplateSpec) *appsv1.ControllerRevision {
	t.Helper()
	data, err := history.TemplateData(&tmpl)
	if err != nil {
		t.Fatal(err)
	}
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: owner.GetName() + "-" + string(rune('a'+n)), Namespace: owner.GetNamespace(),
			Labels: map[string]string{"app": "demo"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: kind, Name: owner.GetName(),
				UID: owner.GetUID(), Controller: ptr.To(true)}},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: n,
	}
}

type cobraCommand = cobra.Command

func genericiooptionsTest() genericiooptions.IOStreams {
	streams, _, _, _ := genericiooptions.NewTestIOStreams()
	return streams
}
