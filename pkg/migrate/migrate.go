package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// Options are what the operator chooses.
type Options struct {
	// Backup is the file the objects are saved to (and read back from on a re-run).
	Backup string
	// APIServices is a file of inplace's APIService manifests to register once the CRDs are gone;
	// empty: the operator registers them (the migration waits for them).
	APIServices string
	// KruiseNamespace is where kruise-manager runs.
	KruiseNamespace string
	// ScaleDownKruise scales kruise-manager to 0 instead of refusing while it runs.
	ScaleDownKruise bool
	// DryRun prints the plan and changes nothing.
	DryRun bool
	// Timeout bounds each wait (CRDs gone, APIServices Available).
	Timeout time.Duration
	Out     io.Writer
}

// Migrator runs the migration.
type Migrator struct {
	Dynamic dynamic.Interface
	Kube    kubernetes.Interface
	Opts    Options

	state  *State
	objs   []unstructured.Unstructured
	resume bool
}

var (
	crdGVR        = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	apiServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	// dependentGVRs are the kinds whose apps.kruise.io ownerReferences are removed and given back.
	dependentGVRs = map[string]schema.GroupVersionResource{
		"pods":                   {Version: "v1", Resource: "pods"},
		"persistentvolumeclaims": {Version: "v1", Resource: "persistentvolumeclaims"},
		"controllerrevisions":    {Group: "apps", Version: "v1", Resource: "controllerrevisions"},
	}
	dependentOrder = []string{"controllerrevisions", "persistentvolumeclaims", "pods"}
)

// carried are the apps.kruise.io resources inplace serves: objects of any other kind cannot be
// carried, and the migration refuses to start while there are any.
var carried = map[string]bool{
	"clonesets": true, "statefulsets": true, "daemonsets": true, "sidecarsets": true,
	"containerrecreaterequests": true, "imagepulljobs": true, "imagelistpulljobs": true, "nodeimages": true,
}

func (m *Migrator) printf(format string, args ...any) {
	fmt.Fprintf(m.Opts.Out, format+"\n", args...)
}

// Run runs (or resumes) the migration, or with DryRun prints its plan.
func (m *Migrator) Run(ctx context.Context) error {
	if m.Opts.Timeout == 0 {
		m.Opts.Timeout = 5 * time.Minute
	}
	if m.Opts.KruiseNamespace == "" {
		m.Opts.KruiseNamespace = "kruise-system"
	}
	state, resume, err := loadState(StatePath(m.Opts.Backup))
	if err != nil {
		return err
	}
	m.state, m.resume = state, resume
	if err := m.checkKruiseManager(ctx); err != nil {
		return err
	}
	if resume {
		m.printf("resuming the migration recorded in %s", StatePath(m.Opts.Backup))
		if m.objs, err = LoadBackup(m.Opts.Backup); err != nil {
			return err
		}
	} else {
		if err := m.discover(ctx); err != nil {
			return err
		}
		if err := m.preflight(ctx); err != nil {
			return err
		}
	}
	if m.Opts.DryRun {
		return m.plan(ctx)
	}
	steps := map[string]func(context.Context) error{
		StepBackup: m.backup, StepWebhooks: m.deleteWebhooks, StepOrphan: m.orphan, StepCRDs: m.deleteCRDs,
		StepAPIServices: m.registerAPIServices, StepRecreate: m.recreate, StepAdopt: m.adopt, StepVerify: m.verify,
	}
	for i, step := range Steps {
		if m.state.Done[step] {
			m.printf("step %d/%d %s: done before", i+1, len(Steps), step)
			continue
		}
		m.printf("step %d/%d %s", i+1, len(Steps), step)
		if err := steps[step](ctx); err != nil {
			return fmt.Errorf("step %s: %w (fix the cause and run the same command again: it carries on)", step, err)
		}
		m.state.Done[step] = true
		if err := saveState(StatePath(m.Opts.Backup), m.state); err != nil {
			return err
		}
	}
	m.printf("migrated: %d objects now served by inplace, %d Pods unchanged; keep %s (the way back)", len(m.objs), len(m.state.Pods), m.Opts.Backup)
	return nil
}

// discover lists the apps.kruise.io CRDs and every object of theirs (at the storage version).
func (m *Migrator) discover(ctx context.Context) error {
	list, err := m.Dynamic.Resource(crdGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing CustomResourceDefinitions: %w", err)
	}
	m.state.Kinds = nil
	for _, crd := range list.Items {
		if g, _, _ := unstructured.NestedString(crd.Object, "spec", "group"); g != Group {
			continue
		}
		k := Kind{CRD: crd.GetName()}
		k.Kind, _, _ = unstructured.NestedString(crd.Object, "spec", "names", "kind")
		k.Plural, _, _ = unstructured.NestedString(crd.Object, "spec", "names", "plural")
		scope, _, _ := unstructured.NestedString(crd.Object, "spec", "scope")
		k.Namespaced = scope == "Namespaced"
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			vm, _ := v.(map[string]any)
			if storage, _ := vm["storage"].(bool); storage {
				k.Version, _ = vm["name"].(string)
			}
		}
		m.state.Kinds = append(m.state.Kinds, k)
	}
	sort.Slice(m.state.Kinds, func(i, j int) bool { return m.state.Kinds[i].CRD < m.state.Kinds[j].CRD })
	m.objs = nil
	for _, k := range m.state.Kinds {
		objs, err := m.Dynamic.Resource(k.gvr()).List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing %s: %w", k.CRD, err)
		}
		m.objs = append(m.objs, objs.Items...)
	}
	return nil
}

func (k Kind) gvr() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: Group, Version: k.Version, Resource: k.Plural}
}

func (m *Migrator) kindOf(kind string) (Kind, bool) {
	for _, k := range m.state.Kinds {
		if k.Kind == kind {
			return k, true
		}
	}
	return Kind{}, false
}

// checkKruiseManager refuses while kruise-manager has ready replicas (it would fight over the
// objects and Pods, and its webhooks answer for them), or scales it to 0 when asked to.
func (m *Migrator) checkKruiseManager(ctx context.Context) error {
	deploy, err := m.Kube.AppsV1().Deployments(m.Opts.KruiseNamespace).Get(ctx, "kruise-manager", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading Deployment %s/kruise-manager: %w", m.Opts.KruiseNamespace, err)
	}
	running := deploy.Status.Replicas > 0 || (deploy.Spec.Replicas != nil && *deploy.Spec.Replicas > 0)
	if !running {
		return nil
	}
	if m.Opts.ScaleDownKruise && m.Opts.DryRun {
		m.printf("would scale Deployment %s/kruise-manager (%d replicas) to 0", m.Opts.KruiseNamespace, deploy.Status.Replicas)
		return nil
	}
	if !m.Opts.ScaleDownKruise {
		return fmt.Errorf("kruise-manager (Deployment %s/kruise-manager) still runs %d replicas (%d ready): OpenKruise's controllers would act on the objects during the migration; "+
			"scale it to 0 first (kubectl -n %s scale deployment/kruise-manager --replicas=0), or pass --scale-down-kruise",
			m.Opts.KruiseNamespace, deploy.Status.Replicas, deploy.Status.ReadyReplicas, m.Opts.KruiseNamespace)
	}
	m.printf("scaling Deployment %s/kruise-manager to 0", m.Opts.KruiseNamespace)
	patch := []byte(`{"spec":{"replicas":0}}`)
	if _, err := m.Kube.AppsV1().Deployments(m.Opts.KruiseNamespace).Patch(ctx, "kruise-manager", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("scaling kruise-manager to 0: %w", err)
	}
	return m.poll(ctx, "kruise-manager's Pods gone", func(ctx context.Context) (bool, error) {
		d, err := m.Kube.AppsV1().Deployments(m.Opts.KruiseNamespace).Get(ctx, "kruise-manager", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return d.Status.Replicas == 0, nil
	})
}

// preflight refuses, with the reason, when the migration would lose something: objects of a
// kind inplace does not serve, a rollout in flight, a container recreate under way, inplace's
// APIService manifests missing their Service.
func (m *Migrator) preflight(ctx context.Context) error {
	var problems []string
	counts := map[string]int{}
	for _, o := range m.objs {
		counts[o.GetKind()]++
	}
	for _, k := range m.state.Kinds {
		if counts[k.Kind] > 0 && !carried[k.Plural] {
			problems = append(problems, fmt.Sprintf("%d %s objects: inplace does not serve %s, they cannot be carried (delete them, or keep OpenKruise)", counts[k.Kind], k.Kind, k.CRD))
		}
	}
	for _, o := range m.objs {
		if p := inFlight(o); p != "" {
			problems = append(problems, fmt.Sprintf("%s %s/%s: %s", o.GetKind(), o.GetNamespace(), o.GetName(), p))
		}
	}
	if m.Opts.APIServices != "" {
		services, err := loadAPIServices(m.Opts.APIServices)
		if err != nil {
			return err
		}
		for _, s := range services {
			ns, _, _ := unstructured.NestedString(s.Object, "spec", "service", "namespace")
			name, _, _ := unstructured.NestedString(s.Object, "spec", "service", "name")
			if name == "" {
				problems = append(problems, fmt.Sprintf("APIService %s in %s names no Service", s.GetName(), m.Opts.APIServices))
				continue
			}
			if _, err := m.Kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
				problems = append(problems, fmt.Sprintf("APIService %s: its Service %s/%s: %v (is inplace installed?)", s.GetName(), ns, name, err))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("refusing to migrate:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

// inFlight says why the object is in the middle of something the migration would cut short, or "".
func inFlight(o unstructured.Unstructured) string {
	num := func(fields ...string) int64 {
		v, _, _ := unstructured.NestedInt64(o.Object, fields...)
		return v
	}
	observed := num("status", "observedGeneration")
	switch o.GetKind() {
	case "CloneSet", "StatefulSet":
		replicas, found, _ := unstructured.NestedInt64(o.Object, "spec", "replicas")
		if !found {
			replicas = 1
		}
		if observed != 0 && observed != o.GetGeneration() {
			return fmt.Sprintf("status.observedGeneration %d != generation %d: its controller has not caught up", observed, o.GetGeneration())
		}
		if updated := num("status", "updatedReplicas"); updated != replicas {
			return fmt.Sprintf("a rollout is in flight (updatedReplicas %d != replicas %d): let it finish first", updated, replicas)
		}
	case "DaemonSet":
		if desired, updated := num("status", "desiredNumberScheduled"), num("status", "updatedNumberScheduled"); desired != updated {
			return fmt.Sprintf("a rollout is in flight (updatedNumberScheduled %d != desiredNumberScheduled %d): let it finish first", updated, desired)
		}
	case "ContainerRecreateRequest":
		if phase, _, _ := unstructured.NestedString(o.Object, "status", "phase"); phase != "Completed" {
			return fmt.Sprintf("phase %q: the recreate is under way, let it complete (or delete it)", phase)
		}
	}
	return ""
}

func (m *Migrator) poll(ctx context.Context, what string, cond func(context.Context) (bool, error)) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, time.Second, m.Opts.Timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		last = err
		return ok, nil
	})
	if err != nil {
		if last != nil {
			return fmt.Errorf("waiting for %s: %w (last: %v)", what, err, last)
		}
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// plan prints what the migration would do.
func (m *Migrator) plan(ctx context.Context) error {
	m.printf("plan (dry run: nothing is changed):")
	counts := map[string]int{}
	for _, o := range m.objs {
		counts[o.GetKind()]++
	}
	m.printf("  1. backup: save %d apps.kruise.io objects to %s (progress in %s)", len(m.objs), m.Opts.Backup, StatePath(m.Opts.Backup))
	for _, k := range m.state.Kinds {
		m.printf("       %-28s %d at %s", k.CRD, counts[k.Kind], k.Version)
	}
	hooks, err := m.kruiseWebhooks(ctx)
	if err != nil {
		return err
	}
	m.printf("  2. webhooks: delete %s", strings.Join(hooks, ", "))
	deps, err := m.findDependents(ctx)
	if err != nil {
		return err
	}
	byRes := map[string]int{}
	for _, d := range deps {
		byRes[d.Resource]++
	}
	m.printf("  3. orphan: remove the apps.kruise.io ownerReferences of %d pods, %d persistentvolumeclaims, %d controllerrevisions", byRes["pods"], byRes["persistentvolumeclaims"], byRes["controllerrevisions"])
	var crds []string
	for _, k := range m.state.Kinds {
		crds = append(crds, k.CRD)
	}
	m.printf("  4. crds: delete %s and wait until they and their objects are gone", strings.Join(crds, ", "))
	if m.Opts.APIServices != "" {
		m.printf("  5. apiservices: register the APIServices of %s and wait until Available", m.Opts.APIServices)
	} else {
		m.printf("  5. apiservices: wait until inplace's APIServices of %s are registered (by you) and Available", Group)
	}
	m.printf("  6. recreate: create the %d objects through inplace (same names, spec, labels, annotations; status where accepted)", len(m.objs))
	m.printf("  7. adopt: give the %d dependents their owners back, with the new UIDs", len(deps))
	m.printf("  8. verify: every owned Pod has the same UID, images and restart counts")
	return nil
}

// backup saves the objects and snapshots the Pods they own.
func (m *Migrator) backup(ctx context.Context) error {
	if err := saveBackup(m.Opts.Backup, m.objs); err != nil {
		return err
	}
	pods, err := m.Kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing Pods: %w", err)
	}
	m.state.Pods = nil
	for _, p := range pods.Items {
		if !hasKruiseOwner(p.OwnerReferences) {
			continue
		}
		s := PodSnapshot{Namespace: p.Namespace, Name: p.Name, UID: p.UID, Images: map[string]string{}, Restarts: map[string]int32{}}
		for _, c := range p.Spec.Containers {
			s.Images[c.Name] = c.Image
		}
		for _, c := range p.Status.ContainerStatuses {
			s.Restarts[c.Name] = c.RestartCount
		}
		m.state.Pods = append(m.state.Pods, s)
	}
	m.printf("  saved %d objects to %s; %d Pods to keep unchanged", len(m.objs), m.Opts.Backup, len(m.state.Pods))
	return nil
}

func hasKruiseOwner(refs []metav1.OwnerReference) bool {
	for _, r := range refs {
		if isKruiseRef(r) {
			return true
		}
	}
	return false
}

func isKruiseRef(r metav1.OwnerReference) bool {
	gv, err := schema.ParseGroupVersion(r.APIVersion)
	return err == nil && gv.Group == Group
}

// kruiseWebhooks names OpenKruise's webhook configurations (kruise-*).
func (m *Migrator) kruiseWebhooks(ctx context.Context) ([]string, error) {
	var names []string
	mut, err := m.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing MutatingWebhookConfigurations: %w", err)
	}
	for _, w := range mut.Items {
		if strings.HasPrefix(w.Name, "kruise-") {
			names = append(names, "mutatingwebhookconfiguration/"+w.Name)
		}
	}
	val, err := m.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing ValidatingWebhookConfigurations: %w", err)
	}
	for _, w := range val.Items {
		if strings.HasPrefix(w.Name, "kruise-") {
			names = append(names, "validatingwebhookconfiguration/"+w.Name)
		}
	}
	return names, nil
}

// deleteWebhooks deletes OpenKruise's webhook configurations (saved in the progress file): with
// kruise-manager stopped they fail closed and would block the Pod updates that follow.
func (m *Migrator) deleteWebhooks(ctx context.Context) error {
	names, err := m.kruiseWebhooks(ctx)
	if err != nil {
		return err
	}
	adm := m.Kube.AdmissionregistrationV1()
	for _, n := range names {
		kind, name, _ := strings.Cut(n, "/")
		var obj any
		var del func() error
		if kind == "mutatingwebhookconfiguration" {
			obj, err = adm.MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
			del = func() error { return adm.MutatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{}) }
		} else {
			obj, err = adm.ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
			del = func() error { return adm.ValidatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{}) }
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", n, err)
		}
		raw, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		m.state.Webhooks = append(m.state.Webhooks, raw)
		if err := saveState(StatePath(m.Opts.Backup), m.state); err != nil {
			return err
		}
		if err := del(); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s: %w", n, err)
		}
		m.printf("  deleted %s", n)
	}
	return nil
}

// findDependents lists the Pods, PVCs and ControllerRevisions with apps.kruise.io owners.
func (m *Migrator) findDependents(ctx context.Context) ([]Dependent, error) {
	var deps []Dependent
	for _, res := range dependentOrder {
		list, err := m.Dynamic.Resource(dependentGVRs[res]).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", res, err)
		}
		for _, o := range list.Items {
			var refs []metav1.OwnerReference
			for _, r := range o.GetOwnerReferences() {
				if isKruiseRef(r) {
					refs = append(refs, r)
				}
			}
			if len(refs) > 0 {
				deps = append(deps, Dependent{Resource: res, Namespace: o.GetNamespace(), Name: o.GetName(), UID: o.GetUID(), Refs: refs})
			}
		}
	}
	return deps, nil
}

// orphan removes the apps.kruise.io ownerReferences of the Pods, PVCs and ControllerRevisions,
// recording each first: deleting the CRDs then deletes the objects and the garbage collector has
// nothing to cascade to.
func (m *Migrator) orphan(ctx context.Context) error {
	deps, err := m.findDependents(ctx)
	if err != nil {
		return err
	}
	if len(deps) == 0 {
		return nil
	}
	// Record before changing anything: a crash after a patch must still know the owner.
	m.state.Dependents = mergeDependents(m.state.Dependents, deps)
	if err := saveState(StatePath(m.Opts.Backup), m.state); err != nil {
		return err
	}
	for _, d := range deps {
		if err := m.setOwners(ctx, d, func(refs []metav1.OwnerReference) []metav1.OwnerReference {
			var kept []metav1.OwnerReference
			for _, r := range refs {
				if !isKruiseRef(r) {
					kept = append(kept, r)
				}
			}
			return kept
		}); err != nil {
			return err
		}
	}
	m.printf("  orphaned %d dependents", len(deps))
	return nil
}

// mergeDependents adds the newly found dependents (a re-run finds only those not orphaned yet).
func mergeDependents(have, found []Dependent) []Dependent {
	seen := map[types.UID]int{}
	for i, d := range have {
		seen[d.UID] = i
	}
	for _, d := range found {
		if i, ok := seen[d.UID]; ok {
			have[i].Refs = d.Refs
			continue
		}
		have = append(have, d)
	}
	return have
}

// setOwners rewrites the dependent's ownerReferences with a JSON patch that tests the UID and the
// references it read: nothing else of the object is written (a Pod is not updated), and a
// concurrent change of its owners makes it read again.
func (m *Migrator) setOwners(ctx context.Context, d Dependent, change func([]metav1.OwnerReference) []metav1.OwnerReference) error {
	client := m.Dynamic.Resource(dependentGVRs[d.Resource]).Namespace(d.Namespace)
	for attempt := 0; ; attempt++ {
		obj, err := client.Get(ctx, d.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			m.printf("  warning: %s %s/%s is gone", d.Resource, d.Namespace, d.Name)
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s %s/%s: %w", d.Resource, d.Namespace, d.Name, err)
		}
		if obj.GetUID() != d.UID {
			m.printf("  warning: %s %s/%s is another object now (UID %s, was %s): left alone", d.Resource, d.Namespace, d.Name, obj.GetUID(), d.UID)
			return nil
		}
		old := obj.GetOwnerReferences()
		updated := change(old)
		if equalRefs(old, updated) {
			return nil
		}
		if updated == nil {
			updated = []metav1.OwnerReference{}
		}
		patch := []map[string]any{
			{"op": "test", "path": "/metadata/uid", "value": d.UID},
			{"op": "test", "path": "/metadata/ownerReferences", "value": old},
			{"op": "replace", "path": "/metadata/ownerReferences", "value": updated},
		}
		if old == nil {
			patch = []map[string]any{
				{"op": "test", "path": "/metadata/uid", "value": d.UID},
				{"op": "add", "path": "/metadata/ownerReferences", "value": updated},
			}
		}
		raw, err := json.Marshal(patch)
		if err != nil {
			return err
		}
		_, err = client.Patch(ctx, d.Name, types.JSONPatchType, raw, metav1.PatchOptions{})
		if err == nil {
			return nil
		}
		if (apierrors.IsInvalid(err) || apierrors.IsConflict(err) || strings.Contains(err.Error(), "test")) && attempt < 5 {
			continue
		}
		return fmt.Errorf("setting the ownerReferences of %s %s/%s: %w", d.Resource, d.Namespace, d.Name, err)
	}
}

func equalRefs(a, b []metav1.OwnerReference) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].UID != b[i].UID || a[i].Kind != b[i].Kind || a[i].Name != b[i].Name {
			return false
		}
	}
	return true
}

// deleteCRDs deletes the apps.kruise.io CRDs, which deletes their objects, and waits until they
// are gone and kube-apiserver's autoregistration has let go of the group's APIServices. Before,
// it orphans again (a dependent created since) and drops the objects' finalizers (the controllers
// that would remove them are stopped; the objects are in the backup).
func (m *Migrator) deleteCRDs(ctx context.Context) error {
	if err := m.orphan(ctx); err != nil {
		return err
	}
	for _, k := range m.state.Kinds {
		if err := m.dropFinalizers(ctx, k); err != nil {
			return err
		}
		if err := m.Dynamic.Resource(crdGVR).Delete(ctx, k.CRD, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting CustomResourceDefinition %s: %w", k.CRD, err)
		}
		m.printf("  deleted CustomResourceDefinition %s", k.CRD)
	}
	if err := m.poll(ctx, "the apps.kruise.io CustomResourceDefinitions gone", func(ctx context.Context) (bool, error) {
		for _, k := range m.state.Kinds {
			if _, err := m.Dynamic.Resource(crdGVR).Get(ctx, k.CRD, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, fmt.Errorf("%s still there (%v)", k.CRD, err)
			}
		}
		return true, nil
	}); err != nil {
		return err
	}
	return m.poll(ctx, "kube-apiserver's CRD APIServices of apps.kruise.io gone", func(ctx context.Context) (bool, error) {
		for _, v := range m.versions() {
			if local, err := m.localAPIService(ctx, v+"."+Group); err != nil || local {
				return false, fmt.Errorf("APIService %s.%s still local (%v)", v, Group, err)
			}
		}
		return true, nil
	})
}

func (m *Migrator) versions() []string {
	vs := map[string]bool{}
	for _, k := range m.state.Kinds {
		vs[k.Version] = true
	}
	vs["v1alpha1"], vs["v1beta1"] = true, true
	var out []string
	for v := range vs {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// localAPIService tells whether the APIService exists and is served by kube-apiserver itself (no
// spec.service: a CRD's autoregistered one).
func (m *Migrator) localAPIService(ctx context.Context, name string) (bool, error) {
	s, err := m.Dynamic.Resource(apiServiceGVR).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	svc, _, _ := unstructured.NestedMap(s.Object, "spec", "service")
	return svc == nil, nil
}

func (m *Migrator) dropFinalizers(ctx context.Context, k Kind) error {
	list, err := m.Dynamic.Resource(k.gvr()).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing %s: %w", k.CRD, err)
	}
	for _, o := range list.Items {
		if len(o.GetFinalizers()) == 0 {
			continue
		}
		var client dynamic.ResourceInterface = m.Dynamic.Resource(k.gvr())
		if k.Namespaced {
			client = m.Dynamic.Resource(k.gvr()).Namespace(o.GetNamespace())
		}
		if _, err := client.Patch(ctx, o.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing the finalizers of %s %s/%s: %w", k.Kind, o.GetNamespace(), o.GetName(), err)
		}
	}
	return nil
}

// registerAPIServices applies inplace's APIServices (when given) and waits until each
// apps.kruise.io APIService is served by a Service and Available.
func (m *Migrator) registerAPIServices(ctx context.Context) error {
	if m.Opts.APIServices != "" {
		services, err := loadAPIServices(m.Opts.APIServices)
		if err != nil {
			return err
		}
		for _, s := range services {
			if err := m.applyAPIService(ctx, s); err != nil {
				return err
			}
		}
	}
	return m.poll(ctx, "inplace's APIServices Available", func(ctx context.Context) (bool, error) {
		for _, v := range []string{"v1alpha1", "v1beta1"} {
			name := v + "." + Group
			s, err := m.Dynamic.Resource(apiServiceGVR).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, fmt.Errorf("APIService %s: %w", name, err)
			}
			if svc, _, _ := unstructured.NestedMap(s.Object, "spec", "service"); svc == nil {
				return false, fmt.Errorf("APIService %s is not inplace's (no service)", name)
			}
			if !available(s) {
				return false, fmt.Errorf("APIService %s not Available", name)
			}
		}
		return true, nil
	})
}

func available(s *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(s.Object, "status", "conditions")
	for _, c := range conds {
		cm, _ := c.(map[string]any)
		if cm["type"] == "Available" && cm["status"] == "True" {
			return true
		}
	}
	return false
}

func (m *Migrator) applyAPIService(ctx context.Context, s unstructured.Unstructured) error {
	client := m.Dynamic.Resource(apiServiceGVR)
	s = *s.DeepCopy()
	s.SetResourceVersion("")
	s.SetUID("")
	delete(s.Object, "status")
	_, err := client.Create(ctx, &s, metav1.CreateOptions{})
	if err == nil {
		m.printf("  registered APIService %s", s.GetName())
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating APIService %s: %w", s.GetName(), err)
	}
	existing, err := client.Get(ctx, s.GetName(), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading APIService %s: %w", s.GetName(), err)
	}
	existing.Object["spec"] = s.Object["spec"]
	if _, err := client.Update(ctx, existing, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating APIService %s: %w", s.GetName(), err)
	}
	return nil
}

// loadAPIServices reads APIService manifests: YAML documents, each an APIService or a List of them.
func loadAPIServices(path string) ([]unstructured.Unstructured, error) {
	objs, err := loadManifests(path)
	if err != nil {
		return nil, err
	}
	var out []unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() != "APIService" {
			return nil, fmt.Errorf("%s: %s %s is not an APIService", path, o.GetKind(), o.GetName())
		}
		out = append(out, o)
	}
	if len(out) == 0 {
		return nil, errors.New(path + ": no APIService")
	}
	return out, nil
}

// recreate creates every saved object through inplace under the same name, with its spec,
// labels, annotations and non-apps.kruise.io owners, then writes its status when inplace takes it.
func (m *Migrator) recreate(ctx context.Context) error {
	for _, o := range m.objs {
		k, ok := m.kindOf(o.GetKind())
		if !ok {
			return fmt.Errorf("%s %s/%s: no CRD recorded for its kind", o.GetKind(), o.GetNamespace(), o.GetName())
		}
		var client dynamic.ResourceInterface = m.Dynamic.Resource(k.gvr())
		if k.Namespaced {
			client = m.Dynamic.Resource(k.gvr()).Namespace(o.GetNamespace())
		}
		created, err := client.Create(ctx, cleanForCreate(o), metav1.CreateOptions{})
		fresh := err == nil
		if apierrors.IsAlreadyExists(err) {
			// Created by an earlier run (whose status write, if it crashed before, the controller
			// makes up for).
			created, err = client.Get(ctx, o.GetName(), metav1.GetOptions{})
		}
		if err != nil {
			return fmt.Errorf("re-creating %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
		m.state.NewUIDs[objectKey(o.GetKind(), o.GetNamespace(), o.GetName())] = created.GetUID()
		if err := saveState(StatePath(m.Opts.Backup), m.state); err != nil {
			return err
		}
		if status := o.Object["status"]; fresh && !isEmpty(status) {
			created.Object["status"] = status
			if _, err := client.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				m.printf("  note: status of %s %s/%s not written (%v): its controller writes it", o.GetKind(), o.GetNamespace(), o.GetName(), err)
			}
		}
		m.printf("  re-created %s %s/%s (uid %s)", o.GetKind(), o.GetNamespace(), o.GetName(), created.GetUID())
	}
	return nil
}

func isEmpty(v any) bool {
	mv, ok := v.(map[string]any)
	return v == nil || ok && len(mv) == 0
}

// cleanForCreate is the object without what the server owns (uid, resourceVersion, timestamps,
// generation, managed fields), OpenKruise's finalizers (its controllers are gone), its
// apps.kruise.io owners (given UIDs that no longer exist) and its status (written afterwards).
func cleanForCreate(o unstructured.Unstructured) *unstructured.Unstructured {
	c := o.DeepCopy()
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds", "finalizers"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	var refs []metav1.OwnerReference
	for _, r := range o.GetOwnerReferences() {
		if !isKruiseRef(r) {
			refs = append(refs, r)
		}
	}
	c.SetOwnerReferences(refs)
	delete(c.Object, "status")
	return c
}

// adopt gives each dependent its apps.kruise.io owners back, with the UIDs of the re-created
// objects, so that inplace's controllers find their Pods, PVCs and revisions as theirs.
func (m *Migrator) adopt(ctx context.Context) error {
	adopted := 0
	for _, d := range m.state.Dependents {
		var add []metav1.OwnerReference
		for _, r := range d.Refs {
			uid, ok := m.state.NewUIDs[objectKey(r.Kind, d.Namespace, r.Name)]
			if !ok {
				m.printf("  warning: %s %s/%s: its owner %s %s was not re-created; left without it", d.Resource, d.Namespace, d.Name, r.Kind, r.Name)
				continue
			}
			r.UID = uid
			add = append(add, r)
		}
		if len(add) == 0 {
			continue
		}
		if err := m.setOwners(ctx, d, func(refs []metav1.OwnerReference) []metav1.OwnerReference {
			out := append([]metav1.OwnerReference(nil), refs...)
			for _, a := range add {
				if hasRef(out, a) {
					continue
				}
				if a.Controller != nil && *a.Controller && metav1.GetControllerOfNoCopy(&metav1.ObjectMeta{OwnerReferences: out}) != nil {
					m.printf("  warning: %s %s/%s has another controller now; %s %s not made its owner", d.Resource, d.Namespace, d.Name, a.Kind, a.Name)
					continue
				}
				out = append(out, a)
			}
			return out
		}); err != nil {
			return err
		}
		adopted++
	}
	m.printf("  gave %d dependents their owners back", adopted)
	return nil
}

func hasRef(refs []metav1.OwnerReference, r metav1.OwnerReference) bool {
	for _, x := range refs {
		if x.UID == r.UID {
			return true
		}
	}
	return false
}

// verify checks that every Pod the objects owned is the same Pod, with the same images and
// restart counts.
func (m *Migrator) verify(ctx context.Context) error {
	var problems []string
	for _, s := range m.state.Pods {
		p, err := m.Kube.CoreV1().Pods(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
		if err != nil {
			problems = append(problems, fmt.Sprintf("Pod %s/%s: %v", s.Namespace, s.Name, err))
			continue
		}
		if p.UID != s.UID {
			problems = append(problems, fmt.Sprintf("Pod %s/%s was recreated (UID %s, was %s)", s.Namespace, s.Name, p.UID, s.UID))
			continue
		}
		for _, c := range p.Spec.Containers {
			if c.Image != s.Images[c.Name] {
				problems = append(problems, fmt.Sprintf("Pod %s/%s container %s: image %s, was %s", s.Namespace, s.Name, c.Name, c.Image, s.Images[c.Name]))
			}
		}
		for _, c := range p.Status.ContainerStatuses {
			if c.RestartCount != s.Restarts[c.Name] {
				problems = append(problems, fmt.Sprintf("Pod %s/%s container %s: restartCount %d, was %d", s.Namespace, s.Name, c.Name, c.RestartCount, s.Restarts[c.Name]))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("the migrated Pods changed:\n  %s", strings.Join(problems, "\n  "))
	}
	m.printf("  %d Pods unchanged", len(m.state.Pods))
	return nil
}
