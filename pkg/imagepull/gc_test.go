package imagepull

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

func withTTL(t v1alpha1.ImageTagSpec, ttl int32) v1alpha1.ImageTagSpec {
	t.PullPolicy = &v1alpha1.ImageTagPullPolicy{TTLSecondsAfterFinished: ptr.To(ttl)}
	return t
}

func TestGC(t *testing.T) {
	live, dead := jobRef("live", "u-live"), jobRef("dead", "u-dead")
	recreated := jobRef("live", "u-old") // same name as a live job, another UID
	foreign := corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "d", UID: "u-d"}
	kruiseV1beta1 := corev1.ObjectReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "ImagePullJob", Namespace: "ns", Name: "x", UID: "u-x"}
	liveJobs := sets.New[types.UID]("u-live")
	now := t0.Add(1000 * time.Second)
	for _, tc := range []struct {
		name        string
		spec        v1alpha1.NodeImageSpec
		status      *v1alpha1.NodeImageStatus
		want        v1alpha1.NodeImageSpec
		wantChanged bool
	}{
		{name: "live owner: kept",
			spec: specOf("nginx", tagSpec("1", 0, live)), want: specOf("nginx", tagSpec("1", 0, live))},
		{name: "dead and re-created owners removed, live kept",
			spec: specOf("nginx", tagSpec("1", 0, dead, live, recreated)), want: specOf("nginx", tagSpec("1", 0, live)), wantChanged: true},
		{name: "all owners gone: tag and image dropped",
			spec: specOf("nginx", tagSpec("1", 0, dead), tagSpec("2", 0, recreated)), want: v1alpha1.NodeImageSpec{}, wantChanged: true},
		{name: "other kinds are not judged",
			spec: specOf("nginx", tagSpec("1", 0, foreign, dead)), want: specOf("nginx", tagSpec("1", 0, foreign)), wantChanged: true},
		{name: "any version of the ImagePullJob kind is judged",
			spec: specOf("nginx", tagSpec("1", 0, kruiseV1beta1, live)), want: specOf("nginx", tagSpec("1", 0, live)), wantChanged: true},
		{name: "a tag that never had owners stays",
			spec: specOf("nginx", tagSpec("1", 0)), want: specOf("nginx", tagSpec("1", 0))},
		{name: "TTL passed since completion: dropped, other image kept",
			spec: v1alpha1.NodeImageSpec{Images: map[string]v1alpha1.ImageSpec{
				"nginx": {Tags: []v1alpha1.ImageTagSpec{withTTL(tagSpec("1", 2, live), 100)}},
				"redis": {Tags: []v1alpha1.ImageTagSpec{tagSpec("7", 0, live)}}}},
			status: statusOf("nginx", tagStat("1", 2, v1alpha1.ImagePhaseSucceeded, atp(900))),
			want:   specOf("redis", tagSpec("7", 0, live)), wantChanged: true},
		{name: "TTL not passed yet: kept",
			spec:   specOf("nginx", withTTL(tagSpec("1", 2, live), 101)),
			status: statusOf("nginx", tagStat("1", 2, v1alpha1.ImagePhaseFailed, atp(900))),
			want:   specOf("nginx", withTTL(tagSpec("1", 2, live), 101))},
		{name: "completion of an older version does not start the TTL",
			spec:   specOf("nginx", withTTL(tagSpec("1", 3, live), 1)),
			status: statusOf("nginx", tagStat("1", 2, v1alpha1.ImagePhaseSucceeded, atp(0))),
			want:   specOf("nginx", withTTL(tagSpec("1", 3, live), 1))},
		{name: "pull not finished: kept",
			spec:   specOf("nginx", withTTL(tagSpec("1", 3, live), 1)),
			status: statusOf("nginx", tagStat("1", 3, v1alpha1.ImagePhasePulling, nil)),
			want:   specOf("nginx", withTTL(tagSpec("1", 3, live), 1))},
		{name: "ownerless tag past its TTL: dropped",
			spec:   specOf("nginx", withTTL(tagSpec("1", 0), 10), tagSpec("2", 0)),
			status: statusOf("nginx", tagStat("1", 0, v1alpha1.ImagePhaseSucceeded, atp(0))),
			want:   specOf("nginx", tagSpec("2", 0)), wantChanged: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.spec.DeepCopy()
			got, changed := GC(tc.spec, tc.status, liveJobs, now)
			if changed != tc.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tc.wantChanged)
			}
			checkEqual(t, "spec", tc.want, got)
			checkEqual(t, "input spec modified", *before, tc.spec)
		})
	}
}

func TestNextGC(t *testing.T) {
	spec := v1alpha1.NodeImageSpec{Images: map[string]v1alpha1.ImageSpec{
		"nginx": {Tags: []v1alpha1.ImageTagSpec{withTTL(tagSpec("1", 0), 100), withTTL(tagSpec("2", 0), 100), tagSpec("3", 0)}},
		"redis": {Tags: []v1alpha1.ImageTagSpec{withTTL(tagSpec("7", 1), 500)}},
	}}
	status := &v1alpha1.NodeImageStatus{ImageStatuses: map[string]v1alpha1.ImageStatus{
		"nginx": {Tags: []v1alpha1.ImageTagStatus{
			tagStat("1", 0, v1alpha1.ImagePhaseSucceeded, atp(50)),
			tagStat("2", 0, v1alpha1.ImagePhasePulling, nil),
			tagStat("3", 0, v1alpha1.ImagePhaseSucceeded, atp(0))}},
		"redis": {Tags: []v1alpha1.ImageTagStatus{tagStat("7", 1, v1alpha1.ImagePhaseFailed, atp(0))}},
	}}
	for _, tc := range []struct {
		now    int
		want   time.Duration
		wantOK bool
	}{
		{now: 60, want: 90 * time.Second, wantOK: true}, // nginx:1 at 150
		{now: 200, want: 0, wantOK: true},               // already due
		{now: 0, want: 150 * time.Second, wantOK: true}, // earliest of 150 and 500
	} {
		got, ok := NextGC(&spec, status, t0.Add(time.Duration(tc.now)*time.Second))
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("now %d: NextGC = %v, %v; want %v, %v", tc.now, got, ok, tc.want, tc.wantOK)
		}
	}
	if _, ok := NextGC(&spec, nil, t0); ok {
		t.Error("NextGC with no status found a TTL counting down")
	}
}
