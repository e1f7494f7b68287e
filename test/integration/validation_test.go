package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/test/integration/framework"
)

// invalidCreate is an object the server must refuse with 422 on the named field, storing nothing.
type invalidCreate struct {
	name  string
	field string
	ops   objOps
}

// objOps creates an object named objName and reads it back.
type objOps struct {
	create func(ctx context.Context, s *framework.Server, objName string) error
	get    func(ctx context.Context, s *framework.Server, objName string) error
}

// createOps are the objOps of a kind: newObj named, changed by mutate, created through client.
func createOps[T any](client func(*framework.Server) updateClient[T], newObj func(string) T, mutate func(T)) objOps {
	return objOps{create: func(ctx context.Context, s *framework.Server, name string) error {
		obj := newObj(name)
		mutate(obj)
		_, err := client(s).Create(ctx, obj, metav1.CreateOptions{})
		return err
	}, get: func(ctx context.Context, s *framework.Server, name string) error {
		_, err := client(s).Get(ctx, name, metav1.GetOptions{})
		return err
	}}
}

func createCloneSet(mutate func(*appsv1alpha1.CloneSet)) objOps {
	return createOps(func(s *framework.Server) updateClient[*appsv1alpha1.CloneSet] {
		return s.Client.AppsV1alpha1().CloneSets("default")
	}, newCloneSet, mutate)
}

func createSidecarSet(mutate func(*appsv1alpha1.SidecarSet)) objOps {
	return createOps(func(s *framework.Server) updateClient[*appsv1alpha1.SidecarSet] {
		return s.Client.AppsV1alpha1().SidecarSets()
	}, newSidecarSet, mutate)
}

func createCRR(mutate func(*appsv1alpha1.ContainerRecreateRequest)) objOps {
	return createOps(func(s *framework.Server) updateClient[*appsv1alpha1.ContainerRecreateRequest] {
		return s.Client.AppsV1alpha1().ContainerRecreateRequests("default")
	}, newCRR, mutate)
}

func invalid(name, field string, ops objOps) invalidCreate {
	return invalidCreate{name: name, field: field, ops: ops}
}

func TestValidationOnCreate(t *testing.T) {
	t.Parallel()
	s := framework.StartServer(t)

	cases := []invalidCreate{
		// CloneSet
		invalid("cloneset without selector", "spec.selector",
			createCloneSet(func(c *appsv1alpha1.CloneSet) { c.Spec.Selector = nil })),
		invalid("cloneset with an empty selector", "spec.selector",
			createCloneSet(func(c *appsv1alpha1.CloneSet) { c.Spec.Selector = &metav1.LabelSelector{} })),
		invalid("cloneset selector not matching the template", "spec.template.metadata.labels",
			createCloneSet(func(c *appsv1alpha1.CloneSet) { c.Spec.Template.Labels = map[string]string{"app": "other"} })),
		invalid("cloneset container without image", "spec.template.spec.containers[0].image",
			createCloneSet(func(c *appsv1alpha1.CloneSet) { c.Spec.Template.Spec.Containers[0].Image = "" })),
		invalid("cloneset without containers", "spec.template.spec.containers",
			createCloneSet(func(c *appsv1alpha1.CloneSet) { c.Spec.Template.Spec.Containers = nil })),
		invalid("cloneset partition over 100%", "spec.updateStrategy.partition",
			createCloneSet(func(c *appsv1alpha1.CloneSet) {
				c.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("150%"))
			})),
		invalid("cloneset negative partition", "spec.updateStrategy.partition",
			createCloneSet(func(c *appsv1alpha1.CloneSet) { c.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(-1)) })),
		invalid("cloneset negative replicas", "spec.replicas",
			createCloneSet(func(c *appsv1alpha1.CloneSet) { c.Spec.Replicas = ptr.To[int32](-3) })),
		invalid("cloneset unknown update strategy type", "spec.updateStrategy.type",
			createCloneSet(func(c *appsv1alpha1.CloneSet) { c.Spec.UpdateStrategy.Type = "Rolling" })),
		invalid("cloneset maxSurge with InPlaceOnly", "spec.updateStrategy.maxSurge",
			createCloneSet(func(c *appsv1alpha1.CloneSet) {
				c.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType
				c.Spec.UpdateStrategy.MaxSurge = ptr.To(intstr.FromInt32(1))
			})),
		invalid("cloneset maxUnavailable and maxSurge both 0", "spec.updateStrategy.maxUnavailable",
			createCloneSet(func(c *appsv1alpha1.CloneSet) {
				c.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(0))
				c.Spec.UpdateStrategy.MaxSurge = ptr.To(intstr.FromInt32(0))
			})),
		invalid("cloneset mount of an undefined volume", "spec.template.spec.containers[0].volumeMounts[0].name",
			createCloneSet(func(c *appsv1alpha1.CloneSet) {
				c.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "nope", MountPath: "/data"}}
			})),
		invalid("cloneset upper-case name", "metadata.name", objOps{
			create: func(ctx context.Context, s *framework.Server, _ string) error {
				return createCloneSet(func(*appsv1alpha1.CloneSet) {}).create(ctx, s, "Upper-Case")
			},
			get: func(ctx context.Context, s *framework.Server, _ string) error {
				return createCloneSet(nil).get(ctx, s, "Upper-Case")
			}}),

		// SidecarSet
		invalid("sidecarset bad container name", "spec.containers[0].name",
			createSidecarSet(func(s *appsv1alpha1.SidecarSet) { s.Spec.Containers[0].Name = "Bad_Name" })),
		invalid("sidecarset duplicate container name", "spec.containers[1].name",
			createSidecarSet(func(s *appsv1alpha1.SidecarSet) {
				s.Spec.Containers = append(s.Spec.Containers, s.Spec.Containers[0])
			})),
		invalid("sidecarset without selector", "spec.selector",
			createSidecarSet(func(s *appsv1alpha1.SidecarSet) { s.Spec.Selector = nil })),
		invalid("sidecarset without containers", "spec.containers",
			createSidecarSet(func(s *appsv1alpha1.SidecarSet) { s.Spec.Containers = nil })),
		invalid("sidecarset hot upgrade without empty image", "spec.containers[0].upgradeStrategy.hotUpgradeEmptyImage",
			createSidecarSet(func(s *appsv1alpha1.SidecarSet) {
				s.Spec.Containers[0].UpgradeStrategy.UpgradeType = appsv1alpha1.SidecarContainerHotUpgrade
			})),
		invalid("sidecarset namespace and namespaceSelector", "spec.namespaceSelector",
			createSidecarSet(func(s *appsv1alpha1.SidecarSet) {
				s.Spec.Namespace = "default"
				s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
			})),
		invalid("sidecarset unknown podInjectPolicy", "spec.containers[0].podInjectPolicy",
			createSidecarSet(func(s *appsv1alpha1.SidecarSet) { s.Spec.Containers[0].PodInjectPolicy = "Somewhere" })),
		invalid("sidecarset maxUnavailable not a percentage", "spec.updateStrategy.maxUnavailable",
			createSidecarSet(func(s *appsv1alpha1.SidecarSet) {
				s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("half"))
			})),

		// ContainerRecreateRequest
		invalid("crr activeDeadlineSeconds below 3", "spec.activeDeadlineSeconds",
			createCRR(func(c *appsv1alpha1.ContainerRecreateRequest) { c.Spec.ActiveDeadlineSeconds = ptr.To[int64](1) })),
		invalid("crr without podName", "spec.podName",
			createCRR(func(c *appsv1alpha1.ContainerRecreateRequest) { c.Spec.PodName = "" })),
		invalid("crr podName not a name", "spec.podName",
			createCRR(func(c *appsv1alpha1.ContainerRecreateRequest) { c.Spec.PodName = "Not A Pod" })),
		invalid("crr without containers", "spec.containers",
			createCRR(func(c *appsv1alpha1.ContainerRecreateRequest) { c.Spec.Containers = nil })),
		invalid("crr duplicate containers", "spec.containers[1].name",
			createCRR(func(c *appsv1alpha1.ContainerRecreateRequest) {
				c.Spec.Containers = append(c.Spec.Containers, c.Spec.Containers[0])
			})),
		invalid("crr unknown failurePolicy", "spec.strategy.failurePolicy",
			createCRR(func(c *appsv1alpha1.ContainerRecreateRequest) {
				c.Spec.Strategy = &appsv1alpha1.ContainerRecreateRequestStrategy{FailurePolicy: "Retry"}
			})),
		invalid("crr negative ttlSecondsAfterFinished", "spec.ttlSecondsAfterFinished",
			createCRR(func(c *appsv1alpha1.ContainerRecreateRequest) { c.Spec.TTLSecondsAfterFinished = ptr.To[int32](-1) })),
	}
	if len(cases) < 10 {
		t.Fatalf("only %d cases", len(cases))
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			name := fmt.Sprintf("invalid-%d", i)
			expectInvalid(t, tc.ops.create(ctx, s, name), tc.field)
			expectNotFound(t, tc.ops.get(ctx, s, name), "get of the refused object")
		})
	}

	// The server lists none of the refused objects.
	ctx := testContext(t)
	if l, err := s.Client.AppsV1alpha1().CloneSets("").List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Errorf("clonesets stored after refusals: %v %v", names(ptrs(itemsOrNil(l))), err)
	}
	if l, err := s.Client.AppsV1alpha1().SidecarSets().List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Errorf("sidecarsets stored after refusals: %v", err)
	}
	if l, err := s.Client.AppsV1alpha1().ContainerRecreateRequests("").List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Errorf("containerrecreaterequests stored after refusals: %v", err)
	}
}

func itemsOrNil(l *appsv1alpha1.CloneSetList) []appsv1alpha1.CloneSet {
	if l == nil {
		return nil
	}
	return l.Items
}

func TestValidationOnUpdate(t *testing.T) {
	t.Parallel()
	s := framework.StartServer(t)

	cloneSetSpec := func(o *appsv1alpha1.CloneSet) any { return o.Spec }
	t.Run("cloneset selector change", func(t *testing.T) {
		expectUpdateRefused(t, s.Client.AppsV1alpha1().CloneSets("default"), newCloneSet("sel"), cloneSetSpec, func(c *appsv1alpha1.CloneSet) {
			c.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "sel", "tier": "x"}}
			c.Spec.Template.Labels = map[string]string{"app": "sel", "tier": "x"}
		}, "spec.selector")
	})

	t.Run("cloneset InPlaceOnly template change beyond images", func(t *testing.T) {
		ctx := testContext(t)
		c := s.Client.AppsV1alpha1().CloneSets("default")
		cs := newCloneSet("inplace-only")
		cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType
		created, err := c.Create(ctx, cs, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		changed := created.DeepCopy()
		changed.Spec.Template.Spec.Containers[0].Command = []string{"sleep", "1"}
		_, err = c.Update(ctx, changed, metav1.UpdateOptions{})
		expectInvalid(t, err, "spec.template.spec")
		// An image change is what InPlaceOnly allows.
		imageOnly := created.DeepCopy()
		imageOnly.Spec.Template.Spec.Containers[0].Image = "inplace.local/app:v2"
		if _, err := c.Update(ctx, imageOnly, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("InPlaceOnly image change: %v", err)
		}
	})

	t.Run("cloneset invalid spec on update", func(t *testing.T) {
		expectUpdateRefused(t, s.Client.AppsV1alpha1().CloneSets("default"), newCloneSet("upd"), cloneSetSpec, func(c *appsv1alpha1.CloneSet) {
			c.Spec.Template.Spec.Containers[0].Image = ""
		}, "spec.template.spec.containers[0].image")
	})

	t.Run("crr spec change", func(t *testing.T) {
		crrSpec := func(o *appsv1alpha1.ContainerRecreateRequest) any { return o.Spec }
		for name, mutate := range map[string]func(*appsv1alpha1.ContainerRecreateRequest){
			"podName":    func(c *appsv1alpha1.ContainerRecreateRequest) { c.Spec.PodName = "another-pod" },
			"containers": func(c *appsv1alpha1.ContainerRecreateRequest) { c.Spec.Containers[0].Name = "other" },
			"deadline":   func(c *appsv1alpha1.ContainerRecreateRequest) { c.Spec.ActiveDeadlineSeconds = ptr.To[int64](60) },
			"strategy": func(c *appsv1alpha1.ContainerRecreateRequest) {
				c.Spec.Strategy.FailurePolicy = appsv1alpha1.ContainerRecreateRequestFailurePolicyIgnore
			},
		} {
			t.Run(name, func(t *testing.T) {
				expectUpdateRefused(t, s.Client.AppsV1alpha1().ContainerRecreateRequests("default"), newCRR("frozen-"+strings.ToLower(name)), crrSpec, mutate, "spec")
			})
		}
	})

	t.Run("crr pod labels are immutable", func(t *testing.T) {
		ctx := testContext(t)
		c := s.Client.AppsV1alpha1().ContainerRecreateRequests("default")
		crr := newCRR("labelled")
		crr.Labels = map[string]string{appsv1alpha1.ContainerRecreateRequestNodeNameKey: "node-a"}
		created, err := c.Create(ctx, crr, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		changed := created.DeepCopy()
		changed.Labels[appsv1alpha1.ContainerRecreateRequestNodeNameKey] = "node-b"
		_, err = c.Update(ctx, changed, metav1.UpdateOptions{})
		expectInvalid(t, err, "metadata.labels[crr.apps.kruise.io/node-name]")
	})

	t.Run("sidecarset upgrade type change", func(t *testing.T) {
		expectUpdateRefused(t, s.Client.AppsV1alpha1().SidecarSets(), newSidecarSet("cold"), func(o *appsv1alpha1.SidecarSet) any { return o.Spec }, func(ss *appsv1alpha1.SidecarSet) {
			ss.Spec.Containers[0].UpgradeStrategy = appsv1alpha1.SidecarContainerUpgradeStrategy{
				UpgradeType: appsv1alpha1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: "inplace.local/app:empty"}
		}, "spec.containers[0].upgradeStrategy.upgradeType")
	})

	t.Run("status validation", func(t *testing.T) {
		ctx := testContext(t)
		c := s.Client.AppsV1alpha1().CloneSets("default")
		created, err := c.Create(ctx, newCloneSet("status"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		changed := created.DeepCopy()
		changed.Status.Replicas = -1
		_, err = c.UpdateStatus(ctx, changed, metav1.UpdateOptions{})
		expectInvalid(t, err, "status.replicas")

		crrs := s.Client.AppsV1alpha1().ContainerRecreateRequests("default")
		crr, err := crrs.Create(ctx, newCRR("done"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		crr.Status.Phase = appsv1alpha1.ContainerRecreateRequestCompleted
		crr, err = crrs.UpdateStatus(ctx, crr, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("completing: %v", err)
		}
		crr.Status.Phase = appsv1alpha1.ContainerRecreateRequestRecreating
		_, err = crrs.UpdateStatus(ctx, crr, metav1.UpdateOptions{})
		expectInvalid(t, err, "status.phase")
	})
}

// expectUpdateRefused creates obj, expects the update that change makes of it refused with 422
// naming fields, and re-reads the object to check the refusal stored nothing: the same
// resourceVersion, generation and spec as created.
func expectUpdateRefused[T interface {
	metav1.Object
	DeepCopy() T
}](t *testing.T, c updateClient[T], obj T, spec func(T) any, change func(T), fields ...string) {
	t.Helper()
	ctx := testContext(t)
	created, err := c.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	changed := created.DeepCopy()
	change(changed)
	_, err = c.Update(ctx, changed, metav1.UpdateOptions{})
	expectInvalid(t, err, fields...)
	got, err := c.Get(ctx, created.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get after the refused update: %v", err)
	}
	if got.GetResourceVersion() != created.GetResourceVersion() || got.GetGeneration() != created.GetGeneration() {
		t.Errorf("the refused update was stored: resourceVersion %s -> %s, generation %d -> %d",
			created.GetResourceVersion(), got.GetResourceVersion(), created.GetGeneration(), got.GetGeneration())
	}
	if !equality.Semantic.DeepEqual(spec(got), spec(created)) {
		t.Errorf("the spec changed after a refused update:\n got %+v\nwant %+v", spec(got), spec(created))
	}
}
