package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// pvcTimeout bounds a PVC's way to Bound (kube-controller-manager's binder) or to gone (the
// pvc-protection finalizer waits for its Pod to be gone).
const pvcTimeout = 60 * time.Second

// staticVolumes creates n hostPath PersistentVolumes of 1Mi in a storage class of their own (the
// local cluster has no provisioner), each on a fresh directory of this machine; they and their
// directories are removed when the test ends. It returns the class.
func staticVolumes(t *testing.T, ctx context.Context, n int) string {
	t.Helper()
	suffix := utilrand.String(5)
	class := "inplace-e2e-static-" + suffix
	root, err := os.MkdirTemp("", "inplace-e2e-pv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	for i := range n {
		dir := filepath.Join(root, fmt.Sprint(i))
		if err := os.Mkdir(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o777); err != nil { // whatever the umask
			t.Fatal(err)
		}
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("e2e-%s-%d", suffix, i)},
			Spec: corev1.PersistentVolumeSpec{
				StorageClassName:              class,
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
					Path: dir, Type: ptr.To(corev1.HostPathDirectory)}},
			},
		}
		if _, err := framework.Kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating PersistentVolume %s: %v", pv.Name, err)
		}
		t.Cleanup(func() {
			_ = framework.Kube.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
		})
	}
	return class
}

// podClaim checks the Pod's PVC of template "data": name, labels, controller, Bound, claimed by
// the Pod's volume "data"; and that the file the container wrote on it (read through the
// hostPath directory on this machine) lists the Pod's UID. It returns the PVC and the file.
func podClaim(t *testing.T, ctx context.Context, cs *v1alpha1.CloneSet, pod *corev1.Pod) (*corev1.PersistentVolumeClaim, string) {
	t.Helper()
	id := pod.Labels[v1alpha1.CloneSetInstanceID]
	name := "data-" + cs.Name + "-" + id
	var vol *corev1.Volume
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == "data" {
			vol = &pod.Spec.Volumes[i]
		}
	}
	if vol == nil || vol.PersistentVolumeClaim == nil || vol.PersistentVolumeClaim.ClaimName != name {
		t.Fatalf("pod %s: volume data %+v, want a claim of %s", pod.Name, vol, name)
	}
	pvc, err := framework.Kube.CoreV1().PersistentVolumeClaims(cs.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("pvc of pod %s: %v", pod.Name, err)
	}
	if pvc.Labels["app"] != cs.Name || pvc.Labels[v1alpha1.CloneSetInstanceID] != id {
		t.Errorf("pvc %s labels %v, want app=%s and instance id %s", name, pvc.Labels, cs.Name, id)
	}
	if ref := metav1.GetControllerOf(pvc); ref == nil || ref.UID != cs.UID {
		t.Errorf("pvc %s controller %+v, want CloneSet %s", name, ref, cs.UID)
	}
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" {
		t.Fatalf("pvc %s: phase %s volume %q, want Bound (the Pod runs)", name, pvc.Status.Phase, pvc.Spec.VolumeName)
	}
	pv, err := framework.Kube.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(pv.Spec.HostPath.Path, "uids")
	var data []byte
	framework.Poll(t, ctx, 10*time.Second, fmt.Sprintf("pod %s's uid in %s", pod.Name, file), func(context.Context) (bool, error) {
		data, err = os.ReadFile(file)
		return err == nil && strings.Contains(string(data), string(pod.UID)), err
	})
	return pvc, string(data)
}

// waitClaimGone waits until the PVC no longer exists.
func waitClaimGone(t *testing.T, ctx context.Context, namespace, name string) {
	t.Helper()
	framework.Poll(t, ctx, pvcTimeout, "pvc "+name+" deleted", func(ctx context.Context) (bool, error) {
		pvc, err := framework.Kube.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return false, fmt.Errorf("still there (deletionTimestamp %v, finalizers %v)", pvc.DeletionTimestamp, pvc.Finalizers)
	})
}

// otherPod returns a Pod of the map whose name is not skip.
func otherPod(pods map[string]*corev1.Pod, skip string) *corev1.Pod {
	for name, p := range pods {
		if name != skip {
			return p
		}
	}
	return nil
}

// TestCloneSetPVC: volumeClaimTemplates on the real cluster, with static hostPath PVs. Each Pod
// runs with its own PVC bound and mounted (the container appends its UID to a file on it); a
// Pod deleted directly comes back with the same instance id and PVC, data included; scaling in
// deletes the removed Pod's PVC; with disablePVCReuse a directly deleted Pod's PVC is deleted
// and its replacement gets a new instance id and PVC.
func TestCloneSetPVC(t *testing.T) {
	ctx, ns := framework.Start(t, "clone-pvc")
	class := staticVolumes(t, ctx, 4)
	labels := map[string]string{"app": "db"}
	main := corev1.Container{
		Name: "main", Image: framework.AppImageV1, ImagePullPolicy: corev1.PullNever,
		Command:      []string{"sh", "-c", `echo "$POD_UID" >> /data/uids; exec /app.sh`},
		Env:          []corev1.EnvVar{{Name: "POD_UID", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.uid"}}}},
		VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
	}
	cs, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Create(ctx, &v1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: v1alpha1.CloneSetSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: framework.PodTemplate(labels, main),
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					StorageClassName: ptr.To(class),
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}},
				},
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// 1. Two Pods, each with its PVC bound and written to.
	pods := framework.WaitCloneSetReady(t, ctx, cs, 2)
	claims := map[string]*corev1.PersistentVolumeClaim{}
	for name, p := range pods {
		claims[name], _ = podClaim(t, ctx, cs, p)
	}

	// 2. A Pod deleted directly comes back with the same instance id, the same PVC, its data.
	var victim *corev1.Pod
	for _, p := range pods {
		victim = p
		break
	}
	if err := framework.Kube.CoreV1().Pods(ns).Delete(ctx, victim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The deleted Pod is terminating, so two Ready Pods means its replacement runs.
	pods = framework.WaitCloneSetReady(t, ctx, cs, 2)
	back := pods[victim.Name]
	if back == nil || back.UID == victim.UID || back.Labels[v1alpha1.CloneSetInstanceID] != victim.Labels[v1alpha1.CloneSetInstanceID] {
		t.Fatalf("pods %v: want a new pod %s with instance id %s", podNameList(pods), victim.Name, victim.Labels[v1alpha1.CloneSetInstanceID])
	}
	pvc, data := podClaim(t, ctx, cs, back)
	if pvc.UID != claims[victim.Name].UID {
		t.Errorf("replacement %s claims pvc %s uid %s, want the same pvc as before (uid %s)", back.Name, pvc.Name, pvc.UID, claims[victim.Name].UID)
	}
	if !strings.Contains(data, string(victim.UID)) {
		t.Errorf("the replacement's volume lacks the deleted pod's data: %q", data)
	}

	// 3. Scaling to 1 deletes the removed Pod's PVC, and only that one.
	if _, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Patch(ctx, cs.Name, types.MergePatchType,
		[]byte(`{"spec":{"replicas":1}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	left := framework.WaitCloneSetReady(t, ctx, cs, 1)
	var kept *corev1.Pod
	for _, p := range left {
		kept = p
	}
	removed := otherPod(pods, kept.Name)
	removedClaim := "data-" + cs.Name + "-" + removed.Labels[v1alpha1.CloneSetInstanceID]
	waitClaimGone(t, ctx, ns, removedClaim)
	podClaim(t, ctx, cs, kept)
	framework.Poll(t, ctx, 30*time.Second, "an event about the deletion of pvc "+removedClaim, func(ctx context.Context) (bool, error) {
		evs, err := framework.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.UID == cs.UID && e.Reason == "SuccessfulDelete" && strings.Contains(e.Message, "deleted pvc "+removedClaim) {
				return true, nil
			}
		}
		return false, nil
	})

	// 4. disablePVCReuse: back to 2 Pods (a new instance id, a new PVC on a free PV); one of them
	// deleted directly loses its PVC, and its replacement gets a new instance id and PVC.
	if _, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Patch(ctx, cs.Name, types.MergePatchType,
		[]byte(`{"spec":{"replicas":2,"scaleStrategy":{"disablePVCReuse":true}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	pods = framework.WaitCloneSetReady(t, ctx, cs, 2)
	added := otherPod(pods, kept.Name)
	if added.Labels[v1alpha1.CloneSetInstanceID] == removed.Labels[v1alpha1.CloneSetInstanceID] {
		t.Errorf("scale-up reused the instance id %s whose pvc was deleted", removed.Labels[v1alpha1.CloneSetInstanceID])
	}
	addedClaim, _ := podClaim(t, ctx, cs, added)
	if err := framework.Kube.CoreV1().Pods(ns).Delete(ctx, added.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitClaimGone(t, ctx, ns, addedClaim.Name)
	pods = framework.WaitCloneSetReady(t, ctx, cs, 2)
	if _, ok := pods[kept.Name]; !ok {
		t.Fatalf("pods %v: %s is gone", podNameList(pods), kept.Name)
	}
	fresh := otherPod(pods, kept.Name)
	if fresh.Labels[v1alpha1.CloneSetInstanceID] == added.Labels[v1alpha1.CloneSetInstanceID] {
		t.Errorf("replacement %s kept instance id %s under disablePVCReuse", fresh.Name, added.Labels[v1alpha1.CloneSetInstanceID])
	}
	freshClaim, data := podClaim(t, ctx, cs, fresh)
	if freshClaim.Spec.VolumeName == addedClaim.Spec.VolumeName || strings.Contains(data, string(added.UID)) {
		t.Errorf("replacement %s got the deleted pod's volume %s (data %q)", fresh.Name, freshClaim.Spec.VolumeName, data)
	}
}

func podNameList(pods map[string]*corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for name := range pods {
		out = append(out, name)
	}
	return out
}

// TestCloneSetPVCDefaultStorageClass (OpenKruise "CloneSet Update with DisablePVCReuse=true"), on
// the local cluster's default StorageClass (hack/kube/hostpath provisions a volume per claim):
// two volumeClaimTemplates without a class give each Pod two PVCs, bound to provisioned volumes
// and controlled by the CloneSet; Pods deleted directly come back on the same PVCs; with
// disablePVCReuse, Pods deleted directly come back with new instance ids and new PVCs, and the
// old PVCs go, their volumes deleted by the provisioner.
func TestCloneSetPVCDefaultStorageClass(t *testing.T) {
	ctx, ns := framework.Start(t, "clone-dynpvc")
	const replicas = 2
	cs := framework.NewUpdateCloneSet(t, ctx, ns, replicas, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.RecreateCloneSetUpdateStrategyType},
		func(cs *v1alpha1.CloneSet) {
			for _, name := range []string{"data-vol1", "data-vol2"} {
				cs.Spec.VolumeClaimTemplates = append(cs.Spec.VolumeClaimTemplates, corev1.PersistentVolumeClaim{
					ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec: corev1.PersistentVolumeClaimSpec{
						AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
						Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
					},
				})
			}
		})
	// claims waits for the PVCs of the Pods' instance ids, all bound to provisioned volumes, and
	// returns them by name with their volume.
	claims := func(pods map[string]*corev1.Pod) map[string]string {
		t.Helper()
		ids := map[string]bool{}
		for _, p := range pods {
			ids[p.Labels[v1alpha1.CloneSetInstanceID]] = true
		}
		var got map[string]string
		framework.Poll(t, ctx, pvcTimeout, fmt.Sprintf("%d PVCs bound", 2*replicas), func(ctx context.Context) (bool, error) {
			list, err := framework.Kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			got = map[string]string{}
			for _, pvc := range list.Items {
				if pvc.DeletionTimestamp != nil {
					continue
				}
				ref := metav1.GetControllerOf(&pvc)
				if ref == nil || ref.UID != cs.UID || !ids[pvc.Labels[v1alpha1.CloneSetInstanceID]] ||
					pvc.Status.Phase != corev1.ClaimBound || ptr.Deref(pvc.Spec.StorageClassName, "") != "inplace-hostpath" {
					return false, fmt.Errorf("pvc %s: controller %v, instance id %s, phase %s, class %v",
						pvc.Name, ref, pvc.Labels[v1alpha1.CloneSetInstanceID], pvc.Status.Phase, pvc.Spec.StorageClassName)
				}
				got[pvc.Name] = pvc.Spec.VolumeName
			}
			return len(got) == 2*replicas, fmt.Errorf("pvcs %v", got)
		})
		for name, pv := range got {
			vol, err := framework.Kube.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if by := vol.Annotations["pv.kubernetes.io/provisioned-by"]; by != "inplace.local/hostpath" {
				t.Errorf("pvc %s: volume %s provisioned by %q", name, pv, by)
			}
		}
		return got
	}
	deleteAll := func(pods map[string]*corev1.Pod) {
		t.Helper()
		for name := range pods {
			if err := framework.Kube.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}

	pods := framework.WaitCloneSetReady(t, ctx, cs, replicas)
	first := claims(pods)
	deleteAll(pods)
	framework.Poll(t, ctx, framework.RolloutTimeout, "the Pods replaced", func(ctx context.Context) (bool, error) {
		got, err := framework.CloneSetPods(ctx, cs)
		for name, p := range got {
			if pods[name] != nil && pods[name].UID == p.UID || !framework.PodReady(p) {
				return false, fmt.Errorf("pod %s not replaced and ready yet (%v)", name, err)
			}
		}
		return len(got) == replicas, err
	})
	if again := claims(pods); !maps.Equal(again, first) {
		t.Errorf("pvcs after the Pods came back %v, want the same as before %v", again, first)
	}

	cs = framework.UpdateCloneSet(t, ctx, cs, func(cs *v1alpha1.CloneSet) { cs.Spec.ScaleStrategy.DisablePVCReuse = true })
	pods = framework.WaitCloneSetReady(t, ctx, cs, replicas)
	deleteAll(pods)
	var fresh map[string]*corev1.Pod
	framework.Poll(t, ctx, framework.RolloutTimeout, "new Pods with new instance ids", func(ctx context.Context) (bool, error) {
		got, err := framework.CloneSetPods(ctx, cs)
		for name, p := range got {
			if pods[name] != nil || !framework.PodReady(p) {
				return false, fmt.Errorf("pod %s: an old instance id, or not ready (%v)", name, err)
			}
		}
		fresh = got
		return len(got) == replicas, err
	})
	second := claims(fresh)
	for name, pv := range first {
		if _, ok := second[name]; ok {
			t.Errorf("pvc %s kept under disablePVCReuse", name)
		}
		waitClaimGone(t, ctx, ns, name)
		framework.Poll(t, ctx, pvcTimeout, "volume "+pv+" deleted by the provisioner", func(ctx context.Context) (bool, error) {
			_, err := framework.Kube.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Errorf("still there (%v)", err)
		})
	}
}
