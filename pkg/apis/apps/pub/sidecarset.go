package pub

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// SidecarSetHashKey is the Pod annotation recording, per injected SidecarSet, the hash of the
	// sidecar containers the Pod was given (a JSON object of SidecarSet name to
	// SidecarSetUpgradeSpec). The SidecarSet carries its own hash under the same key.
	SidecarSetHashKey = "kruise.io/sidecarset-hash"
	// SidecarSetHashWithoutImageKey is SidecarSetHashKey with images left out of the hash: equal
	// values mean the sidecars differ at most in images, so they can be upgraded in place.
	SidecarSetHashWithoutImageKey = "kruise.io/sidecarset-hash-without-image"
	// SidecarSetInPlaceUpdateStateKey is the Pod annotation holding, per SidecarSet, the
	// InPlaceUpdateState of the in-place upgrade of its sidecar containers (a JSON object of
	// SidecarSet name to InPlaceUpdateState). It is kept apart from InPlaceUpdateStateKey, the
	// workload's update, so that both can run at once.
	SidecarSetInPlaceUpdateStateKey = "kruise.io/sidecarset-inplace-update-state"

	// SidecarSetUpgradable is the Pod condition saying whether the SidecarSets injected into the
	// Pod can upgrade its sidecars in place (False when a SidecarSet changed more than images).
	SidecarSetUpgradable corev1.PodConditionType = "SidecarSetUpgradable"

	// SidecarSetWorkingHotUpgradeContainerKey is the Pod annotation recording, as a JSON object,
	// which container of each hot-upgrade pair works: SidecarSet container name -> Pod container
	// name, e.g. {"mesh":"mesh-1"}.
	SidecarSetWorkingHotUpgradeContainerKey = "kruise.io/sidecarset-working-hotupgrade-container"
	// SidecarSetVersionAnnotationPrefix + a hot-upgrade container's name is the Pod annotation
	// holding its version ("0": it runs the empty image), which the container reads through env
	// SIDECARSET_VERSION when it starts.
	SidecarSetVersionAnnotationPrefix = "version.sidecarset.kruise.io/"
	// SidecarSetVersionAltAnnotationPrefix + a hot-upgrade container's name is the Pod annotation
	// holding the version of the other container of its pair (env SIDECARSET_VERSION_ALT).
	SidecarSetVersionAltAnnotationPrefix = "versionalt.sidecarset.kruise.io/"
)

// IsSidecarSetHotUpgradeAnnotation tells whether a Pod annotation key is one a SidecarSet's hot
// upgrade writes: the working-container record or a container's version or alt version.
func IsSidecarSetHotUpgradeAnnotation(key string) bool {
	return key == SidecarSetWorkingHotUpgradeContainerKey ||
		(strings.HasPrefix(key, SidecarSetVersionAnnotationPrefix) && len(key) > len(SidecarSetVersionAnnotationPrefix)) ||
		(strings.HasPrefix(key, SidecarSetVersionAltAnnotationPrefix) && len(key) > len(SidecarSetVersionAltAnnotationPrefix))
}

// SidecarSetUpgradeSpec is one SidecarSet's entry in the Pod annotations SidecarSetHashKey and
// SidecarSetHashWithoutImageKey (OpenKruise's SidecarSetUpgradeSpec).
type SidecarSetUpgradeSpec struct {
	// UpdateTimestamp is when the entry was last written (injection or upgrade).
	UpdateTimestamp metav1.Time `json:"updateTimestamp" protobuf:"bytes,1,opt,name=updateTimestamp"`
	// Hash is the SidecarSet's hash the Pod's sidecars follow.
	Hash string `json:"hash" protobuf:"bytes,2,opt,name=hash"`
	// SidecarSetName names the SidecarSet.
	SidecarSetName string `json:"sidecarSetName" protobuf:"bytes,3,opt,name=sidecarSetName"`
	// SidecarList names the SidecarSet's containers and native-sidecar init containers in the
	// Pod, sorted.
	// +listType=atomic
	SidecarList []string `json:"sidecarList" protobuf:"bytes,4,rep,name=sidecarList"`
	// ControllerRevision is the SidecarSet's ControllerRevision of Hash (SidecarSetHashKey only).
	ControllerRevision string `json:"controllerRevision,omitempty" protobuf:"bytes,5,opt,name=controllerRevision"`
}
