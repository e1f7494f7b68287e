package migrate

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// TestAdoptMovesSidecarSetRevision: a SidecarSet's ControllerRevision, orphaned in OpenKruise's
// namespace, is given to the re-created (cluster-scoped) SidecarSet and moved to inplace's
// namespace with its name, labels, annotations, data and number, where inplace's SidecarSet
// controller looks for it; a second run (a crash after the move) changes nothing.
func TestAdoptMovesSidecarSetRevision(t *testing.T) {
	orphaned := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: "sc-5d4f", Namespace: "kruise-system", UID: "rev-uid",
			Labels:      map[string]string{"kruise.io/sidecarset-name": "sc"},
			Annotations: map[string]string{"kruise.io/sidecarset-hash": "abc"}},
		Data:     runtime.RawExtension{Raw: []byte(`{"spec":{"$patch":"replace"}}`)},
		Revision: 3,
	}
	kube := kubefake.NewSimpleClientset(orphaned)
	m := &Migrator{Kube: kube, Opts: Options{Backup: filepath.Join(t.TempDir(), "b.yaml"), InplaceNamespace: "inplace-system", Out: io.Discard},
		state: &State{
			Kinds:   []Kind{{CRD: "sidecarsets.apps.kruise.io", Kind: "SidecarSet", Plural: "sidecarsets", Version: "v1beta1"}},
			NewUIDs: map[string]types.UID{"SidecarSet//sc": "new-uid"},
			Dependents: []Dependent{{Resource: "controllerrevisions", Namespace: "kruise-system", Name: "sc-5d4f", UID: "rev-uid",
				Refs: []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1beta1", Kind: "SidecarSet", Name: "sc", UID: "old-uid", Controller: ptr.To(true)}}}},
		}}
	ctx := context.Background()
	for run := 1; run <= 2; run++ {
		if err := m.adopt(ctx); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		got, err := kube.AppsV1().ControllerRevisions("inplace-system").Get(ctx, "sc-5d4f", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("run %d: the revision in inplace-system: %v", run, err)
		}
		if ref := metav1.GetControllerOf(got); ref == nil || ref.UID != "new-uid" || ref.Kind != "SidecarSet" {
			t.Errorf("run %d: owners %v, want the re-created SidecarSet (new-uid)", run, got.OwnerReferences)
		}
		if string(got.Data.Raw) != string(orphaned.Data.Raw) || got.Revision != 3 || got.Labels["kruise.io/sidecarset-name"] != "sc" || got.Annotations["kruise.io/sidecarset-hash"] != "abc" {
			t.Errorf("run %d: moved revision %+v, want the original's data, number, labels, annotations", run, got)
		}
		if _, err := kube.AppsV1().ControllerRevisions("kruise-system").Get(ctx, "sc-5d4f", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("run %d: the original in kruise-system: %v, want it gone", run, err)
		}
	}
}

// TestOwnerKey: a namespaced owner is looked up in its dependent's namespace, a cluster-scoped
// one (a SidecarSet) without a namespace, as recreate records it.
func TestOwnerKey(t *testing.T) {
	m := &Migrator{state: &State{Kinds: []Kind{{Kind: "SidecarSet"}, {Kind: "CloneSet", Namespaced: true}}}}
	if got := m.ownerKey(metav1.OwnerReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "SidecarSet", Name: "sc"}, "kruise-system"); got != objectKey("SidecarSet", "", "sc") {
		t.Errorf("SidecarSet: %s", got)
	}
	if got := m.ownerKey(metav1.OwnerReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web"}, "ns"); got != objectKey("CloneSet", "ns", "web") {
		t.Errorf("CloneSet: %s", got)
	}
}

// TestInjectedBy: a Pod a migrated SidecarSet injected (named in its kruise.io/sidecarset-hash)
// is kept like an owned Pod; other Pods are not.
func TestInjectedBy(t *testing.T) {
	sets := map[string]bool{"sc": true}
	pod := func(hash string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"kruise.io/sidecarset-hash": hash}}}
	}
	for _, c := range []struct {
		hash string
		want bool
	}{
		{`{"sc":{"hash":"abc","sidecarSetName":"sc","sidecarList":["agent"],"controllerRevision":"sc-1"}}`, true},
		{`{"other":{"hash":"abc"},"sc":{"hash":"x"}}`, true},
		{`{"other":{"hash":"abc"}}`, false},
		{``, false},
		{`not json`, false},
	} {
		if got := injectedBy(pod(c.hash), sets); got != c.want {
			t.Errorf("injectedBy(%q) = %v, want %v", c.hash, got, c.want)
		}
	}
}
