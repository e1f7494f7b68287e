// Command hostpath is the local cluster's volume provisioner (hack/local-up.sh starts it like the
// other host processes): for every PersistentVolumeClaim of its StorageClass it creates a hostPath
// PersistentVolume bound to that claim, backed by a directory of its own under -root, and once
// such a volume is Released (its claim deleted; reclaim policy Delete) it removes the directory
// and the volume. It is what lets CloneSet volumeClaimTemplates (and any PVC without a class, the
// class being the default) run on the single-node cluster; it is not part of inplace.
//
//	hostpath -kubeconfig admin.kubeconfig -root /var/lib/inplace-hostpath [-class inplace-hostpath]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// provisionedBy is the annotation Kubernetes' own provisioners put on the volumes they create.
const provisionedBy = "pv.kubernetes.io/provisioned-by"

type provisioner struct {
	kube        kubernetes.Interface
	class, name string
	root        string
	claims      cache.Indexer
	volumes     cache.Indexer
	queue       workqueue.TypedRateLimitingInterface[string]
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of a user that may manage PVs, PVCs and StorageClasses")
	root := flag.String("root", "/var/lib/inplace-hostpath", "directory holding one directory per volume")
	class := flag.String("class", "inplace-hostpath", "StorageClass to serve (created, as the default class, if missing)")
	name := flag.String("name", "inplace.local/hostpath", "provisioner name in the StorageClass")
	klog.InitFlags(nil)
	flag.Parse()
	if err := run(*kubeconfig, *root, *class, *name); err != nil {
		klog.ErrorS(err, "hostpath provisioner failed")
		os.Exit(1)
	}
}

func run(kubeconfig, root, class, name string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("reading %s: %w", kubeconfig, err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	if err := ensureClass(ctx, kube, class, name); err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(kube, 10*time.Minute)
	p := &provisioner{kube: kube, class: class, name: name, root: root,
		claims:  factory.Core().V1().PersistentVolumeClaims().Informer().GetIndexer(),
		volumes: factory.Core().V1().PersistentVolumes().Informer().GetIndexer(),
		queue:   workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    p.enqueue,
		UpdateFunc: func(_, obj any) { p.enqueue(obj) },
	}
	if _, err := factory.Core().V1().PersistentVolumeClaims().Informer().AddEventHandler(handler); err != nil {
		return err
	}
	if _, err := factory.Core().V1().PersistentVolumes().Informer().AddEventHandler(handler); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	klog.InfoS("Serving", "storageClass", class, "root", root)
	go func() {
		<-ctx.Done()
		p.queue.ShutDown()
	}()
	for p.next(ctx) {
	}
	return nil
}

// ensureClass creates the StorageClass as the cluster's default: bound at once (one node), the
// volume deleted with its claim.
func ensureClass(ctx context.Context, kube kubernetes.Interface, class, name string) error {
	_, err := kube.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: class,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
		Provisioner:       name,
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate),
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// Keys are "pvc/NAMESPACE/NAME" and "pv/NAME".
func (p *provisioner) enqueue(obj any) {
	switch o := obj.(type) {
	case *corev1.PersistentVolumeClaim:
		p.queue.Add("pvc/" + o.Namespace + "/" + o.Name)
	case *corev1.PersistentVolume:
		p.queue.Add("pv/" + o.Name)
	}
}

func (p *provisioner) next(ctx context.Context) bool {
	key, quit := p.queue.Get()
	if quit {
		return false
	}
	defer p.queue.Done(key)
	var err error
	if name, ok := strings.CutPrefix(key, "pv/"); ok {
		err = p.syncVolume(ctx, name)
	} else {
		err = p.syncClaim(ctx, strings.TrimPrefix(key, "pvc/"))
	}
	if err != nil {
		klog.ErrorS(err, "Sync failed, retrying", "key", key)
		p.queue.AddRateLimited(key)
		return true
	}
	p.queue.Forget(key)
	return true
}

// syncClaim provisions a volume for a pending claim of the class that has none.
func (p *provisioner) syncClaim(ctx context.Context, key string) error {
	obj, ok, err := p.claims.GetByKey(key)
	if err != nil || !ok {
		return err
	}
	pvc := obj.(*corev1.PersistentVolumeClaim)
	if ptr.Deref(pvc.Spec.StorageClassName, "") != p.class || pvc.Spec.VolumeName != "" ||
		pvc.Status.Phase != corev1.ClaimPending || pvc.DeletionTimestamp != nil {
		return nil
	}
	name := "pvc-" + string(pvc.UID)
	if _, exists, _ := p.volumes.GetByKey(name); exists {
		return nil // the PV controller binds them
	}
	dir := filepath.Join(p.root, name)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	// World-writable, as a fresh disk would be to its first user: containers run as any uid.
	if err := os.Chmod(dir, 0o777); err != nil {
		return err
	}
	size := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{provisionedBy: p.name}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   pvc.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              p.class,
			VolumeMode:                    pvc.Spec.VolumeMode,
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: dir, Type: ptr.To(corev1.HostPathDirectory)}},
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID},
		},
	}
	if _, err := p.kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating PV %s for claim %s: %w", name, key, err)
	}
	klog.InfoS("Provisioned", "pv", name, "claim", key, "dir", dir)
	return nil
}

// syncVolume deletes a volume of this provisioner once its claim is gone, directory first.
func (p *provisioner) syncVolume(ctx context.Context, name string) error {
	obj, ok, err := p.volumes.GetByKey(name)
	if err != nil || !ok {
		return err
	}
	pv := obj.(*corev1.PersistentVolume)
	if pv.Annotations[provisionedBy] != p.name || pv.Status.Phase != corev1.VolumeReleased ||
		pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pv.DeletionTimestamp != nil {
		return nil
	}
	if hp := pv.Spec.HostPath; hp != nil {
		// Only ever a directory this provisioner made under its root.
		if filepath.Dir(hp.Path) != filepath.Clean(p.root) || !strings.HasPrefix(filepath.Base(hp.Path), "pvc-") {
			return fmt.Errorf("PV %s: path %s is not one of %s's", name, hp.Path, p.root)
		}
		if err := os.RemoveAll(hp.Path); err != nil {
			return err
		}
	}
	err = p.kube.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &pv.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return errors.Join(fmt.Errorf("deleting PV %s", name), err)
	}
	klog.InfoS("Deleted released volume", "pv", name)
	return nil
}
