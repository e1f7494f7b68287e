package inplaceupdate

import (
	"encoding/json"
	"hash/fnv"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// KubeletContainerHash is the hash that the kubelet (Kubernetes 1.31 and later) computes of a
// container spec, HashContainer in k8s.io/kubernetes pkg/kubelet/container/helpers.go, and writes
// in hexadecimal to the io.kubernetes.container.hash annotation of the runtime container it
// creates from that spec. inplace-daemon reports that annotation as PlainHash in
// runtime-containers-meta, so PlainHash == KubeletContainerHash(spec) means that the running
// container was created from the spec's image string.
//
// The kubelet hashes only name and image: it marshals map[string]string{"name", "image"} to JSON
// (encoding/json: sorted keys, HTML-escaped) and hands the []byte to hashutil.DeepHashObject,
// which resets an FNV-32a hasher and writes to it fmt.Sprintf("%v", dump.ForHash(bytes)).
// dump.ForHash is go-spew's Sprintf("%#v") with a fixed config; for a []uint8 it prints
// "([]uint8)[" followed by the bytes in decimal separated by single spaces, then "]". The same
// text is produced here without go-spew. The kubelet's uint32 sum is widened to uint64.
//
// Kubelets before 1.31 hashed the JSON of the whole container spec instead; their hashes never
// equal this one, so checks built on it fall back to the image id comparison there.
func KubeletContainerHash(c *corev1.Container) uint64 {
	// Marshalling a map of strings cannot fail.
	raw, _ := json.Marshal(map[string]string{"name": c.Name, "image": c.Image})
	buf := make([]byte, 0, len("([]uint8)[]")+4*len(raw))
	buf = append(buf, "([]uint8)["...)
	for i, b := range raw {
		if i > 0 {
			buf = append(buf, ' ')
		}
		buf = strconv.AppendUint(buf, uint64(b), 10)
	}
	buf = append(buf, ']')
	h := fnv.New32a()
	_, _ = h.Write(buf)
	return uint64(h.Sum32())
}

// RunsCurrentSpec is OpenKruise's plain-hash consistency check (checkAllContainersHashConsistent
// with PlainHash): every container of the Pod spec has an entry in set whose containerID is the
// one the Pod status reports and whose PlainHash is KubeletContainerHash of the spec container.
// Then each container the kubelet reports runs an instance created from the spec's current image
// reference, whatever image id that reference resolves to. False when set is nil, a container
// has no status or entry, or an instance is not the reported one yet.
func RunsCurrentSpec(pod *corev1.Pod, set *pub.RuntimeContainerMetaSet) bool {
	if set == nil || len(pod.Spec.Containers) == 0 {
		return false
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		status := findStatus(pod, c.Name)
		if status == nil || status.ContainerID == "" {
			return false
		}
		meta := findMeta(set, c.Name)
		if meta == nil || meta.ContainerID != status.ContainerID || meta.Hashes.PlainHash != KubeletContainerHash(c) {
			return false
		}
	}
	return true
}

// ReportBehindStatus is true when the Pod carries inplace-daemon's runtime-containers-meta (a
// daemon reports on its node) and the status shows a container instance the report does not have
// yet: the daemon's next report is due, and comes with the completion of an update it finishes
// (containermeta's completeWithReport).
func ReportBehindStatus(pod *corev1.Pod) bool {
	metas, err := runtimeContainerMetas(pod)
	if err != nil || metas == nil {
		return false
	}
	for i := range pod.Status.ContainerStatuses {
		status := &pod.Status.ContainerStatuses[i]
		if status.ContainerID == "" {
			continue
		}
		if meta := findMeta(metas, status.Name); meta == nil || meta.ContainerID != status.ContainerID {
			return true
		}
	}
	return false
}

// UnconfirmedImages are the containers of the current batch of an in-place update under way whose
// new image the Pod status does not show: the imageID is the one recorded when the update began
// and the status image is not the spec image — a new reference to the same image content, or a
// container the kubelet has not replaced yet. Progress then needs the daemon's
// runtime-containers-meta (RunsCurrentSpec) to judge them done. None during a grace period or
// once the update is completed. In batch order.
func UnconfirmedImages(pod *corev1.Pod) []string {
	if _, inGrace := annotation(pod, pub.InPlaceUpdateGraceKey, pub.InPlaceUpdateGraceKeyOld); inGrace {
		return nil
	}
	st, ok, err := readState(pod)
	if !ok || err != nil || st.completed() {
		return nil
	}
	var names []string
	for _, name := range st.currentBatch() {
		c := FindContainer(pod.Spec.Containers, name)
		last, changesImage := st.LastContainerStatuses[name]
		if c != nil && changesImage && !imageUpdated(c, findStatus(pod, name), last) {
			names = append(names, name)
		}
	}
	return names
}

func findMeta(set *pub.RuntimeContainerMetaSet, name string) *pub.RuntimeContainerMeta {
	for i := range set.Containers {
		if set.Containers[i].Name == name {
			return &set.Containers[i]
		}
	}
	return nil
}
