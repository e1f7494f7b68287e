package imagepull

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

func TestTagPullPolicy(t *testing.T) {
	withPolicy := func(cp v1alpha1.CompletionPolicy, pp *v1alpha1.PullPolicy) *v1alpha1.ImagePullJob {
		j := newJob("j", "u", "nginx")
		j.Spec.CompletionPolicy, j.Spec.PullPolicy = cp, pp
		return j
	}
	always := v1alpha1.CompletionPolicy{Type: v1alpha1.Always}
	never := v1alpha1.CompletionPolicy{Type: v1alpha1.Never}
	pp := &v1alpha1.PullPolicy{TimeoutSeconds: ptr.To[int32](100), BackoffLimit: ptr.To[int32](2)}
	for _, tc := range []struct {
		name   string
		job    *v1alpha1.ImagePullJob
		jitter Jitter
		want   v1alpha1.ImageTagPullPolicy
	}{
		{name: "always, ttl given", job: withPolicy(v1alpha1.CompletionPolicy{Type: v1alpha1.Always, TTLSecondsAfterFinished: ptr.To[int32](60), ActiveDeadlineSeconds: ptr.To[int64](30)}, pp),
			want: v1alpha1.ImageTagPullPolicy{TimeoutSeconds: ptr.To[int32](100), BackoffLimit: ptr.To[int32](2), TTLSecondsAfterFinished: ptr.To[int32](60), ActiveDeadlineSeconds: ptr.To[int64](30)}},
		{name: "always, ttl from deadline", job: withPolicy(v1alpha1.CompletionPolicy{Type: v1alpha1.Always, ActiveDeadlineSeconds: ptr.To[int64](30)}, pp),
			want: v1alpha1.ImageTagPullPolicy{TimeoutSeconds: ptr.To[int32](100), BackoffLimit: ptr.To[int32](2), TTLSecondsAfterFinished: ptr.To[int32](30), ActiveDeadlineSeconds: ptr.To[int64](30)}},
		{name: "always, ttl from timeout x attempts", job: withPolicy(always, pp),
			want: v1alpha1.ImageTagPullPolicy{TimeoutSeconds: ptr.To[int32](100), BackoffLimit: ptr.To[int32](2), TTLSecondsAfterFinished: ptr.To[int32](300)}},
		{name: "always, no retries: one attempt's timeout, not zero", job: withPolicy(always, &v1alpha1.PullPolicy{TimeoutSeconds: ptr.To[int32](60), BackoffLimit: ptr.To[int32](0)}),
			want: v1alpha1.ImageTagPullPolicy{TimeoutSeconds: ptr.To[int32](60), BackoffLimit: ptr.To[int32](0), TTLSecondsAfterFinished: ptr.To[int32](60)}},
		{name: "always, defaults, jitter added", job: withPolicy(always, nil), jitter: func(n int32) int32 { return n - 1 },
			want: v1alpha1.ImageTagPullPolicy{TTLSecondsAfterFinished: ptr.To[int32](600*4 + 299)}},
		{name: "never: a day minus 10 minutes with no jitter, 30 minutes deadline", job: withPolicy(never, pp),
			want: v1alpha1.ImageTagPullPolicy{TimeoutSeconds: ptr.To[int32](100), BackoffLimit: ptr.To[int32](2), TTLSecondsAfterFinished: ptr.To[int32](86400 - 600), ActiveDeadlineSeconds: ptr.To[int64](1800)}},
		{name: "never: deadline is a longer timeout, jitter up to +10 minutes", job: withPolicy(v1alpha1.CompletionPolicy{Type: v1alpha1.Never, TTLSecondsAfterFinished: ptr.To[int32](5)}, &v1alpha1.PullPolicy{TimeoutSeconds: ptr.To[int32](3600)}),
			jitter: func(n int32) int32 { return n - 1 },
			want:   v1alpha1.ImageTagPullPolicy{TimeoutSeconds: ptr.To[int32](3600), TTLSecondsAfterFinished: ptr.To[int32](86400 + 599), ActiveDeadlineSeconds: ptr.To[int64](3600)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkEqual(t, "pull policy", tc.want, *TagPullPolicy(tc.job, tc.jitter))
		})
	}
}

func TestMergeJob(t *testing.T) {
	job := newJob("j", "u1", "nginx:1.25")
	job.Spec.PullSecrets = []string{"reg"}
	job.Spec.SandboxConfig = &v1alpha1.SandboxConfig{Labels: map[string]string{"k": "v"}}
	secrets := PullSecretRefs(job)
	other := jobRef("other", "u2")
	policy := TagPullPolicy(job, nil)
	now := at(100)
	mine := func(tag string, version int64, owners ...corev1.ObjectReference) v1alpha1.ImageTagSpec {
		t := tagSpec(tag, version, owners...)
		t.PullPolicy, t.ImagePullPolicy = policy, v1alpha1.PullIfNotPresent
		return t
	}
	withImage := func(s v1alpha1.NodeImageSpec) v1alpha1.NodeImageSpec {
		for name, img := range s.Images {
			img.PullSecrets, img.SandboxConfig = secrets, job.Spec.SandboxConfig
			s.Images[name] = img
		}
		return s
	}
	newTag := func(version int64) v1alpha1.ImageTagSpec {
		t := mine("1.25", version, jobRef("j", "u1"))
		t.CreatedAt = &now
		return t
	}
	for _, tc := range []struct {
		name        string
		spec        v1alpha1.NodeImageSpec
		status      *v1alpha1.NodeImageStatus
		want        v1alpha1.NodeImageSpec
		wantChanged bool
	}{
		{name: "empty NodeImage: new image, version 0",
			want: withImage(specOf("nginx", newTag(0))), wantChanged: true},
		{name: "new tag after a stale status: one version above it",
			spec:   specOf("nginx", tagSpec("1.24", 0)),
			status: statusOf("nginx", tagStat("1.25", 4, v1alpha1.ImagePhaseSucceeded, atp(0))),
			want:   withImage(specOf("nginx", tagSpec("1.24", 0), newTag(5))), wantChanged: true},
		{name: "tags kept sorted",
			spec: specOf("nginx", tagSpec("1.26", 0), tagSpec("1.24", 3)),
			want: withImage(specOf("nginx", tagSpec("1.24", 3), newTag(0), tagSpec("1.26", 0))), wantChanged: true},
		{name: "already the owner: nothing changes, no new pull",
			spec: withImage(specOf("nginx", mine("1.25", 2, jobRef("j", "u1")))),
			want: withImage(specOf("nginx", mine("1.25", 2, jobRef("j", "u1")))), wantChanged: false},
		{name: "already the owner, secret missing: secret added, version kept",
			spec: specOf("nginx", mine("1.25", 2, jobRef("j", "u1"))),
			want: withImage(specOf("nginx", mine("1.25", 2, jobRef("j", "u1")))), wantChanged: true},
		{name: "tag of another job: owner added, version bumped, createdAt reset, its pull policy kept",
			spec: specOf("nginx", v1alpha1.ImageTagSpec{Tag: "1.25", Version: 7, CreatedAt: atp(0), OwnerReferences: []corev1.ObjectReference{other},
				PullPolicy: &v1alpha1.ImageTagPullPolicy{TimeoutSeconds: ptr.To[int32](1)}, ImagePullPolicy: v1alpha1.PullAlways}),
			want: withImage(specOf("nginx", v1alpha1.ImageTagSpec{Tag: "1.25", Version: 8, CreatedAt: &now, OwnerReferences: []corev1.ObjectReference{other, jobRef("j", "u1")},
				PullPolicy: &v1alpha1.ImageTagPullPolicy{TimeoutSeconds: ptr.To[int32](1)}, ImagePullPolicy: v1alpha1.PullIfNotPresent})), wantChanged: true},
		{name: "other images untouched",
			spec: v1alpha1.NodeImageSpec{Images: map[string]v1alpha1.ImageSpec{"redis": {Tags: []v1alpha1.ImageTagSpec{tagSpec("7", 1, other)}}}},
			want: v1alpha1.NodeImageSpec{Images: map[string]v1alpha1.ImageSpec{
				"redis": {Tags: []v1alpha1.ImageTagSpec{tagSpec("7", 1, other)}},
				"nginx": {PullSecrets: secrets, SandboxConfig: job.Spec.SandboxConfig, Tags: []v1alpha1.ImageTagSpec{newTag(0)}},
			}}, wantChanged: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.spec.DeepCopy()
			got, changed, err := MergeJob(tc.spec, tc.status, job, secrets, now, nil)
			if err != nil {
				t.Fatal(err)
			}
			if changed != tc.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tc.wantChanged)
			}
			checkEqual(t, "spec", tc.want, got)
			checkEqual(t, "input spec modified", *before, tc.spec)
		})
	}
	if _, _, err := MergeJob(v1alpha1.NodeImageSpec{}, nil, newJob("bad", "u", "Bad:Image:Ref"), nil, now, nil); err == nil {
		t.Error("MergeJob accepted an invalid image")
	}
}

func TestRemoveJob(t *testing.T) {
	a, b := jobRef("a", "ua"), jobRef("b", "ub")
	for _, tc := range []struct {
		name        string
		spec        v1alpha1.NodeImageSpec
		want        v1alpha1.NodeImageSpec
		wantChanged bool
	}{
		{name: "sole owner: tag and image dropped",
			spec: specOf("nginx", tagSpec("1", 0, a)), want: v1alpha1.NodeImageSpec{Images: map[string]v1alpha1.ImageSpec{}}, wantChanged: true},
		{name: "shared tag: only the reference goes",
			spec: specOf("nginx", tagSpec("1", 0, b, a), tagSpec("2", 0, a)), want: specOf("nginx", tagSpec("1", 0, b)), wantChanged: true},
		{name: "not an owner: unchanged",
			spec: specOf("nginx", tagSpec("1", 0, b)), want: specOf("nginx", tagSpec("1", 0, b))},
		{name: "a tag without owners stays",
			spec: specOf("nginx", tagSpec("1", 0)), want: specOf("nginx", tagSpec("1", 0))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.spec.DeepCopy()
			got, changed := RemoveJob(tc.spec, "ua")
			if changed != tc.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tc.wantChanged)
			}
			checkEqual(t, "spec", tc.want, got)
			checkEqual(t, "input spec modified", *before, tc.spec)
		})
	}
}

// TestTagSecrets: a tag's pull may use the image's pull secrets of its owners' namespaces only;
// a tag without owners, or with a cluster-scoped owner, all of them.
func TestTagSecrets(t *testing.T) {
	inNS := func(ns string, r corev1.ObjectReference) corev1.ObjectReference { r.Namespace = ns; return r }
	a, b := inNS("team-a", jobRef("a", "ua")), inNS("team-b", jobRef("b", "ub"))
	sa, sb := v1alpha1.ReferenceObject{Namespace: "team-a", Name: "login"}, v1alpha1.ReferenceObject{Namespace: "team-b", Name: "login"}
	image := &v1alpha1.ImageSpec{PullSecrets: []v1alpha1.ReferenceObject{sa, sb}}
	for _, tc := range []struct {
		name string
		tag  v1alpha1.ImageTagSpec
		want []v1alpha1.ReferenceObject
	}{
		{"one owner: its namespace's", tagSpec("1", 0, a), []v1alpha1.ReferenceObject{sa}},
		{"the other namespace's owner", tagSpec("1", 0, b), []v1alpha1.ReferenceObject{sb}},
		{"owners of both namespaces", tagSpec("1", 0, a, b), []v1alpha1.ReferenceObject{sa, sb}},
		{"no owner: all", tagSpec("1", 0), []v1alpha1.ReferenceObject{sa, sb}},
		{"a cluster-scoped owner: all", tagSpec("1", 0, inNS("", jobRef("c", "uc"))), []v1alpha1.ReferenceObject{sa, sb}},
		{"an owner of a third namespace: none", tagSpec("1", 0, inNS("team-c", jobRef("c", "uc"))), nil},
	} {
		if got := TagSecrets(image, &tc.tag); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestRemoveJobDropsItsSecrets: the pull secrets of a namespace leave the image with the last tag
// owned there; the others stay.
func TestRemoveJobDropsItsSecrets(t *testing.T) {
	inNS := func(ns string, r corev1.ObjectReference) corev1.ObjectReference { r.Namespace = ns; return r }
	a, b := inNS("team-a", jobRef("a", "ua")), inNS("team-b", jobRef("b", "ub"))
	sa, sb := v1alpha1.ReferenceObject{Namespace: "team-a", Name: "login"}, v1alpha1.ReferenceObject{Namespace: "team-b", Name: "login"}
	spec := specOf("nginx", tagSpec("1", 0, a), tagSpec("2", 0, b))
	img := spec.Images["nginx"]
	img.PullSecrets = []v1alpha1.ReferenceObject{sa, sb}
	spec.Images["nginx"] = img

	got, changed := RemoveJob(spec, "ua")
	want := specOf("nginx", tagSpec("2", 0, b))
	wimg := want.Images["nginx"]
	wimg.PullSecrets = []v1alpha1.ReferenceObject{sb}
	want.Images["nginx"] = wimg
	if !changed {
		t.Error("RemoveJob changed nothing")
	}
	checkEqual(t, "spec", want, got)
	if len(spec.Images["nginx"].PullSecrets) != 2 {
		t.Errorf("input spec modified: %v", spec.Images["nginx"].PullSecrets)
	}
}

// TagOwnerIndex keys a NodeImage by the owners of its tags that key takes, and nothing else.
func TestTagOwnerIndex(t *testing.T) {
	other := corev1.ObjectReference{Kind: "Other", Namespace: "ns", Name: "x", UID: "ux"}
	ni := &v1alpha1.NodeImage{Spec: specOf("nginx", tagSpec("1", 1, jobRef("a", "ua")), tagSpec("2", 1, jobRef("b", "ub"), other))}
	uids := TagOwnerIndex(func(r corev1.ObjectReference) (string, bool) { return string(r.UID), true })
	jobs := TagOwnerIndex(func(r corev1.ObjectReference) (string, bool) { return r.Name, r.Kind == "ImagePullJob" })
	if got, err := uids(ni); err != nil || !slices.Equal(got, []string{"ua", "ub", "ux"}) {
		t.Errorf("uids %v %v, want ua ub ux", got, err)
	}
	if got, err := jobs(ni); err != nil || !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("jobs %v %v, want a b", got, err)
	}
	if got, err := uids(&corev1.Pod{}); err != nil || got != nil {
		t.Errorf("not a NodeImage: %v %v, want no keys", got, err)
	}
}
