package validation

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

func validDaemonSet() *apps.DaemonSet {
	cs := validCloneSet()
	tmpl := cs.Spec.Template
	tmpl.Spec.Containers[0].VolumeMounts = tmpl.Spec.Containers[0].VolumeMounts[:1] // no claim templates here
	return &apps.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default", ResourceVersion: "1"},
		Spec: apps.DaemonSetSpec{
			Selector: cs.Spec.Selector,
			Template: tmpl,
			UpdateStrategy: apps.DaemonSetUpdateStrategy{
				Type: apps.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &apps.RollingUpdateDaemonSet{
					Type:           apps.InplaceRollingUpdateType,
					MaxUnavailable: intOrStr(intstr.FromString("20%")),
					MaxSurge:       intOrStr(intstr.FromInt32(0)),
					Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}},
					Partition:      intOrStr(intstr.FromInt32(1)),
				},
			},
			MinReadySeconds:      3,
			BurstReplicas:        intOrStr(intstr.FromInt32(250)),
			RevisionHistoryLimit: ptr.To[int32](10),
			Lifecycle:            &pub.Lifecycle{PreDelete: &pub.LifecycleHook{FinalizersHandler: []string{"example.com/drain"}}},
		},
	}
}

func TestValidateDaemonSet(t *testing.T) {
	expectErrors(t, ValidateDaemonSet(validDaemonSet()))

	ru := "spec.updateStrategy.rollingUpdate"
	cases := []struct {
		name   string
		mutate func(d *apps.DaemonSet)
		wants  []want
	}{
		{"bad rolling update type", func(d *apps.DaemonSet) { d.Spec.UpdateStrategy.RollingUpdate.Type = "Fast" },
			[]want{notSupported(ru + ".rollingUpdateType")}},
		{"surge and unavailable both set", func(d *apps.DaemonSet) {
			d.Spec.UpdateStrategy.RollingUpdate.Type = apps.StandardRollingUpdateType
			d.Spec.UpdateStrategy.RollingUpdate.MaxSurge = intOrStr(intstr.FromInt32(1))
		}, []want{invalid(ru + ".maxSurge")}},
		{"surge and unavailable both zero", func(d *apps.DaemonSet) {
			d.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = intOrStr(intstr.FromString("0%"))
		}, []want{required(ru + ".maxUnavailable")}},
		{"in place with surge", func(d *apps.DaemonSet) {
			d.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = intOrStr(intstr.FromInt32(0))
			d.Spec.UpdateStrategy.RollingUpdate.MaxSurge = intOrStr(intstr.FromInt32(1))
		}, []want{invalid(ru + ".maxSurge")}},
		{"negative partition", func(d *apps.DaemonSet) {
			d.Spec.UpdateStrategy.RollingUpdate.Partition = intOrStr(intstr.FromInt32(-1))
		},
			[]want{invalid(ru + ".partition")}},
		{"partition above 100%", func(d *apps.DaemonSet) {
			d.Spec.UpdateStrategy.RollingUpdate.Partition = intOrStr(intstr.FromString("150%"))
		},
			[]want{invalid(ru + ".partition")}},
		{"bad node selector", func(d *apps.DaemonSet) {
			d.Spec.UpdateStrategy.RollingUpdate.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"bad key!": "x"}}
		}, []want{invalid(ru + ".selector.matchLabels")}},
		{"inPlaceUpdate hook", func(d *apps.DaemonSet) {
			d.Spec.Lifecycle.InPlaceUpdate = &pub.LifecycleHook{FinalizersHandler: []string{"example.com/x"}}
		},
			[]want{forbidden("spec.lifecycle.inPlaceUpdate")}},
		{"negative minReadySeconds", func(d *apps.DaemonSet) { d.Spec.MinReadySeconds = -1 }, []want{invalid("spec.minReadySeconds")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := validDaemonSet()
			tc.mutate(d)
			expectErrors(t, ValidateDaemonSet(d), tc.wants...)
		})
	}
}

func TestValidateDaemonSetUpdate(t *testing.T) {
	old := validDaemonSet()
	d := validDaemonSet()
	d.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
	expectErrors(t, ValidateDaemonSetUpdate(d, old))
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "front"}}
	expectErrors(t, ValidateDaemonSetUpdate(d, old), forbidden("spec.selector"))
}
