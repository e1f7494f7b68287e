package sidecarcontrol

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/features"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
)

const (
	// InjectedEnvName is the env var set to "true" in every injected container: it tells an
	// injected sidecar from an app container (shareVolumePolicy shares only app containers' mounts).
	InjectedEnvName = "IS_INJECTED"
)

// Result is what Inject made of a Pod.
type Result struct {
	// Pod is the injected copy; the Pod given to Inject is not modified.
	Pod *corev1.Pod
	// Injected names the SidecarSets whose containers or init containers went into the Pod, in the
	// order they were applied (by name).
	Injected []string
}

// Inject injects sidecarSets — the SidecarSets that match pod (see Matching), each already at the
// revision to inject — into a copy of pod being created, as OpenKruise's Pod webhook does on
// CREATE. now stamps the updateTimestamp of the hash annotations.
//
// SidecarSets are applied in name order (OpenKruise takes them in its cache's list order, which
// is not defined). For each, in order: spec.patchPodMetadata patches the Pod's annotations (see
// PatchPodMetadata); then every init container and container of the SidecarSet is prepared:
//
//   - with shareVolumePolicy enabled it also mounts every volumeMount of the Pod's app containers
//     (containers without IS_INJECTED=true), skipping a mount path it already uses (as a mount or
//     a device path), the first app container's mount winning; env vars that a shared mount's
//     subPathExpr refers to ($(NAME)) are copied from that app container;
//   - env IS_INJECTED=true is appended, then the transferEnv vars (envName and envNames, sorted,
//     read from sourceContainerName or the container named by sourceContainerNameFrom's fieldRef
//     metadata.labels['k'] / metadata.annotations['k']; missing ones are skipped) and the
//     subPathExpr vars, each only when the container has no env var of that name yet;
//   - the SidecarSet's volumes that its own volumeMounts and volumeDevices name are collected;
//   - a container (or a native-sidecar init container) with upgradeType HotUpgrade becomes the
//     pair <name>-1 (working) and <name>-2 (image hotUpgradeEmptyImage), see hotUpgradePair.
//
// Then, when at least one container or init container was prepared: init containers, sorted by
// name (stably), and containers are merged into the Pod — one whose name the Pod already has
// replaces it at its index (so re-injecting never duplicates a container), a new init container
// goes after the Pod's, a new container before the app containers for BeforeAppContainer and
// after them otherwise (in SidecarSet then spec order); the collected volumes are appended
// unless the Pod has a volume of that name (the Pod's wins, then the first SidecarSet's);
// imagePullSecrets are appended without duplicate names; the annotations
// kruise.io/sidecarset-hash and kruise.io/sidecarset-hash-without-image get an UpgradeSpec per
// injected SidecarSet (merged into what the Pod already records), and
// kruise.io/sidecarset-injected-list the sorted, comma-joined names of all given SidecarSets plus
// those already listed. When nothing was prepared only the metadata patches are kept.
func Inject(pod *corev1.Pod, sidecarSets []*appsv1alpha1.SidecarSet, now metav1.Time) (*Result, error) {
	out := pod.DeepCopy()
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	ordered := make([]*appsv1alpha1.SidecarSet, len(sidecarSets))
	for i, s := range sidecarSets {
		ordered[i] = s.DeepCopy() // containers are modified while being prepared
	}
	sortByName(ordered)

	for _, s := range ordered {
		if _, err := PatchPodMetadata(&out.ObjectMeta, s.Spec.PatchPodMetadata); err != nil {
			return nil, fmt.Errorf("sidecarset %s: spec.patchPodMetadata: %w", s.Name, err)
		}
	}

	b, err := newBuilder(out)
	if err != nil {
		return nil, err
	}
	b.sidecars = sidecarNames(ordered)
	for _, s := range ordered {
		if err := b.add(s, now); err != nil {
			return nil, err
		}
	}
	res := &Result{Pod: out, Injected: b.injected}
	if len(b.containers) == 0 && len(b.initContainers) == 0 {
		return res, nil
	}

	slices.SortStableFunc(b.initContainers, func(x, y *appsv1alpha1.SidecarContainer) int {
		return strings.Compare(x.Name, y.Name)
	})
	out.Spec.InitContainers = mergeContainers(out.Spec.InitContainers, b.initContainers)
	if features.Enabled(features.EnableSortSidecarContainerByName) {
		// OpenKruise's gate: sidecar containers by name, not in the SidecarSets' order.
		slices.SortStableFunc(b.containers, func(x, y *appsv1alpha1.SidecarContainer) int {
			return strings.Compare(x.Name, y.Name)
		})
	}
	out.Spec.Containers = mergeContainers(out.Spec.Containers, b.containers)
	out.Spec.Volumes = mergeVolumes(out.Spec.Volumes, b.volumes)
	out.Spec.ImagePullSecrets = mergeSecrets(out.Spec.ImagePullSecrets, b.secrets)
	for k, v := range b.annotations {
		out.Annotations[k] = v
	}
	data, err := json.Marshal(b.hashes)
	if err != nil {
		return nil, err
	}
	out.Annotations[appsv1alpha1.SidecarSetHashAnnotation] = string(data)
	if data, err = json.Marshal(b.hashesWithoutImage); err != nil {
		return nil, err
	}
	out.Annotations[appsv1alpha1.SidecarSetHashWithoutImageAnnotation] = string(data)
	out.Annotations[appsv1alpha1.SidecarSetListAnnotation] = strings.Join(sets.List(b.names), ",")
	return res, nil
}

// builder collects what the SidecarSets add to one Pod (OpenKruise's buildSidecars).
type builder struct {
	pod                *corev1.Pod
	containers         []*appsv1alpha1.SidecarContainer
	initContainers     []*appsv1alpha1.SidecarContainer
	volumes            []corev1.Volume
	secrets            []corev1.LocalObjectReference
	annotations        map[string]string
	hashes             map[string]pub.SidecarSetUpgradeSpec
	hashesWithoutImage map[string]pub.SidecarSetUpgradeSpec
	hotUpgradeWorking  map[string]string
	names              sets.Set[string]
	// sidecars are the container names of all the SidecarSets being injected: never the targets
	// of a resourcesPolicy.
	sidecars sets.Set[string]
	injected []string
}

func newBuilder(pod *corev1.Pod) (*builder, error) {
	b := &builder{pod: pod, annotations: map[string]string{}, names: sets.New[string]()}
	var err error
	if b.hashes, err = inplaceupdate.SidecarSetHashes(pod, appsv1alpha1.SidecarSetHashAnnotation); err != nil {
		return nil, err
	}
	if b.hashesWithoutImage, err = inplaceupdate.SidecarSetHashes(pod, appsv1alpha1.SidecarSetHashWithoutImageAnnotation); err != nil {
		return nil, err
	}
	b.hotUpgradeWorking = HotUpgradeWorkingContainers(pod)
	if list := pod.Annotations[appsv1alpha1.SidecarSetListAnnotation]; list != "" {
		b.names.Insert(strings.Split(list, ",")...)
	}
	return b, nil
}

func (b *builder) add(s *appsv1alpha1.SidecarSet, now metav1.Time) error {
	b.names.Insert(s.Name)
	hash, err := revisionOf(s, false)
	if err != nil {
		return err
	}
	hashWithoutImage, err := revisionOf(s, true)
	if err != nil {
		return err
	}
	volumes := map[string]*corev1.Volume{}
	for i := range s.Spec.Volumes {
		volumes[s.Spec.Volumes[i].Name] = &s.Spec.Volumes[i]
	}
	sidecarList := sets.New[string]()
	injecting := false

	for i := range s.Spec.InitContainers {
		c := &s.Spec.InitContainers[i]
		native := inplaceupdate.IsNativeSidecar(&c.Container)
		if native {
			sidecarList.Insert(c.Name)
		}
		if err := applyResourcesPolicy(c, b.pod, b.sidecars); err != nil {
			return fmt.Errorf("sidecarset %s: init container %s: %w", s.Name, c.Name, err)
		}
		b.prepare(c, volumes)
		injecting = true
		if native && c.UpgradeStrategy.UpgradeType == appsv1alpha1.SidecarContainerHotUpgrade {
			b.initContainers = append(b.initContainers, b.hotUpgradePair(c)...)
		} else {
			b.initContainers = append(b.initContainers, c)
		}
	}
	b.secrets = append(b.secrets, s.Spec.ImagePullSecrets...)

	for i := range s.Spec.Containers {
		c := &s.Spec.Containers[i]
		sidecarList.Insert(c.Name)
		if err := applyResourcesPolicy(c, b.pod, b.sidecars); err != nil {
			return fmt.Errorf("sidecarset %s: container %s: %w", s.Name, c.Name, err)
		}
		b.prepare(c, volumes)
		injecting = true
		if c.UpgradeStrategy.UpgradeType == appsv1alpha1.SidecarContainerHotUpgrade {
			b.containers = append(b.containers, b.hotUpgradePair(c)...)
		} else {
			b.containers = append(b.containers, c)
		}
	}

	if injecting {
		list := sets.List(sidecarList)
		b.hashes[s.Name] = pub.SidecarSetUpgradeSpec{UpdateTimestamp: now, Hash: hash, SidecarSetName: s.Name,
			SidecarList: list, ControllerRevision: s.Status.LatestRevision}
		b.hashesWithoutImage[s.Name] = pub.SidecarSetUpgradeSpec{UpdateTimestamp: now, Hash: hashWithoutImage,
			SidecarSetName: s.Name, SidecarList: list}
		b.injected = append(b.injected, s.Name)
	}
	return nil
}

// prepare turns a SidecarSet container into the container to inject (see Inject) and collects
// the SidecarSet volumes it uses.
func (b *builder) prepare(c *appsv1alpha1.SidecarContainer, volumes map[string]*corev1.Volume) {
	sharedMounts, subPathEnvs := sharedVolumeMounts(c, b.pod)
	envs := mergeEnv(transferEnvs(c, b.pod), subPathEnvs)
	for _, m := range c.VolumeMounts {
		if v, ok := volumes[m.Name]; ok {
			b.volumes = append(b.volumes, *v)
		}
	}
	for _, d := range c.VolumeDevices {
		if v, ok := volumes[d.Name]; ok {
			b.volumes = append(b.volumes, *v)
		}
	}
	c.VolumeMounts = mergeVolumeMounts(&c.Container, sharedMounts)
	c.Env = append(c.Env, corev1.EnvVar{Name: InjectedEnvName, Value: "true"})
	c.Env = mergeEnv(c.Env, envs)
}

// isInjectedContainer reports whether a Pod container was injected from a SidecarSet.
func isInjectedContainer(c *corev1.Container) bool {
	for _, e := range c.Env {
		if e.Name == InjectedEnvName {
			return e.Value == "true"
		}
	}
	return false
}

// subPathExprVar finds the $(NAME) references of a subPathExpr.
var subPathExprVar = regexp.MustCompile(`\$\(([-._a-zA-Z][-._a-zA-Z0-9]*)\)`)

// sharedVolumeMounts are the app containers' volumeMounts a sidecar with shareVolumePolicy
// enabled mounts too, and the app containers' env vars their subPathExprs refer to.
func sharedVolumeMounts(c *appsv1alpha1.SidecarContainer, pod *corev1.Pod) ([]corev1.VolumeMount, []corev1.EnvVar) {
	if c.ShareVolumePolicy.Type != appsv1alpha1.ShareVolumePolicyEnabled {
		return nil, nil
	}
	var mounts []corev1.VolumeMount
	var envs []corev1.EnvVar
	for i := range pod.Spec.Containers {
		app := &pod.Spec.Containers[i]
		if isInjectedContainer(app) {
			continue
		}
		for _, m := range app.VolumeMounts {
			mounts = append(mounts, m)
			for _, ref := range subPathExprVar.FindAllStringSubmatch(m.SubPathExpr, -1) {
				if e := envVar(app, ref[1]); e != nil {
					envs = append(envs, *e)
				}
			}
		}
	}
	return mounts, envs
}

func envVar(c *corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

// transferEnvs are the env vars a sidecar's transferEnv copies from the Pod's containers.
func transferEnvs(c *appsv1alpha1.SidecarContainer, pod *corev1.Pod) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, t := range c.TransferEnv {
		names := sets.New[string](t.EnvNames...)
		if t.EnvName != "" {
			names.Insert(t.EnvName)
		}
		source := t.SourceContainerName
		if t.SourceContainerNameFrom != nil && t.SourceContainerNameFrom.FieldRef != nil {
			name, ok := containerNameFromFieldRef(t.SourceContainerNameFrom.FieldRef.FieldPath, pod)
			if !ok {
				continue
			}
			source = name
		}
		var from *corev1.Container
		for i := range pod.Spec.Containers {
			if pod.Spec.Containers[i].Name == source {
				from = &pod.Spec.Containers[i]
				break
			}
		}
		if from == nil {
			continue
		}
		for _, name := range sets.List(names) {
			if e := envVar(from, name); e != nil {
				out = append(out, *e)
			}
		}
	}
	return out
}

// containerNameFromFieldRef reads metadata.labels['k'] or metadata.annotations['k'] of the Pod,
// the only field paths OpenKruise takes for sourceContainerNameFrom.
func containerNameFromFieldRef(path string, pod *corev1.Pod) (string, bool) {
	for prefix, values := range map[string]map[string]string{
		"metadata.labels": pod.Labels, "metadata.annotations": pod.Annotations,
	} {
		if key, ok := strings.CutPrefix(path, prefix+"['"); ok {
			if key, ok = strings.CutSuffix(key, "']"); ok && key != "" {
				return values[key], true
			}
		}
	}
	return "", false
}

// mergeEnv appends the vars of add whose names env does not have yet.
func mergeEnv(env, add []corev1.EnvVar) []corev1.EnvVar {
	seen := sets.New[string]()
	for _, e := range env {
		seen.Insert(e.Name)
	}
	for _, e := range add {
		if !seen.Has(e.Name) {
			env = append(env, e)
			seen.Insert(e.Name)
		}
	}
	return env
}

// mergeVolumeMounts appends the mounts of add whose mount path the container does not use yet,
// as a mount or as a device path.
func mergeVolumeMounts(c *corev1.Container, add []corev1.VolumeMount) []corev1.VolumeMount {
	paths := sets.New[string]()
	out := c.VolumeMounts
	for _, m := range c.VolumeMounts {
		paths.Insert(m.MountPath)
	}
	for _, d := range c.VolumeDevices {
		paths.Insert(d.DevicePath)
	}
	for _, m := range add {
		if !paths.Has(m.MountPath) {
			out = append(out, m)
			paths.Insert(m.MountPath)
		}
	}
	return out
}

// mergeVolumes appends the volumes of add whose names are not taken yet.
func mergeVolumes(volumes, add []corev1.Volume) []corev1.Volume {
	seen := sets.New[string]()
	for _, v := range volumes {
		seen.Insert(v.Name)
	}
	for _, v := range add {
		if !seen.Has(v.Name) {
			volumes = append(volumes, v)
			seen.Insert(v.Name)
		}
	}
	return volumes
}

// mergeSecrets appends the secrets of add whose names are not taken yet (and drops the Pod's
// own duplicates, as OpenKruise).
func mergeSecrets(secrets, add []corev1.LocalObjectReference) []corev1.LocalObjectReference {
	var out []corev1.LocalObjectReference
	seen := sets.New[string]()
	for _, s := range append(slices.Clip(secrets), add...) {
		if !seen.Has(s.Name) {
			out = append(out, s)
			seen.Insert(s.Name)
		}
	}
	return out
}

// mergeContainers places injected containers into a Pod's list: one whose name the Pod has
// replaces it at its index; others go in front (BeforeAppContainer) or at the end.
func mergeContainers(pod []corev1.Container, injected []*appsv1alpha1.SidecarContainer) []corev1.Container {
	index := map[string]int{}
	for i, c := range pod {
		index[c.Name] = i
	}
	var before, after []corev1.Container
	for _, c := range injected {
		if i, ok := index[c.Name]; ok {
			pod[i] = c.Container
			continue
		}
		if c.PodInjectPolicy == appsv1alpha1.BeforeAppContainerType {
			before = append(before, c.Container)
		} else {
			after = append(after, c.Container)
		}
	}
	out := make([]corev1.Container, 0, len(before)+len(pod)+len(after))
	out = append(out, before...)
	out = append(out, pod...)
	return append(out, after...)
}
