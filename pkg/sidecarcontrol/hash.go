package sidecarcontrol

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/util/rand"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
)

// Hash is the SidecarSet's kruise.io/sidecarset-hash, computed as OpenKruise computes it
// (sidecarcontrol.SidecarSetHash): the JSON of {"containers": spec.containers} — plus
// "initContainers": all of spec.initContainers when at least one of them is a native sidecar
// (restartPolicy Always) — hashed with SHA-256, the hex digest passed through
// rand.SafeEncodeString. OpenKruise hashes the SidecarSet after its defaults, so the caller passes
// a defaulted SidecarSet (as stored). The JSON field order is the Go field order of
// SidecarContainer and corev1.Container, which is the same as kruise-api's v1alpha1 types, so the
// value equals OpenKruise's for the same manifest.
func Hash(sidecarSet *appsv1alpha1.SidecarSet) (string, error) {
	return hashContainers(sidecarSet.Spec.Containers, sidecarSet.Spec.InitContainers)
}

// HashWithoutImage is the SidecarSet's kruise.io/sidecarset-hash-without-image: Hash with the
// image of every container and init container left empty, so that two SidecarSets differing only
// in images share it (an image-only change can be rolled out in place).
func HashWithoutImage(sidecarSet *appsv1alpha1.SidecarSet) (string, error) {
	return hashContainers(withoutImages(sidecarSet.Spec.Containers), withoutImages(sidecarSet.Spec.InitContainers))
}

func withoutImages(in []appsv1alpha1.SidecarContainer) []appsv1alpha1.SidecarContainer {
	if in == nil {
		return nil
	}
	out := make([]appsv1alpha1.SidecarContainer, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
		out[i].Image = ""
	}
	return out
}

func hashContainers(containers, initContainers []appsv1alpha1.SidecarContainer) (string, error) {
	// encoding/json writes map keys sorted, so "containers" comes before "initContainers".
	m := map[string]any{"containers": containers}
	for i := range initContainers {
		if inplaceupdate.IsNativeSidecar(&initContainers[i].Container) {
			// All init containers, not only the native sidecars, as OpenKruise does.
			m["initContainers"] = initContainers
			break
		}
	}
	data, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	return rand.SafeEncodeString(fmt.Sprintf("%x", sha256.Sum256(data))), nil
}

// revisionOf is the SidecarSet's hash as a Pod records it: the kruise.io/sidecarset-hash (or
// -without-image) annotation of the SidecarSet, which OpenKruise's SidecarSet webhook writes on
// every create and update; computed here when the SidecarSet does not carry it.
func revisionOf(sidecarSet *appsv1alpha1.SidecarSet, withoutImage bool) (string, error) {
	key, compute := appsv1alpha1.SidecarSetHashAnnotation, Hash
	if withoutImage {
		key, compute = appsv1alpha1.SidecarSetHashWithoutImageAnnotation, HashWithoutImage
	}
	if h := sidecarSet.Annotations[key]; h != "" {
		return h, nil
	}
	return compute(sidecarSet)
}

// CurrentHash is the SidecarSet's kruise.io/sidecarset-hash: its annotation, computed when absent.
func CurrentHash(sidecarSet *appsv1alpha1.SidecarSet) (string, error) {
	return revisionOf(sidecarSet, false)
}
