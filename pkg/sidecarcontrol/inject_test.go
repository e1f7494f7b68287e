package sidecarcontrol

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

var now = metav1.NewTime(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))

func upgradeSpecs(t *testing.T, pod *corev1.Pod, key string) map[string]pub.SidecarSetUpgradeSpec {
	t.Helper()
	m := map[string]pub.SidecarSetUpgradeSpec{}
	if err := json.Unmarshal([]byte(pod.Annotations[key]), &m); err != nil {
		t.Fatalf("annotation %s=%q: %v", key, pod.Annotations[key], err)
	}
	return m
}

func envValue(c *corev1.Container, name string) string {
	if e := envVar(c, name); e != nil {
		return e.Value
	}
	return "<none>"
}

func TestInject(t *testing.T) {
	cases := []struct {
		name  string
		pod   *corev1.Pod
		sets  func(t *testing.T) []*appsv1alpha1.SidecarSet
		check func(t *testing.T, in, out *corev1.Pod, res *Result)
	}{{
		name: "docs sample: before the app container, volume, IS_INJECTED, annotations",
		pod:  samplePod(),
		sets: func(t *testing.T) []*appsv1alpha1.SidecarSet { return []*appsv1alpha1.SidecarSet{sample(t)} },
		check: func(t *testing.T, in, out *corev1.Pod, res *Result) {
			if got := names(out.Spec.Containers); !slices.Equal(got, []string{"sidecar1", "main"}) {
				t.Errorf("containers %v", got)
			}
			c := container(out, "sidecar1")
			if envValue(c, "IS_INJECTED") != "true" || c.Image != "inplace.local/app:v1" || len(c.VolumeMounts) != 1 {
				t.Errorf("sidecar1 %+v", c)
			}
			if len(out.Spec.Volumes) != 1 || out.Spec.Volumes[0].Name != "log-volume" || out.Spec.Volumes[0].EmptyDir == nil {
				t.Errorf("volumes %+v", out.Spec.Volumes)
			}
			hash, _ := Hash(sample(t))
			hashWithoutImage, _ := HashWithoutImage(sample(t))
			got := upgradeSpecs(t, out, appsv1alpha1.SidecarSetHashAnnotation)["log-agent"]
			want := pub.SidecarSetUpgradeSpec{UpdateTimestamp: now, Hash: hash, SidecarSetName: "log-agent", SidecarList: []string{"sidecar1"}}
			if got.Hash != want.Hash || !got.UpdateTimestamp.Equal(&now) || got.SidecarSetName != want.SidecarSetName || !slices.Equal(got.SidecarList, want.SidecarList) {
				t.Errorf("hash annotation %+v, want %+v", got, want)
			}
			if got := upgradeSpecs(t, out, appsv1alpha1.SidecarSetHashWithoutImageAnnotation)["log-agent"]; got.Hash != hashWithoutImage {
				t.Errorf("hash-without-image annotation %+v, want hash %s", got, hashWithoutImage)
			}
			if got := out.Annotations[appsv1alpha1.SidecarSetListAnnotation]; got != "log-agent" {
				t.Errorf("injected list %q", got)
			}
			if !slices.Equal(res.Injected, []string{"log-agent"}) {
				t.Errorf("Injected %v", res.Injected)
			}
			if len(in.Spec.Containers) != 1 || in.Annotations != nil {
				t.Errorf("input Pod modified")
			}
		},
	}, {
		name: "hash annotation taken from the SidecarSet, controllerRevision from its status",
		pod:  samplePod(),
		sets: func(t *testing.T) []*appsv1alpha1.SidecarSet {
			s := sample(t)
			s.Annotations = map[string]string{appsv1alpha1.SidecarSetHashAnnotation: "h1", appsv1alpha1.SidecarSetHashWithoutImageAnnotation: "h2"}
			s.Status.LatestRevision = "log-agent-abc"
			return []*appsv1alpha1.SidecarSet{s}
		},
		check: func(t *testing.T, in, out *corev1.Pod, res *Result) {
			raw := out.Annotations[appsv1alpha1.SidecarSetHashAnnotation]
			want := `{"log-agent":{"updateTimestamp":"2025-01-02T03:04:05Z","hash":"h1","sidecarSetName":"log-agent","sidecarList":["sidecar1"],"controllerRevision":"log-agent-abc"}}`
			if raw != want {
				t.Errorf("hash annotation\n got %s\nwant %s", raw, want)
			}
			raw = out.Annotations[appsv1alpha1.SidecarSetHashWithoutImageAnnotation]
			want = `{"log-agent":{"updateTimestamp":"2025-01-02T03:04:05Z","hash":"h2","sidecarSetName":"log-agent","sidecarList":["sidecar1"]}}`
			if raw != want {
				t.Errorf("hash-without-image annotation\n got %s\nwant %s", raw, want)
			}
		},
	}, {
		name: "placement: Before in front, After and empty policy at the end, in SidecarSet then spec order",
		pod:  samplePod(corev1.Container{Name: "main"}, corev1.Container{Name: "second"}),
		sets: func(t *testing.T) []*appsv1alpha1.SidecarSet {
			b := sidecarSet("b", func(s *appsv1alpha1.SidecarSet) {
				s.Spec.Containers = []appsv1alpha1.SidecarContainer{
					sidecar("b-after", func(c *appsv1alpha1.SidecarContainer) { c.PodInjectPolicy = appsv1alpha1.AfterAppContainerType }),
					sidecar("b-before", nil), // defaulted to BeforeAppContainer
				}
			})
			a := sidecarSet("a", func(s *appsv1alpha1.SidecarSet) {
				s.Spec.Containers = []appsv1alpha1.SidecarContainer{
					sidecar("z-before", func(c *appsv1alpha1.SidecarContainer) { c.PodInjectPolicy = appsv1alpha1.BeforeAppContainerType }),
					sidecar("a-after", func(c *appsv1alpha1.SidecarContainer) { c.PodInjectPolicy = appsv1alpha1.AfterAppContainerType }),
				}
			})
			b.Spec.Containers = append(b.Spec.Containers, sidecar("b-nopolicy", nil)) // not defaulted: after
			return []*appsv1alpha1.SidecarSet{b, a}
		},
		check: func(t *testing.T, in, out *corev1.Pod, res *Result) {
			want := []string{"z-before", "b-before", "main", "second", "a-after", "b-after", "b-nopolicy"}
			if got := names(out.Spec.Containers); !slices.Equal(got, want) {
				t.Errorf("containers %v, want %v", got, want)
			}
			if got := out.Annotations[appsv1alpha1.SidecarSetListAnnotation]; got != "a,b" {
				t.Errorf("injected list %q", got)
			}
			if !slices.Equal(res.Injected, []string{"a", "b"}) {
				t.Errorf("Injected %v", res.Injected)
			}
		},
	}, {
		name: "init containers sorted by name after the Pod's; native sidecars in sidecarList",
		pod: func() *corev1.Pod {
			p := samplePod()
			p.Spec.InitContainers = []corev1.Container{{Name: "pod-init"}}
			return p
		}(),
		sets: func(t *testing.T) []*appsv1alpha1.SidecarSet {
			return []*appsv1alpha1.SidecarSet{sidecarSet("s", func(s *appsv1alpha1.SidecarSet) {
				s.Spec.InitContainers = []appsv1alpha1.SidecarContainer{
					sidecar("z-init", nil),
					sidecar("a-native", func(c *appsv1alpha1.SidecarContainer) { c.RestartPolicy = ptrTo(corev1.ContainerRestartPolicyAlways) }),
				}
			})}
		},
		check: func(t *testing.T, in, out *corev1.Pod, res *Result) {
			if got := names(out.Spec.InitContainers); !slices.Equal(got, []string{"pod-init", "a-native", "z-init"}) {
				t.Errorf("init containers %v", got)
			}
			if got := names(out.Spec.Containers); !slices.Equal(got, []string{"main"}) {
				t.Errorf("containers %v", got)
			}
			if envValue(container(out, "z-init"), "IS_INJECTED") != "true" {
				t.Errorf("init container without IS_INJECTED")
			}
			if got := upgradeSpecs(t, out, appsv1alpha1.SidecarSetHashAnnotation)["s"].SidecarList; !slices.Equal(got, []string{"a-native"}) {
				t.Errorf("sidecarList %v", got)
			}
		},
	}, {
		name: "volumes: only those the sidecars mount, the Pod's of the same name wins, no duplicates",
		pod: func() *corev1.Pod {
			p := samplePod()
			p.Spec.Volumes = []corev1.Volume{{Name: "log-volume", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/x"}}}}
			return p
		}(),
		sets: func(t *testing.T) []*appsv1alpha1.SidecarSet {
			mounts := func(c *appsv1alpha1.SidecarContainer) {
				c.VolumeMounts = []corev1.VolumeMount{{Name: "log-volume", MountPath: "/log"}, {Name: "cfg", MountPath: "/cfg"}}
			}
			withVolumes := func(s *appsv1alpha1.SidecarSet) {
				s.Spec.Volumes = []corev1.Volume{{Name: "log-volume"}, {Name: "cfg"}, {Name: "unused"}}
			}
			return []*appsv1alpha1.SidecarSet{
				sidecarSet("a", func(s *appsv1alpha1.SidecarSet) {
					withVolumes(s)
					s.Spec.Containers = []appsv1alpha1.SidecarContainer{sidecar("a", mounts)}
				}),
				sidecarSet("b", func(s *appsv1alpha1.SidecarSet) {
					withVolumes(s)
					s.Spec.Containers = []appsv1alpha1.SidecarContainer{sidecar("b", mounts)}
				}),
			}
		},
		check: func(t *testing.T, in, out *corev1.Pod, res *Result) {
			var got []string
			for _, v := range out.Spec.Volumes {
				got = append(got, v.Name)
			}
			if !slices.Equal(got, []string{"log-volume", "cfg"}) || out.Spec.Volumes[0].HostPath == nil {
				t.Errorf("volumes %+v", out.Spec.Volumes)
			}
		},
	}, {
		name: "shareVolumePolicy: app mounts shared, a mount path the sidecar uses skipped, subPathExpr env copied",
		pod: samplePod(
			corev1.Container{Name: "main",
				Env: []corev1.EnvVar{{Name: "POD_NAME", Value: "p"}},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "data", MountPath: "/data", SubPathExpr: "logs/$(POD_NAME)"},
					{Name: "other-log", MountPath: "/var/log"},
				}},
			corev1.Container{Name: "old-sidecar", Env: []corev1.EnvVar{{Name: "IS_INJECTED", Value: "true"}},
				VolumeMounts: []corev1.VolumeMount{{Name: "x", MountPath: "/x"}}},
		),
		sets: func(t *testing.T) []*appsv1alpha1.SidecarSet {
			s := sample(t)
			s.Spec.Containers[0].ShareVolumePolicy.Type = appsv1alpha1.ShareVolumePolicyEnabled
			return []*appsv1alpha1.SidecarSet{s}
		},
		check: func(t *testing.T, in, out *corev1.Pod, res *Result) {
			c := container(out, "sidecar1")
			var got []string
			for _, m := range c.VolumeMounts {
				got = append(got, m.Name+":"+m.MountPath)
			}
			if !slices.Equal(got, []string{"log-volume:/var/log", "data:/data"}) {
				t.Errorf("mounts %v", got)
			}
			if envValue(c, "POD_NAME") != "p" {
				t.Errorf("subPathExpr env not copied: %+v", c.Env)
			}
		},
	}, {
		name: "transferEnv: envName and envNames, from a named container and from a label",
		pod: func() *corev1.Pod {
			p := samplePod(
				corev1.Container{Name: "main", Env: []corev1.EnvVar{{Name: "A", Value: "a"}, {Name: "B", Value: "b"}, {Name: "C", Value: "c"}}},
				corev1.Container{Name: "other", Env: []corev1.EnvVar{{Name: "D", Value: "d"}, {Name: "A", Value: "other-a"}}},
			)
			p.Labels["source"] = "other"
			return p
		}(),
		sets: func(t *testing.T) []*appsv1alpha1.SidecarSet {
			return []*appsv1alpha1.SidecarSet{sidecarSet("s", func(s *appsv1alpha1.SidecarSet) {
				s.Spec.Containers = []appsv1alpha1.SidecarContainer{sidecar("side", func(c *appsv1alpha1.SidecarContainer) {
					c.Env = []corev1.EnvVar{{Name: "C", Value: "own"}}
					c.TransferEnv = []appsv1alpha1.TransferEnvVar{
						{SourceContainerName: "main", EnvName: "C", EnvNames: []string{"B", "A", "MISSING"}},
						{SourceContainerNameFrom: &appsv1alpha1.SourceContainerNameSource{
							FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['source']"}}, EnvNames: []string{"D", "A"}},
					}
				})}
			})}
		},
		check: func(t *testing.T, in, out *corev1.Pod, res *Result) {
			var got []string
			for _, e := range container(out, "side").Env {
				got = append(got, e.Name+"="+e.Value)
			}
			want := []string{"C=own", "IS_INJECTED=true", "A=a", "B=b", "D=d"}
			if !slices.Equal(got, want) {
				t.Errorf("env %v, want %v", got, want)
			}
		},
	}, {
		name: "imagePullSecrets merged without duplicates",
		pod: func() *corev1.Pod {
			p := samplePod()
			p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pod"}, {Name: "shared"}}
			return p
		}(),
		sets: func(t *testing.T) []*appsv1alpha1.SidecarSet {
			s := sample(t)
			s.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "shared"}, {Name: "sidecar"}}
			return []*appsv1alpha1.SidecarSet{s}
		},
		check: func(t *testing.T, in, out *corev1.Pod, res *Result) {
			var got []string
			for _, s := range out.Spec.ImagePullSecrets {
				got = append(got, s.Name)
			}
			if !slices.Equal(got, []string{"pod", "shared", "sidecar"}) {
				t.Errorf("imagePullSecrets %v", got)
			}
		},
	}, {
		name: "a container the Pod already has is replaced in place, not added again",
		pod:  samplePod(corev1.Container{Name: "main"}, corev1.Container{Name: "sidecar1", Image: "old"}),
		sets: func(t *testing.T) []*appsv1alpha1.SidecarSet { return []*appsv1alpha1.SidecarSet{sample(t)} },
		check: func(t *testing.T, in, out *corev1.Pod, res *Result) {
			if got := names(out.Spec.Containers); !slices.Equal(got, []string{"main", "sidecar1"}) {
				t.Errorf("containers %v", got)
			}
			if c := container(out, "sidecar1"); c.Image != "inplace.local/app:v1" {
				t.Errorf("sidecar1 image %s", c.Image)
			}
		},
	}, {
		name: "existing annotations kept: older hash format, injected list",
		pod: func() *corev1.Pod {
			p := samplePod()
			p.Annotations = map[string]string{
				appsv1alpha1.SidecarSetHashAnnotation: `{"older":"abc"}`,
				appsv1alpha1.SidecarSetListAnnotation: "older",
			}
			return p
		}(),
		sets: func(t *testing.T) []*appsv1alpha1.SidecarSet { return []*appsv1alpha1.SidecarSet{sample(t)} },
		check: func(t *testing.T, in, out *corev1.Pod, res *Result) {
			m := upgradeSpecs(t, out, appsv1alpha1.SidecarSetHashAnnotation)
			if m["older"].Hash != "abc" || m["older"].SidecarSetName != "older" || m["log-agent"].Hash == "" {
				t.Errorf("hash annotation %+v", m)
			}
			if got := out.Annotations[appsv1alpha1.SidecarSetListAnnotation]; got != "log-agent,older" {
				t.Errorf("injected list %q", got)
			}
		},
	}, {
		name: "a SidecarSet without containers only patches metadata",
		pod:  samplePod(),
		sets: func(t *testing.T) []*appsv1alpha1.SidecarSet {
			return []*appsv1alpha1.SidecarSet{sidecarSet("meta", func(s *appsv1alpha1.SidecarSet) {
				s.Spec.Volumes = []corev1.Volume{{Name: "v"}}
				s.Spec.PatchPodMetadata = []appsv1alpha1.SidecarSetPatchPodMetadata{{Annotations: map[string]string{"k": "v"}}}
			})}
		},
		check: func(t *testing.T, in, out *corev1.Pod, res *Result) {
			if out.Annotations["k"] != "v" || len(out.Annotations) != 1 || len(out.Spec.Volumes) != 0 || len(res.Injected) != 0 {
				t.Errorf("annotations %v, volumes %v, injected %v", out.Annotations, out.Spec.Volumes, res.Injected)
			}
		},
	}, {
		name: "hot upgrade: a working pair -1/-2 with version env and annotations",
		pod:  samplePod(),
		sets: func(t *testing.T) []*appsv1alpha1.SidecarSet {
			return []*appsv1alpha1.SidecarSet{sidecarSet("mesh", func(s *appsv1alpha1.SidecarSet) {
				s.Spec.Containers = []appsv1alpha1.SidecarContainer{sidecar("envoy", func(c *appsv1alpha1.SidecarContainer) {
					c.UpgradeStrategy = appsv1alpha1.SidecarContainerUpgradeStrategy{
						UpgradeType: appsv1alpha1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: "empty:v1"}
				})}
			})}
		},
		check: func(t *testing.T, in, out *corev1.Pod, res *Result) {
			if got := names(out.Spec.Containers); !slices.Equal(got, []string{"envoy-1", "envoy-2", "main"}) {
				t.Errorf("containers %v", got)
			}
			c1, c2 := container(out, "envoy-1"), container(out, "envoy-2")
			if c1.Image != "envoy:v1" || c2.Image != "empty:v1" {
				t.Errorf("images %s %s", c1.Image, c2.Image)
			}
			if e := envVar(c2, "SIDECARSET_VERSION_ALT"); e == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.annotations['versionalt.sidecarset.kruise.io/envoy-2']" {
				t.Errorf("envoy-2 env %+v", c2.Env)
			}
			if envValue(c1, "IS_INJECTED") != "true" {
				t.Errorf("envoy-1 env %+v", c1.Env)
			}
			want := map[string]string{
				"version.sidecarset.kruise.io/envoy-1": "1", "versionalt.sidecarset.kruise.io/envoy-1": "0",
				"version.sidecarset.kruise.io/envoy-2": "0", "versionalt.sidecarset.kruise.io/envoy-2": "1",
				WorkingHotUpgradeContainerAnnotation: `{"envoy":"envoy-1"}`,
			}
			for k, v := range want {
				if out.Annotations[k] != v {
					t.Errorf("annotation %s=%q, want %q", k, out.Annotations[k], v)
				}
			}
			if got := upgradeSpecs(t, out, appsv1alpha1.SidecarSetHashAnnotation)["mesh"].SidecarList; !slices.Equal(got, []string{"envoy"}) {
				t.Errorf("sidecarList %v", got)
			}
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.pod.DeepCopy()
			res, err := Inject(tc.pod, tc.sets(t), now)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(in, tc.pod) {
				t.Errorf("Inject modified its input Pod")
			}
			tc.check(t, tc.pod, res.Pod, res)
		})
	}
}

func TestInjectIdempotent(t *testing.T) {
	s := sample(t)
	first, err := Inject(samplePod(), []*appsv1alpha1.SidecarSet{s}, now)
	if err != nil {
		t.Fatal(err)
	}
	second, err := Inject(first.Pod, []*appsv1alpha1.SidecarSet{s}, now)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(first.Pod)
	b, _ := json.Marshal(second.Pod)
	if string(a) != string(b) {
		t.Errorf("injecting twice changed the Pod:\n%s\n%s", a, b)
	}
}

func TestInjectErrors(t *testing.T) {
	p := samplePod()
	p.Annotations = map[string]string{appsv1alpha1.SidecarSetHashAnnotation: "not json"}
	if _, err := Inject(p, []*appsv1alpha1.SidecarSet{sample(t)}, now); err == nil || !strings.Contains(err.Error(), "does not decode") {
		t.Errorf("err %v", err)
	}
	p = samplePod()
	p.Annotations = map[string]string{"j": "{}"}
	s := sample(t)
	s.Spec.PatchPodMetadata = []appsv1alpha1.SidecarSetPatchPodMetadata{{PatchPolicy: appsv1alpha1.SidecarSetMergePatchJsonPatchPolicy, Annotations: map[string]string{"j": "{"}}}
	if _, err := Inject(p, []*appsv1alpha1.SidecarSet{s}, now); err == nil || !strings.Contains(err.Error(), "patchPodMetadata") {
		t.Errorf("err %v", err)
	}
}
