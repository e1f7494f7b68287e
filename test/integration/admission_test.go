package integration

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/sidecarcontrol"
	"github.com/inplace-dev/inplace/test/integration/framework"
)

// TestStandaloneSidecarSetHash: with no kube-apiserver behind it, inplace-apiserver still runs its
// SidecarSet admission plugin (it needs only this server's SidecarSets): a SidecarSet gets
// kruise.io/sidecarset-hash and -without-image when created, and a new image changes the first
// only, as in aggregated mode.
func TestStandaloneSidecarSetHash(t *testing.T) {
	s := framework.StartServer(t)
	ctx := testContext(t)
	sets := s.Client.AppsV1alpha1().SidecarSets()

	created, err := sets.Create(ctx, newSidecarSet("hashed"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the SidecarSet: %v", err)
	}
	hash, withoutImage := expectHashes(t, created)

	created.Spec.Containers[0].Image = "inplace.local/app:v2"
	updated, err := sets.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("updating the SidecarSet's image: %v", err)
	}
	newHash, newWithoutImage := expectHashes(t, updated)
	if newHash == hash || newWithoutImage != withoutImage {
		t.Errorf("after a new image: hash %s (was %s), without image %s (was %s); want the first changed, the second not",
			newHash, hash, newWithoutImage, withoutImage)
	}
}

// expectHashes checks s's hash annotations are the hashes of its containers, and returns them.
func expectHashes(t *testing.T, s *appsv1alpha1.SidecarSet) (string, string) {
	t.Helper()
	wantHash, err := sidecarcontrol.Hash(s)
	if err != nil {
		t.Fatal(err)
	}
	wantWithoutImage, err := sidecarcontrol.HashWithoutImage(s)
	if err != nil {
		t.Fatal(err)
	}
	hash, withoutImage := s.Annotations[appsv1alpha1.SidecarSetHashAnnotation], s.Annotations[appsv1alpha1.SidecarSetHashWithoutImageAnnotation]
	if hash != wantHash || withoutImage != wantWithoutImage {
		t.Fatalf("annotations %v, want %s=%s and %s=%s", s.Annotations, appsv1alpha1.SidecarSetHashAnnotation, wantHash,
			appsv1alpha1.SidecarSetHashWithoutImageAnnotation, wantWithoutImage)
	}
	return hash, withoutImage
}
