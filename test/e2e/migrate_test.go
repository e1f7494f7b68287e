package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/pkg/migrate"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// `kubectl inplace migrate` on the real cluster, from the state an OpenKruise installation leaves
// (built by hand: inplace's APIServices removed, OpenKruise's CRD clonesets.apps.kruise.io, a
// CloneSet in it owning its Pods and a ControllerRevision written with OpenKruise v1.9's data and
// hash, kruise-* webhook configurations failing closed on a stopped service, a kruise-manager
// Deployment) to inplace, keeping every Pod.

var (
	crdGVR        = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	cloneSetGVR   = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "clonesets"}
	sidecarSetGVR = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: "sidecarsets"}
	// budgetGVR is OpenKruise v1.9's PodUnavailableBudget CRD (v1alpha1 only, served and stored).
	budgetGVR     = schema.GroupVersionResource{Group: "policy.kruise.io", Version: "v1alpha1", Resource: "podunavailablebudgets"}
	budgetBetaGVR = schema.GroupVersionResource{Group: "policy.kruise.io", Version: "v1beta1", Resource: "podunavailablebudgets"}
)

const (
	cloneSetCRD    = "clonesets.apps.kruise.io"
	statefulSetCRD = "statefulsets.apps.kruise.io"
	daemonSetCRD   = "daemonsets.apps.kruise.io"
	sidecarSetCRD  = "sidecarsets.apps.kruise.io"
	crrCRD         = "containerrecreaterequests.apps.kruise.io"
	pullJobCRD     = "imagepulljobs.apps.kruise.io"
	budgetCRD      = "podunavailablebudgets.policy.kruise.io"
)

// kruiseCRD is one of OpenKruise's CRDs, reduced to its names, its storage version in OpenKruise
// v1.9 and subresources (its schema keeps every field).
func kruiseCRD(plural, kind, version string, namespaced bool, shortNames ...any) map[string]any {
	return kruiseGroupCRD("apps.kruise.io", plural, kind, version, namespaced, shortNames...)
}

// kruiseGroupCRD is kruiseCRD in another of OpenKruise's groups (policy.kruise.io).
func kruiseGroupCRD(group, plural, kind, version string, namespaced bool, shortNames ...any) map[string]any {
	scope := "Cluster"
	if namespaced {
		scope = "Namespaced"
	}
	return map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + "." + group},
		"spec": map[string]any{
			"group": group, "scope": scope,
			"names": map[string]any{"kind": kind, "listKind": kind + "List", "plural": plural, "singular": strings.ToLower(kind), "shortNames": shortNames},
			"versions": []any{map[string]any{
				"name": version, "served": true, "storage": true,
				"schema":       map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
				"subresources": map[string]any{"status": map[string]any{}},
			}},
		},
	}
}

// kruiseCRDs are OpenKruise v1.9's CRDs of the kinds the test migrates.
var kruiseCRDs = []map[string]any{
	kruiseCRD("clonesets", "CloneSet", "v1alpha1", true, "clone"),
	kruiseCRD("statefulsets", "StatefulSet", "v1beta1", true, "asts"),
	kruiseCRD("daemonsets", "DaemonSet", "v1beta1", true, "ads"),
	kruiseCRD("sidecarsets", "SidecarSet", "v1beta1", false),
	kruiseCRD("containerrecreaterequests", "ContainerRecreateRequest", "v1alpha1", true, "crr"),
	kruiseCRD("imagepulljobs", "ImagePullJob", "v1beta1", true),
	kruiseGroupCRD("policy.kruise.io", "podunavailablebudgets", "PodUnavailableBudget", "v1alpha1", true, "pub"),
}

// kubeRevisionHash is kube's controller-history hash (history.HashControllerRevision: fnv-32 of
// the data and the collision count when there is one, safely encoded), which OpenKruise names its
// revisions with.
func kubeRevisionHash(data []byte, collisionCount *int32) string {
	h := fnv.New32()
	h.Write(data)
	if collisionCount != nil {
		h.Write([]byte(fmt.Sprint(*collisionCount)))
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// kruiseRevisionData is the data OpenKruise v1.9 (k8s.io/apimachinery v0.32) stores for the
// template inplace stored as data: the same patch, with "creationTimestamp":null in the template's
// metadata, which the older encoder writes.
func kruiseRevisionData(t *testing.T, data []byte) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	tmpl := m["spec"].(map[string]any)["template"].(map[string]any)
	meta, _ := tmpl["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	meta["creationTimestamp"] = nil
	tmpl["metadata"] = meta
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func controllerRefTo(obj *unstructured.Unstructured) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Name: obj.GetName(), UID: obj.GetUID(),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

func mergePatch(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// restoreInplaceAPIServices undoes the OpenKruise state after the test whatever its outcome:
// the CRD goes, inplace's APIServices come back Available, the kruise webhooks and namespace go.
func restoreInplaceAPIServices(t *testing.T, saved []*unstructured.Unstructured) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		adm := framework.Kube.AdmissionregistrationV1()
		_ = adm.MutatingWebhookConfigurations().Delete(ctx, "kruise-mutating-webhook-configuration", metav1.DeleteOptions{})
		_ = adm.ValidatingWebhookConfigurations().Delete(ctx, "kruise-validating-webhook-configuration", metav1.DeleteOptions{})
		_ = framework.Kube.CoreV1().Namespaces().Delete(ctx, "kruise-system", metav1.DeleteOptions{})
		// Every CRD the test may have installed (the way back installs NodeImage's too).
		var crds []string
		for _, crd := range kruiseBackCRDs {
			crds = append(crds, crd["metadata"].(map[string]any)["name"].(string))
		}
		for _, crd := range crds {
			_ = framework.DynamicClient.Resource(crdGVR).Delete(ctx, crd, metav1.DeleteOptions{})
		}
		framework.Poll(t, ctx, 2*time.Minute, "inplace's APIServices back", func(ctx context.Context) (bool, error) {
			for _, crd := range crds {
				if _, err := framework.DynamicClient.Resource(crdGVR).Get(ctx, crd, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return false, fmt.Errorf("CRD %s still there (%v)", crd, err)
				}
			}
			for _, s := range saved {
				got, err := framework.DynamicClient.Resource(framework.APIServiceGVR).Get(ctx, s.GetName(), metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					c := s.DeepCopy()
					c.SetResourceVersion("")
					c.SetUID("")
					delete(c.Object, "status")
					_, err = framework.DynamicClient.Resource(framework.APIServiceGVR).Create(ctx, c, metav1.CreateOptions{})
					return false, err
				}
				if err != nil {
					return false, err
				}
				if svc, _, _ := unstructured.NestedMap(got.Object, "spec", "service"); svc == nil {
					return false, fmt.Errorf("APIService %s still kube-apiserver's", s.GetName())
				}
			}
			return framework.APIServiceAvailable(ctx)
		})
	})
}

// TestMigrateFromOpenKruise: one migration run carries a CloneSet, an Advanced StatefulSet, an
// Advanced DaemonSet, a SidecarSet (with a Pod it injected) and a PodUnavailableBudget
// (policy.kruise.io) from OpenKruise's CRDs to inplace.
// Every Pod keeps its UID, containers and restart counts, through the migration and while
// inplace's controller runs afterwards; each controller takes OpenKruise's revision as current
// (no new ControllerRevision); afterwards a CloneSet rollout and a SidecarSet image change go in
// place.
func TestMigrateFromOpenKruise(t *testing.T) {
	ctx, ns := framework.Start(t, "migrate")
	// The CloneSet's Pods each have a PVC from its volumeClaimTemplates, owned by the CloneSet.
	class := staticVolumes(t, ctx, 2)
	cs, _ := framework.ReadyCloneSet(t, ctx, ns, 2, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType}, withClaim(class))
	sts := framework.CreateAdvancedStatefulSet(t, ctx, framework.NewAdvancedStatefulSet(ns, 1, appsv1.ParallelPodManagement, func(s *v1beta1.StatefulSet) {
		s.Spec.VolumeClaimTemplates = nil
		s.Spec.Template.Spec.Containers[0].VolumeMounts = nil
	}))
	framework.WaitStatefulSet(t, ctx, sts, 1, 1)
	nodes, _ := framework.ReadyDaemonSet(t, ctx, ns)
	sidecarSet := readySidecarSetPod(t, ctx, ns)
	// Finished work OpenKruise leaves behind: a Completed ContainerRecreateRequest (re-created with
	// its status, it must not recreate the container again) and a completed ImagePullJob.
	framework.CreateCRR(t, ctx, ns, framework.NewCRR("restart-db", "db-0", "main"))
	framework.WaitCRRCompleted(t, ctx, ns, "restart-db", time.Minute)
	reg, _ := framework.RegistryNodes(t)
	createPullJob(t, ctx, pullJob(ns, "warm", reg+"/app:v1"))

	// inplace's controller is kept off until the migration is done (the standby of docs/migration.md).
	framework.StartAgainAfter(t, "inplace-controller")
	framework.TakeDown(t, ctx, "inplace-controller")

	kruise, saved := buildOpenKruiseState(t, ctx, ns, sidecarSet)
	before := snapshotPods(t, ctx, ns)
	if want := 2 + 1 + int(nodes) + 1; len(before) != want {
		t.Fatalf("%d Pods before the migration, want %d", len(before), want)
	}
	revsBefore := revisionNames(t, ctx, ns)
	claims := snapshotClaims(t, ctx, ns)
	if len(claims) != 2 {
		t.Fatalf("%d PVCs before the migration, want the CloneSet's 2", len(claims))
	}
	dir := t.TempDir()
	backup := filepath.Join(dir, "kruise-backup.yaml")
	apiservices := filepath.Join(dir, "apiservices.yaml")
	writeAPIServices(t, apiservices, saved)

	// --dry-run prints the plan and changes nothing.
	out := mustKubectlInplace(t, ctx, "migrate", "--backup", backup, "--apiservices", apiservices, "--dry-run", "--scale-down-kruise")
	for _, want := range []string{"plan", "would scale Deployment kruise-system/kruise-manager", cloneSetCRD, sidecarSetCRD, "kruise-mutating-webhook-configuration",
		fmt.Sprintf("%d pods, 2 persistentvolumeclaims", 2+1+nodes), framework.PolicyAPIServiceName} {
		if !strings.Contains(out, want) {
			framework.LogLines(t, "dry run", out)
			t.Fatalf("dry run: no %q in its output (logged above)", want)
		}
	}
	checkBudgetCounted(t, out, "dry run")
	if _, err := framework.DynamicClient.Resource(crdGVR).Get(ctx, cloneSetCRD, metav1.GetOptions{}); err != nil {
		t.Fatalf("after --dry-run: CRD %s: %v", cloneSetCRD, err)
	}
	if _, err := os.Stat(backup); !os.IsNotExist(err) {
		t.Fatalf("--dry-run wrote %s (%v)", backup, err)
	}

	// kruise-manager still running: refused, with the reason.
	out, stderr, err := kubectlInplace(ctx, time.Minute, "migrate", "--backup", backup, "--apiservices", apiservices)
	if err == nil || !strings.Contains(stderr, "kruise-manager") {
		t.Fatalf("migrate with kruise-manager running: err %v, want a refusal naming kruise-manager\nstdout: %s\nstderr: %s", err, out, stderr)
	}

	// Crash and resume: each run stops after the work of one step, before recording it done (as a
	// crash would; INPLACE_MIGRATE_CRASH_AFTER, read by the command for tests only); the next run
	// of the same command does that step again and stops after the next one; the last run ends the
	// migration. No Pod changes on the way.
	start := time.Now()
	args := []string{"migrate", "--backup", backup, "--apiservices", apiservices, "--scale-down-kruise"}
	var runs strings.Builder // what every run printed
	for _, step := range migrate.Steps {
		runs.WriteString(crashAfterStep(t, ctx, ns, args, step, "migrate", before, claims))
	}
	out = mustKubectlInplace(t, ctx, args...)
	t.Logf("migrate (%d crashes, then to the end) took %.1fs:\n%s", len(migrate.Steps), time.Since(start).Seconds(), out)
	if want := fmt.Sprintf("%d Pods unchanged", len(before)); !strings.Contains(out, want) {
		t.Errorf("migrate: no %q in its output (the injected Pod is kept like the owned ones)", want)
	}
	if want := "ContainerRecreateRequest " + ns + "/restart-db (finished"; !strings.Contains(runs.String(), want) {
		t.Errorf("migrate: no %q in the output of its runs", want)
	}
	checkPodsKept(t, ctx, ns, before, revsBefore, kruise[sidecarSetCRD].revName, "after the migration, before inplace's controller runs", 0)
	checkBudgetMigrated(t, ctx, ns, kruise[budgetCRD])
	// From here to the end of the way back (over a minute), every change of every Pod is recorded:
	// the Pods no later step means to change must never change (untouchedSince, at the end).
	migrated, watched := time.Now(), framework.RecordPods(t, ctx, ns)

	if err := framework.RunLocalUpHook(t, framework.ControllerHook); err != nil {
		t.Fatal(err)
	}
	checkClaimsKept(t, ctx, ns, claims, "after the migration")
	checkMigrated(t, ctx, ns, kruise, nodes)
	checkBudgetLive(t, ctx, ns, kruise[budgetCRD])
	checkPodsKept(t, ctx, ns, before, revsBefore, kruise[sidecarSetCRD].revName, "while inplace's controller runs", 10*time.Second)
	checkClaimsOwned(t, ctx, ns, claims, cloneSetGVR, cs.Name, "after inplace's CloneSet controller ran")
	checkBackup(t, backup)

	// A rollout afterwards goes in place: the same Pods, the new image.
	got, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Get(ctx, cs.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	beforePods, err := framework.CloneSetPods(ctx, got)
	if err != nil {
		t.Fatal(err)
	}
	framework.UpdateCloneSet(t, ctx, got, framework.SetImage(framework.AppImageV2))
	_, after := framework.WaitRolledOut(t, ctx, got, 2)
	framework.CheckSamePods(t, beforePods, after)
	checkClaimsKept(t, ctx, ns, claims, "after the in-place rollout")

	// A SidecarSet image change upgrades the injected sidecar in place.
	sidePod, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, "side", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	framework.UpdateSidecarSet(t, ctx, sidecarSet, framework.SidecarImage(framework.AppImageV2))
	var upgraded *corev1.Pod
	framework.Poll(t, ctx, framework.RolloutTimeout, "the migrated Pod's sidecar upgraded in place", func(ctx context.Context) (bool, error) {
		upgraded, err = framework.Kube.CoreV1().Pods(ns).Get(ctx, "side", metav1.GetOptions{})
		return err == nil && framework.SidecarRunning(upgraded, framework.AppImageV2), err
	})
	framework.CheckSidecarsUpgraded(t, map[string]*corev1.Pod{"side": sidePod}, map[string]*corev1.Pod{"side": upgraded}, framework.AppImageV2, 1)
	framework.WaitSidecarSetStatus(t, ctx, sidecarSet, 1, 1, 1, 1)

	// And back to OpenKruise (migrate_back_test.go).
	migrateBack(t, ctx, ns, kruise, nodes)

	// The Advanced StatefulSet's and DaemonSet's Pods were never touched from the migration's end to
	// here, at any change the Pod watch delivered, for at least a minute.
	untouched := maps.Clone(before)
	for name := range beforePods {
		delete(untouched, name)
	}
	delete(untouched, "side")
	untouchedSince(t, ctx, ns, watched, untouched, migrated, time.Minute)
}

// untouchedSince checks that every Pod of want kept its state (UID, revision, images, restarts)
// at every change rec recorded and, when less than window has passed since start, until it has.
func untouchedSince(t *testing.T, ctx context.Context, ns string, rec *framework.PodEvents, want map[string]podState, start time.Time, window time.Duration) {
	t.Helper()
	rec.Replay(rec.UpTo(t, ctx, ns), func(ev framework.PodEvent, _ map[string]*corev1.Pod) {
		w, ok := want[ev.Pod.Name]
		if !ok {
			return
		}
		if ev.Typ == watch.Deleted {
			t.Errorf("pod %s deleted after the migration", ev.Pod.Name)
		} else if got := podStateOf(ev.Pod); got != w {
			t.Errorf("pod %s at resourceVersion %s: %+v, was %+v", ev.Pod.Name, ev.Pod.ResourceVersion, got, w)
		}
	})
	if left := window - time.Since(start); left > 0 {
		framework.Consistently(t, ctx, left, time.Second, func(ctx context.Context) error {
			now := snapshotPods(t, ctx, ns)
			for name, w := range want {
				if now[name] != w {
					return fmt.Errorf("pod %s: %+v, was %+v", name, now[name], w)
				}
			}
			return nil
		})
	}
	t.Logf("%d Pods untouched for %.0fs after the migration", len(want), time.Since(start).Seconds())
}

// readySidecarSetPod creates a SidecarSet (named after the namespace) with the sidecar agent and a
// Pod "side" it injects, and waits until the SidecarSet counts the Pod updated and ready.
func readySidecarSetPod(t *testing.T, ctx context.Context, ns string) string {
	t.Helper()
	set := framework.CreateSidecarSet(t, ctx, framework.AgentSidecarSet(ns, "side"))
	framework.WaitInjects(t, ctx, ns, set.Spec.Selector.MatchLabels, set.Name)
	pod := framework.LabeledPod(ns, "side", "side", framework.Container("main", framework.AppImageV1))
	framework.CreateCRRPod(t, ctx, pod)
	framework.WaitSidecarSetStatus(t, ctx, ns, 1, 1, 1, 1)
	return ns
}

// kruiseObject is one object as OpenKruise left it: its CRD's resource (at OpenKruise v1.9's
// storage version), its revision's name and hash.
type kruiseObject struct {
	gvr     schema.GroupVersionResource
	name    string
	revName string
	hash    string
	status  map[string]any // a finished object's (or the budget's) status, as OpenKruise left it
	uid     types.UID      // the budget's UID in OpenKruise's CRD
}

// buildOpenKruiseState turns inplace's objects into what OpenKruise leaves: the objects in CRDs
// (inplace's APIServices removed), their Pods and revisions owned by them, each revision named and
// encoded as OpenKruise does and the Pods labelled with it, the SidecarSet's revision in
// kruise-system and the injected Pod's annotations naming it, webhooks failing closed,
// kruise-manager's Deployment. It returns the objects by CRD and inplace's APIServices as they were.
func buildOpenKruiseState(t *testing.T, ctx context.Context, ns, sidecarSet string) (map[string]*kruiseObject, []*unstructured.Unstructured) {
	t.Helper()
	objs := map[string]*kruiseObject{
		cloneSetCRD:    {gvr: cloneSetGVR, name: "web"},
		statefulSetCRD: {gvr: schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: "statefulsets"}, name: "db"},
		daemonSetCRD:   {gvr: schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: "daemonsets"}, name: "agent"},
	}
	workloads := map[string]*takenOut{}
	for crd, o := range objs {
		workloads[crd] = takeOut(t, ctx, ns, o)
	}
	sidecar := takeOutSidecarSet(t, ctx, sidecarSet)
	finished := map[string]*kruiseObject{
		crrCRD:     {gvr: schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "containerrecreaterequests"}, name: "restart-db"},
		pullJobCRD: {gvr: schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: "imagepulljobs"}, name: "warm"},
	}
	finishedObjs := map[string]*unstructured.Unstructured{}
	for crd, o := range finished {
		finishedObjs[crd] = takeOutFinished(t, ctx, ns, o)
	}

	// inplace's APIServices out, OpenKruise's CRDs in.
	dyn := framework.DynamicClient
	var saved []*unstructured.Unstructured
	for _, name := range framework.APIServiceNames {
		s, err := dyn.Resource(framework.APIServiceGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		saved = append(saved, s)
	}
	restoreInplaceAPIServices(t, saved)
	for _, s := range saved {
		if err := dyn.Resource(framework.APIServiceGVR).Delete(ctx, s.GetName(), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, crd := range kruiseCRDs {
		if _, err := dyn.Resource(crdGVR).Create(ctx, &unstructured.Unstructured{Object: crd}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// kruise-system holds the SidecarSet's revisions.
	if _, err := framework.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kruise-system"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for crd, o := range objs {
		putBack(t, ctx, ns, o, workloads[crd])
	}
	objs[sidecarSetCRD] = putBackSidecarSet(t, ctx, ns, sidecar)
	for crd, o := range finished {
		putBackFinished(t, ctx, ns, o, finishedObjs[crd])
	}
	// The request stays in the backup only (pkg/migrate: finishedRequest); the job is carried.
	objs[pullJobCRD] = finished[pullJobCRD]
	objs[budgetCRD] = createKruiseBudget(t, ctx, ns)
	createKruiseControlPlane(t, ctx, ns)
	return objs, saved
}

// takenOut is a workload read from inplace and deleted there (its Pods orphaned).
type takenOut struct {
	obj     *unstructured.Unstructured
	rev     appsv1.ControllerRevision
	podList []corev1.Pod
	claims  []string // the names of the PVCs it owned
}

func takeOut(t *testing.T, ctx context.Context, ns string, o *kruiseObject) *takenOut {
	t.Helper()
	dyn := framework.DynamicClient
	obj, err := dyn.Resource(o.gvr).Namespace(ns).Get(ctx, o.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := &takenOut{obj: obj}
	revs, err := framework.Kube.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var owned []appsv1.ControllerRevision
	for _, r := range revs.Items {
		if ref := metav1.GetControllerOf(&r); ref != nil && ref.UID == obj.GetUID() {
			owned = append(owned, r)
		}
	}
	if len(owned) != 1 {
		t.Fatalf("%s %s: %d revisions, want 1", o.gvr.Resource, o.name, len(owned))
	}
	out.rev = owned[0]
	pods, err := framework.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	noOwners := mergePatch(t, map[string]any{"metadata": map[string]any{"ownerReferences": nil}})
	for _, p := range pods.Items {
		if ref := metav1.GetControllerOf(&p); ref == nil || ref.UID != obj.GetUID() {
			continue
		}
		out.podList = append(out.podList, p)
		if _, err := framework.Kube.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, noOwners, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pvcs, err := framework.Kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range pvcs.Items {
		if ref := metav1.GetControllerOf(&c); ref == nil || ref.UID != obj.GetUID() {
			continue
		}
		out.claims = append(out.claims, c.Name)
		if _, err := framework.Kube.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, c.Name, types.MergePatchType, noOwners, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := framework.Kube.AppsV1().ControllerRevisions(ns).Delete(ctx, out.rev.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := dyn.Resource(o.gvr).Namespace(ns).Delete(ctx, o.name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}); err != nil {
		t.Fatal(err)
	}
	framework.Poll(t, ctx, 30*time.Second, fmt.Sprintf("inplace's %s %s gone", o.gvr.Resource, o.name), func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(o.gvr).Namespace(ns).Get(ctx, o.name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	return out
}

// putBack creates the workload in OpenKruise's CRD as inplace had stored it (spec defaulted as
// OpenKruise's webhook does), with OpenKruise's revision: inplace's template data re-encoded as
// OpenKruise v1.9 writes it, named <name>-<fnv32> (the Advanced StatefulSet, as kube's StatefulSet
// controller, hashes with collision count 0), and the Pods' labels and the status naming it.
func putBack(t *testing.T, ctx context.Context, ns string, o *kruiseObject, w *takenOut) {
	t.Helper()
	dyn := framework.DynamicClient
	data := kruiseRevisionData(t, w.rev.Data.Raw)
	var probe *int32
	if o.gvr.Resource == "statefulsets" {
		probe = ptr.To[int32](0)
	}
	o.hash = kubeRevisionHash(data, probe)
	o.revName = o.name + "-" + o.hash
	if o.revName == w.rev.Name {
		t.Fatalf("OpenKruise's revision name %s is inplace's: the test would not show that the revision is kept", o.revName)
	}
	// The Pods' controller-revision-hash, the status's revision and the revision's own
	// controller-revision-hash label name the revision; OpenKruise's DaemonSet (as kube's) writes
	// the hash only (pkg/controller/daemonset: snapshot, updateDaemonSetStatus).
	inplaceHash := strings.TrimPrefix(w.rev.Name, o.name+"-")
	label := o.revName
	if o.gvr.Resource == "daemonsets" {
		label = o.hash
	}
	rename := func(v string) string {
		switch v {
		case w.rev.Name:
			return label
		case inplaceHash:
			return o.hash
		}
		return v
	}
	fresh := w.obj.DeepCopy()
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "finalizers"} {
		unstructured.RemoveNestedField(fresh.Object, "metadata", f)
	}
	status := fresh.Object["status"].(map[string]any)
	delete(fresh.Object, "status")
	var created *unstructured.Unstructured
	var err error
	framework.Poll(t, ctx, 60*time.Second, fmt.Sprintf("%s %s created in the CRD", o.gvr.Resource, o.name), func(ctx context.Context) (bool, error) {
		created, err = dyn.Resource(o.gvr).Namespace(ns).Create(ctx, fresh, metav1.CreateOptions{})
		return err == nil, err
	})
	for k, v := range status {
		if s, ok := v.(string); ok {
			status[k] = rename(s)
		}
	}
	status["observedGeneration"] = created.GetGeneration()
	created.Object["status"] = status
	if created, err = dyn.Resource(o.gvr).Namespace(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ref := controllerRefTo(created)
	revLabels := map[string]string{}
	for k, v := range w.rev.Labels {
		revLabels[k] = rename(v)
	}
	rev := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: o.revName, Labels: revLabels, Annotations: w.rev.Annotations, OwnerReferences: []metav1.OwnerReference{ref}},
		Data:       w.rev.Data, Revision: w.rev.Revision,
	}
	rev.Data.Raw = data
	if _, err := framework.Kube.AppsV1().ControllerRevisions(ns).Create(ctx, rev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range w.podList {
		labels := map[string]any{}
		for k, v := range p.Labels {
			if r := rename(v); r != v {
				labels[k] = r
			}
		}
		if len(labels) == 0 {
			t.Fatalf("Pod %s: no label names revision %s: %v", p.Name, w.rev.Name, p.Labels)
		}
		patch := mergePatch(t, map[string]any{"metadata": map[string]any{"ownerReferences": []metav1.OwnerReference{ref}, "labels": labels}})
		if _, err := framework.Kube.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	owned := mergePatch(t, map[string]any{"metadata": map[string]any{"ownerReferences": []metav1.OwnerReference{ref}}})
	for _, name := range w.claims {
		if _, err := framework.Kube.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, name, types.MergePatchType, owned, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// takeOutFinished reads a finished object (no dependents) from inplace and deletes it there.
func takeOutFinished(t *testing.T, ctx context.Context, ns string, o *kruiseObject) *unstructured.Unstructured {
	t.Helper()
	res := framework.DynamicClient.Resource(o.gvr).Namespace(ns)
	obj, err := res.Get(ctx, o.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Delete(ctx, o.name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Poll(t, ctx, 30*time.Second, fmt.Sprintf("inplace's %s %s gone", o.gvr.Resource, o.name), func(ctx context.Context) (bool, error) {
		_, err := res.Get(ctx, o.name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	return obj
}

// putBackFinished creates the object in OpenKruise's CRD with the spec and status inplace had, and
// remembers that status in o to compare with what inplace serves after the migration.
func putBackFinished(t *testing.T, ctx context.Context, ns string, o *kruiseObject, obj *unstructured.Unstructured) {
	t.Helper()
	res := framework.DynamicClient.Resource(o.gvr).Namespace(ns)
	fresh := obj.DeepCopy()
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "finalizers"} {
		unstructured.RemoveNestedField(fresh.Object, "metadata", f)
	}
	status := fresh.Object["status"].(map[string]any)
	delete(fresh.Object, "status")
	var created *unstructured.Unstructured
	var err error
	framework.Poll(t, ctx, 60*time.Second, fmt.Sprintf("%s %s created in the CRD", o.gvr.Resource, o.name), func(ctx context.Context) (bool, error) {
		created, err = res.Create(ctx, fresh, metav1.CreateOptions{})
		return err == nil, err
	})
	created.Object["status"] = status
	if _, err := res.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	o.status = status
}

// takeOutSidecarSet reads the SidecarSet from inplace (at v1beta1, OpenKruise v1.9's storage
// version) and deletes it and its revisions there.
func takeOutSidecarSet(t *testing.T, ctx context.Context, name string) *unstructured.Unstructured {
	t.Helper()
	obj, err := framework.DynamicClient.Resource(sidecarSetGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := framework.DynamicClient.Resource(sidecarSetGVR).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	revs := framework.Kube.AppsV1().ControllerRevisions(framework.InplaceNamespace)
	if err := revs.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "kruise.io/sidecarset-name=" + name}); err != nil {
		t.Fatal(err)
	}
	return obj
}

// putBackSidecarSet creates the SidecarSet in OpenKruise's CRD, its revision as OpenKruise v1.9
// records it (pkg/control/sidecarcontrol/history_control.go: in kruise-system, data
// {"spec":{"$patch":"replace", containers, initContainers, volumes, imagePullSecrets,
// patchPodMetadata}} re-encoded through a map (sorted keys, absent fields null), named
// <name>-<fnv32 of the data and collision count 0>, labelled kruise.io/sidecarset-name, carrying
// the SidecarSet's annotations), status.latestRevision naming it, and the injected Pod's
// kruise.io/sidecarset-hash and -without-image annotations as OpenKruise's Pod webhook writes
// them (the hash annotations of the SidecarSet are inplace's, equal to OpenKruise's:
// pkg/sidecarcontrol TestHashEqualsOpenKruise).
func putBackSidecarSet(t *testing.T, ctx context.Context, ns string, obj *unstructured.Unstructured) *kruiseObject {
	t.Helper()
	dyn := framework.DynamicClient
	fresh := obj.DeepCopy()
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "finalizers"} {
		unstructured.RemoveNestedField(fresh.Object, "metadata", f)
	}
	status := fresh.Object["status"].(map[string]any)
	delete(fresh.Object, "status")
	var created *unstructured.Unstructured
	var err error
	framework.Poll(t, ctx, 60*time.Second, "the SidecarSet created in the CRD", func(ctx context.Context) (bool, error) {
		created, err = dyn.Resource(sidecarSetGVR).Create(ctx, fresh, metav1.CreateOptions{})
		return err == nil, err
	})
	spec := obj.Object["spec"].(map[string]any)
	recorded := map[string]any{"$patch": "replace"}
	for _, k := range []string{"volumes", "containers", "initContainers", "imagePullSecrets", "patchPodMetadata"} {
		recorded[k] = spec[k]
	}
	data := mergePatch(t, map[string]any{"spec": recorded})
	o := &kruiseObject{gvr: sidecarSetGVR, name: obj.GetName(), hash: kubeRevisionHash(data, ptr.To[int32](0))}
	o.revName = o.name + "-" + o.hash
	status["latestRevision"], status["observedGeneration"], status["collisionCount"] = o.revName, created.GetGeneration(), int64(0)
	created.Object["status"] = status
	if created, err = dyn.Resource(sidecarSetGVR).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"kruise.io/sidecarset-name": o.name}
	for k, v := range obj.GetLabels() {
		labels[k] = v
	}
	rev := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: o.revName, Labels: labels, Annotations: obj.GetAnnotations(),
			OwnerReferences: []metav1.OwnerReference{controllerRefTo(created)}},
		Data:     runtime.RawExtension{Raw: data},
		Revision: 1,
	}
	if _, err := framework.Kube.AppsV1().ControllerRevisions("kruise-system").Create(ctx, rev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// OpenKruise's SidecarSetUpgradeSpec; controllerRevision is omitempty (not in -without-image).
	now := metav1.Now().Rfc3339Copy().UTC().Format(time.RFC3339)
	sidecars := []string{framework.UpgradeSidecar}
	hashes := map[string]any{o.name: map[string]any{"updateTimestamp": now, "hash": obj.GetAnnotations()[v1alpha1.SidecarSetHashAnnotation],
		"sidecarSetName": o.name, "sidecarList": sidecars, "controllerRevision": o.revName}}
	withoutImage := map[string]any{o.name: map[string]any{"updateTimestamp": now, "hash": obj.GetAnnotations()[v1alpha1.SidecarSetHashWithoutImageAnnotation],
		"sidecarSetName": o.name, "sidecarList": sidecars}}
	patch := mergePatch(t, map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		v1alpha1.SidecarSetHashAnnotation:             string(mergePatch(t, hashes)),
		v1alpha1.SidecarSetHashWithoutImageAnnotation: string(mergePatch(t, withoutImage)),
	}}})
	if _, err := framework.Kube.CoreV1().Pods(ns).Patch(ctx, "side", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	return o
}

// writeAPIServices writes inplace's APIService manifests (the installation's) for --apiservices.
func writeAPIServices(t *testing.T, path string, saved []*unstructured.Unstructured) {
	t.Helper()
	var docs []string
	for _, s := range saved {
		c := s.DeepCopy()
		unstructured.RemoveNestedField(c.Object, "metadata", "resourceVersion")
		unstructured.RemoveNestedField(c.Object, "metadata", "uid")
		unstructured.RemoveNestedField(c.Object, "metadata", "managedFields")
		unstructured.RemoveNestedField(c.Object, "metadata", "creationTimestamp")
		delete(c.Object, "status")
		raw, err := yaml.Marshal(c.Object)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(raw))
	}
	if err := os.WriteFile(path, []byte(strings.Join(docs, "---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
}

// createKruiseControlPlane creates what OpenKruise runs beside its CRDs (in kruise-system, which
// exists): kruise-manager's Deployment (one replica, never scheduled) and its webhook configurations, failing closed on
// a Service that does not answer, for the test's namespace only.
func createKruiseControlPlane(t *testing.T, ctx context.Context, ns string) {
	t.Helper()
	labels := map[string]string{"control-plane": "controller-manager"}
	tmpl := framework.PodTemplate(labels, framework.Container("manager", framework.AppImageV1))
	tmpl.Spec.NodeSelector = map[string]string{"inplace.test/nowhere": "true"}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "kruise-manager"},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl},
	}
	if _, err := framework.Kube.AppsV1().Deployments("kruise-system").Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	service := &admissionv1.ServiceReference{Namespace: "kruise-system", Name: "kruise-webhook-service", Path: ptr.To("/webhook")}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}
	fail, none := admissionv1.Fail, admissionv1.SideEffectClassNone
	rule := func(group, resource string) []admissionv1.RuleWithOperations {
		return []admissionv1.RuleWithOperations{{
			Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
			Rule:       admissionv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: []string{resource}},
		}}
	}
	adm := framework.Kube.AdmissionregistrationV1()
	if _, err := adm.MutatingWebhookConfigurations().Create(ctx, &admissionv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "kruise-mutating-webhook-configuration"},
		Webhooks: []admissionv1.MutatingWebhook{{
			Name: "mpod.kb.io", ClientConfig: admissionv1.WebhookClientConfig{Service: service}, Rules: rule("", "pods"),
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}, NamespaceSelector: selector,
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.ValidatingWebhookConfigurations().Create(ctx, &admissionv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "kruise-validating-webhook-configuration"},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name: "vcloneset.kb.io", ClientConfig: admissionv1.WebhookClientConfig{Service: service}, Rules: rule("apps.kruise.io", "clonesets"),
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}, NamespaceSelector: selector,
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// podState is what the migration must not change in a Pod.
type podState struct {
	UID      types.UID
	Images   string
	Restarts int32
	Revision string
}

// crashAfterStep runs the migration command args so that it stops after the work of step, as a
// crash would (INPLACE_MIGRATE_CRASH_AFTER, read by the command for tests only), and checks that no
// Pod changed and every claim is kept; what names the run in messages. It returns what the run
// printed.
func crashAfterStep(t *testing.T, ctx context.Context, ns string, args []string, step, what string,
	before map[string]podState, claims map[string]claimState) string {
	t.Helper()
	out, stderr, err := kubectlInplaceEnv(ctx, 3*time.Minute, []string{"INPLACE_MIGRATE_CRASH_AFTER=" + step}, args...)
	if err == nil || !strings.Contains(stderr, "step "+step+": crashed on purpose") {
		t.Fatalf("%s crashing after step %s: err %v, want the crash\nstdout: %s\nstderr: %s", what, step, err, out, stderr)
	}
	t.Logf("%s crashed after step %s:\n%s", what, step, out)
	if now := snapshotPods(t, ctx, ns); !maps.Equal(now, before) {
		t.Fatalf("%s, after the crash after step %s: Pods %+v, were %+v", what, step, now, before)
	}
	checkClaimsKept(t, ctx, ns, claims, what+", after the crash after step "+step)
	return out
}

func snapshotPods(t *testing.T, ctx context.Context, ns string) map[string]podState {
	t.Helper()
	pods, err := framework.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]podState{}
	for i := range pods.Items {
		out[pods.Items[i].Name] = podStateOf(&pods.Items[i])
	}
	return out
}

func podStateOf(p *corev1.Pod) podState {
	s := podState{UID: p.UID, Revision: framework.PodRevision(p)}
	for _, c := range p.Spec.Containers {
		s.Images += c.Name + "=" + c.Image + " "
	}
	for _, c := range p.Status.ContainerStatuses {
		s.Restarts += c.RestartCount
	}
	return s
}

// withClaim gives the CloneSet a volumeClaimTemplate "data" of the static class, mounted by its
// container.
func withClaim(class string) func(*v1alpha1.CloneSet) {
	return func(cs *v1alpha1.CloneSet) {
		cs.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
			ObjectMeta: metav1.ObjectMeta{Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{
				StorageClassName: ptr.To(class),
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}},
			},
		}}
		c := &cs.Spec.Template.Spec.Containers[0]
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "data", MountPath: "/data"})
	}
}

// claimState is what neither way of the migration may change in a PVC: it is the same claim,
// bound to the same volume.
type claimState struct {
	UID    types.UID
	Volume string
	Phase  corev1.PersistentVolumeClaimPhase
}

func snapshotClaims(t *testing.T, ctx context.Context, ns string) map[string]claimState {
	t.Helper()
	list, err := framework.Kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]claimState{}
	for _, c := range list.Items {
		out[c.Name] = claimState{UID: c.UID, Volume: c.Spec.VolumeName, Phase: c.Status.Phase}
	}
	return out
}

// checkClaimsKept: the namespace has the same PVCs, each the same claim bound to the same volume.
func checkClaimsKept(t *testing.T, ctx context.Context, ns string, before map[string]claimState, when string) {
	t.Helper()
	if now := snapshotClaims(t, ctx, ns); !maps.Equal(now, before) {
		t.Fatalf("%s: PVCs %+v, were %+v", when, now, before)
	}
}

// checkClaimsOwned: each PVC of before is controlled by the object gvr/name serves now (its
// current UID), and by nothing else.
func checkClaimsOwned(t *testing.T, ctx context.Context, ns string, before map[string]claimState, gvr schema.GroupVersionResource, name, when string) {
	t.Helper()
	owner, err := framework.DynamicClient.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("%s: %s %s: %v", when, gvr.Resource, name, err)
	}
	framework.Poll(t, ctx, 30*time.Second, fmt.Sprintf("%s: the PVCs controlled by %s %s", when, gvr.Resource, name), func(ctx context.Context) (bool, error) {
		for claim := range before {
			c, err := framework.Kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if len(c.OwnerReferences) != 1 || !metav1.IsControlledBy(c, owner) {
				return false, fmt.Errorf("PVC %s: owners %v, want only %s %s (uid %s)", claim, c.OwnerReferences, gvr.Resource, name, owner.GetUID())
			}
		}
		return true, nil
	})
}

// checkMigrated: inplace serves each object (a new UID) and its controller takes OpenKruise's
// revision as current: the CloneSet's and StatefulSet's update and current revision, the
// DaemonSet's hash, the SidecarSet's latest revision are OpenKruise's, every Pod counted updated
// and ready; the revisions are controlled by the new objects.
func checkMigrated(t *testing.T, ctx context.Context, ns string, kruise map[string]*kruiseObject, nodes int32) {
	t.Helper()
	revControlledBy := func(namespace, name string, owner metav1.Object) error {
		rev, err := framework.Kube.AppsV1().ControllerRevisions(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !metav1.IsControlledBy(rev, owner) {
			return fmt.Errorf("revision %s/%s owners %v, want %s", namespace, name, rev.OwnerReferences, owner.GetName())
		}
		return nil
	}
	cs := kruise[cloneSetCRD]
	framework.Poll(t, ctx, 60*time.Second, "the CloneSet synced by inplace at OpenKruise's revision", func(ctx context.Context) (bool, error) {
		got, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Get(ctx, cs.name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := got.Status
		if st.ObservedGeneration != got.Generation || st.UpdateRevision != cs.revName || st.CurrentRevision != cs.revName || st.UpdatedReplicas != 2 || st.ReadyReplicas != 2 {
			return false, fmt.Errorf("status %+v, want revision %s, 2 updated and ready", st, cs.revName)
		}
		pods, err := framework.CloneSetPods(ctx, got)
		if err != nil {
			return false, err
		}
		if len(pods) != 2 {
			return false, fmt.Errorf("the CloneSet controls %d Pods", len(pods))
		}
		return true, revControlledBy(ns, cs.revName, got)
	})
	sts := kruise[statefulSetCRD]
	framework.Poll(t, ctx, 60*time.Second, "the Advanced StatefulSet synced by inplace at OpenKruise's revision", func(ctx context.Context) (bool, error) {
		got, err := framework.Inplace.AppsV1beta1().StatefulSets(ns).Get(ctx, sts.name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := got.Status
		if st.ObservedGeneration != got.Generation || st.UpdateRevision != sts.revName || st.CurrentRevision != sts.revName || st.UpdatedReplicas != 1 || st.ReadyReplicas != 1 {
			return false, fmt.Errorf("status %+v, want revision %s, 1 updated and ready", st, sts.revName)
		}
		return true, revControlledBy(ns, sts.revName, got)
	})
	ds := kruise[daemonSetCRD]
	framework.Poll(t, ctx, 60*time.Second, "the Advanced DaemonSet synced by inplace at OpenKruise's revision", func(ctx context.Context) (bool, error) {
		got, err := framework.Inplace.AppsV1alpha1().DaemonSets(ns).Get(ctx, ds.name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := got.Status
		// inplace's daemonSetHash names the revision (<name>-<hash>); its Pods, labelled with
		// OpenKruise's hash, count as at that revision.
		if st.ObservedGeneration != got.Generation || st.DaemonSetHash != ds.revName || st.UpdatedNumberScheduled != nodes || st.NumberReady != nodes {
			return false, fmt.Errorf("status %+v, want revision %s, %d updated and ready", st, ds.revName, nodes)
		}
		return true, revControlledBy(ns, ds.revName, got)
	})
	job := kruise[pullJobCRD]
	if got, err := framework.DynamicClient.Resource(job.gvr).Namespace(ns).Get(ctx, job.name, metav1.GetOptions{}); err != nil {
		t.Errorf("ImagePullJob %s served by inplace: %v", job.name, err)
	} else if status := got.Object["status"]; !equality.Semantic.DeepEqual(status, job.status) {
		t.Errorf("ImagePullJob %s: status %v, want OpenKruise's %v", job.name, status, job.status)
	}
	if _, err := framework.Inplace.AppsV1alpha1().ContainerRecreateRequests(ns).Get(ctx, "restart-db", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the finished ContainerRecreateRequest restart-db in inplace: %v, want it kept in the backup only", err)
	}
	ss := kruise[sidecarSetCRD]
	got := framework.WaitSidecarSetStatus(t, ctx, ss.name, 1, 1, 1, 1)
	if got.Status.LatestRevision != ss.revName {
		t.Errorf("SidecarSet %s: latestRevision %s, want OpenKruise's %s", ss.name, got.Status.LatestRevision, ss.revName)
	}
	if err := revControlledBy(framework.InplaceNamespace, ss.revName, got); err != nil {
		t.Errorf("the SidecarSet's revision in inplace's namespace: %v", err)
	}
}

// revisionNames are the names of the namespace's ControllerRevisions.
func revisionNames(t *testing.T, ctx context.Context, ns string) []string {
	t.Helper()
	revs, err := framework.Kube.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range revs.Items {
		names = append(names, r.Name)
	}
	sort.Strings(names)
	return names
}

// checkPodsKept: for window (at least once), every Pod is as before (UID, images, restarts,
// revision label), the namespace has the same revisions (none made by inplace), and the
// SidecarSet has exactly OpenKruise's revision, in inplace's namespace.
func checkPodsKept(t *testing.T, ctx context.Context, ns string, before map[string]podState, revs []string, sidecarRev, when string, window time.Duration) {
	t.Helper()
	check := func(ctx context.Context) error {
		now := snapshotPods(t, ctx, ns)
		for name, b := range before {
			if a, ok := now[name]; !ok || a != b {
				return fmt.Errorf("Pod %s: %+v, was %+v", name, now[name], b)
			}
		}
		if len(now) != len(before) {
			return fmt.Errorf("%d Pods, were %d", len(now), len(before))
		}
		if got := revisionNames(t, ctx, ns); !slices.Equal(got, revs) {
			return fmt.Errorf("revisions %v, were %v: inplace made its own instead of keeping OpenKruise's", got, revs)
		}
		list, err := framework.Kube.AppsV1().ControllerRevisions(framework.InplaceNamespace).List(ctx, metav1.ListOptions{LabelSelector: "kruise.io/sidecarset-name=" + ns})
		if err != nil {
			return err
		}
		if len(list.Items) != 1 || list.Items[0].Name != sidecarRev {
			var names []string
			for _, r := range list.Items {
				names = append(names, r.Name)
			}
			return fmt.Errorf("the SidecarSet's revisions in %s: %v, want only OpenKruise's %s", framework.InplaceNamespace, names, sidecarRev)
		}
		return nil
	}
	if window == 0 {
		if err := check(ctx); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		return
	}
	framework.Consistently(t, ctx, window, time.Second, func(ctx context.Context) error {
		if err := check(ctx); err != nil {
			return fmt.Errorf("%s: %w", when, err)
		}
		return nil
	})
}

// checkBackup: the backup holds the seven objects, as OpenKruise served them.
func checkBackup(t *testing.T, path string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Kind  string                   `json:"kind"`
		Items []map[string]interface{} `json:"items"`
	}
	if err := yaml.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, it := range list.Items {
		u := unstructured.Unstructured{Object: it}
		if u.Object["spec"] == nil {
			t.Errorf("backup item %s %s has no spec", u.GetKind(), u.GetName())
		}
		kinds = append(kinds, u.GetKind()+"/"+u.GetName())
	}
	sort.Strings(kinds)
	if list.Kind != "List" || len(kinds) != 7 {
		t.Fatalf("backup: kind %s, items %v, want a List of the seven objects", list.Kind, kinds)
	}
}
