package migrate

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
)

// The way back (--to-openkruise): inplace's objects to OpenKruise's CRDs, without touching a Pod.
// It reuses the steps of the migration where they do the same thing (backup, orphan, recreate,
// adopt, verify); its own steps delete the objects from inplace, delete inplace's APIServices
// (kube-apiserver's CRD autoregistration cannot take an APIService while another one of the same
// name exists) and install (or wait for) OpenKruise's CRDs.

// DirectionToOpenKruise marks a state file of the way back.
const DirectionToOpenKruise = "to-openkruise"

// The steps of the way back that the migration to inplace does not have.
const (
	// StepObjects deletes the objects from inplace (after they are saved and their dependents
	// orphaned), so that inplace keeps no second copy that a later start of its controller acts on.
	StepObjects = "objects"
	// StepRemoveAPIServices deletes inplace's APIServices of apps.kruise.io and policy.kruise.io.
	StepRemoveAPIServices = "remove-apiservices"
	// StepInstallCRDs installs OpenKruise's CRDs (--crds FILE) or waits for them, until each
	// kind is served by kube-apiserver.
	StepInstallCRDs = "install-crds"
)

// BackSteps are the steps of the way back in the order they run.
var BackSteps = []string{StepBackup, StepOrphan, StepObjects, StepRemoveAPIServices, StepInstallCRDs, StepRecreate, StepAdopt, StepVerify}

// checkDirection refuses a state file of the other direction: its steps are not this run's.
func (m *Migrator) checkDirection() error {
	want := ""
	if m.Opts.ToOpenKruise {
		want = DirectionToOpenKruise
	}
	if m.resume && m.state.Direction != want {
		return fmt.Errorf("%s records %s, not %s: give this run its own --backup FILE",
			StatePath(m.Opts.Backup), directionName(m.state.Direction), directionName(want))
	}
	m.state.Direction = want
	return nil
}

func directionName(d string) string {
	if d == DirectionToOpenKruise {
		return "the way back to OpenKruise (--to-openkruise)"
	}
	return "the migration to inplace"
}

// runBack runs (or resumes) the way back, or with DryRun prints its plan.
func (m *Migrator) runBack(ctx context.Context) error {
	var err error
	if m.resume {
		m.printf("resuming the way back recorded in %s", StatePath(m.Opts.Backup))
		if m.objs, err = LoadBackup(m.Opts.Backup); err != nil {
			return err
		}
	} else {
		if m.state.Kinds, err = backKinds(m.Opts.CRDs); err != nil {
			return err
		}
		if err := m.discoverBack(ctx); err != nil {
			return err
		}
		if err := m.preflightBack(ctx); err != nil {
			return err
		}
	}
	if m.Opts.DryRun {
		return m.planBack(ctx)
	}
	steps := map[string]func(context.Context) error{
		StepBackup: m.backup, StepOrphan: m.orphan, StepObjects: m.deleteObjects, StepRemoveAPIServices: m.removeAPIServices,
		StepInstallCRDs: m.installCRDs, StepRecreate: m.recreate, StepAdopt: m.adopt, StepVerify: m.verify,
	}
	if err := m.runSteps(ctx, BackSteps, steps); err != nil {
		return err
	}
	created, _ := m.carried()
	m.printf("back to OpenKruise: %d objects in its CRDs, %d Pods unchanged; scale kruise-manager up now (kubectl -n %s scale deployment/kruise-manager --replicas=N)",
		created, len(m.state.Pods), m.Opts.KruiseNamespace)
	return nil
}

// discoverBack lists every object inplace serves, at the version it is re-created at: the
// current state, so changes made since the migration to inplace are kept. A group other than
// apps.kruise.io that inplace does not serve (an older inplace without policy.kruise.io, or its
// APIService left to a CRD) has nothing to carry back.
func (m *Migrator) discoverBack(ctx context.Context) error {
	m.objs = nil
	for _, k := range m.state.Kinds {
		v := k
		if v.Version == "" {
			v.Version = "v1beta1" // only counted: preflight refuses when there are any
			for _, d := range kruiseStorageKinds {
				if d.CRD == k.CRD {
					v.Version = d.Version
				}
			}
		}
		if k.group() != Group {
			name := v.Version + "." + k.group()
			served, err := m.servedByInplace(ctx, name)
			if err != nil {
				return fmt.Errorf("reading APIService %s: %w", name, err)
			}
			if !served {
				m.printf("inplace does not serve %s (APIService %s): no %s to carry back", k.group(), name, k.Kind)
				continue
			}
		}
		list, err := m.Dynamic.Resource(v.gvr()).List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing %s from inplace: %w", k.CRD, err)
		}
		m.objs = append(m.objs, list.Items...)
	}
	sort.SliceStable(m.objs, func(i, j int) bool { return m.objs[i].GetKind() < m.objs[j].GetKind() })
	return nil
}

// preflightBack refuses, with the reason, when the way back would lose something: apps.kruise.io
// not served by inplace, objects of a kind the --crds FILE has no CRD for, a rollout in flight,
// inplace's controller running (it would act on the orphaned Pods).
func (m *Migrator) preflightBack(ctx context.Context) error {
	var problems []string
	for _, v := range []string{"v1alpha1", "v1beta1"} {
		name := v + "." + Group
		if local, err := m.localAPIService(ctx, name); err != nil || local {
			problems = append(problems, fmt.Sprintf("APIService %s is not inplace's (%v): there is nothing to carry back", name, err))
		}
	}
	counts := m.countByCRD()
	for _, k := range m.state.Kinds {
		if k.Version == "" && counts[k.CRD] > 0 {
			problems = append(problems, fmt.Sprintf("%d %s objects: %s has no CRD %s to re-create them in", counts[k.CRD], k.Kind, m.Opts.CRDs, k.CRD))
		}
	}
	for _, o := range m.objs {
		if p := inFlight(o); p != "" {
			problems = append(problems, fmt.Sprintf("%s %s/%s: %s", o.GetKind(), o.GetNamespace(), o.GetName(), p))
		}
	}
	deploy, err := m.Kube.AppsV1().Deployments(m.Opts.InplaceNamespace).Get(ctx, "inplace-controller", metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading Deployment %s/inplace-controller: %w", m.Opts.InplaceNamespace, err)
	}
	if err == nil && (deploy.Status.Replicas > 0 || deploy.Spec.Replicas != nil && *deploy.Spec.Replicas > 0) {
		problems = append(problems, fmt.Sprintf("inplace-controller (Deployment %s/inplace-controller) still runs %d replicas: it would act on the orphaned Pods; scale it to 0 first (kubectl -n %s scale deployment/inplace-controller --replicas=0)",
			m.Opts.InplaceNamespace, deploy.Status.Replicas, m.Opts.InplaceNamespace))
	}
	if err := m.kruiseQuiet(ctx); err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		return fmt.Errorf("refusing to migrate back to OpenKruise:\n  %s", strings.Join(problems, "\n  "))
	}
	// Only the kinds that are carried are recorded (and waited for in install-crds).
	var kinds []Kind
	for _, k := range m.state.Kinds {
		if counts[k.CRD] > 0 {
			kinds = append(kinds, k)
		}
	}
	m.state.Kinds = kinds
	return nil
}

// planBack prints what the way back would do.
func (m *Migrator) planBack(ctx context.Context) error {
	m.printf("plan of the way back to OpenKruise (dry run: nothing is changed):")
	counts := m.countByCRD()
	m.printf("  1. backup: save %d objects of %s read from inplace to %s (progress in %s)", len(m.objs), kindGroups(m.state.Kinds), m.Opts.Backup, StatePath(m.Opts.Backup))
	for _, k := range m.state.Kinds {
		m.printf("       %-40s %d at %s", k.CRD, counts[k.CRD], k.Version)
	}
	deps, err := m.findDependents(ctx)
	if err != nil {
		return err
	}
	byRes := map[string]int{}
	for _, d := range deps {
		byRes[d.Resource]++
	}
	m.printf("  2. orphan: remove the apps.kruise.io ownerReferences of %d pods, %d persistentvolumeclaims, %d controllerrevisions", byRes["pods"], byRes["persistentvolumeclaims"], byRes["controllerrevisions"])
	m.printf("  3. objects: delete the %d objects from inplace (saved in %s)", len(m.objs), m.Opts.Backup)
	m.printf("  4. remove-apiservices: delete inplace's APIServices %s", strings.Join(groupAPIServices(Groups...), ", "))
	var crds []string
	for _, k := range m.state.Kinds {
		crds = append(crds, k.CRD)
	}
	if m.Opts.CRDs != "" {
		m.printf("  5. install-crds: create the CRDs of %s and wait until %s are served", m.Opts.CRDs, strings.Join(crds, ", "))
	} else {
		m.printf("  5. install-crds: wait until %s are installed (by you: OpenKruise's chart or CRDs) and served", strings.Join(crds, ", "))
	}
	created, kept := m.carried()
	m.printf("  6. recreate: create %d objects in OpenKruise's CRDs (same names, spec, labels, annotations; status); %d finished ContainerRecreateRequests stay in the backup only", created, kept)
	m.printf("  7. adopt: give the %d dependents their owners back, with the new UIDs (SidecarSets' revisions to %s)", len(deps), m.Opts.KruiseNamespace)
	m.printf("  8. verify: every owned Pod has the same UID, images and restart counts")
	m.printf("  then: scale kruise-manager up")
	return nil
}

func (m *Migrator) client(k Kind, namespace string) dynamic.ResourceInterface {
	if k.Namespaced {
		return m.Dynamic.Resource(k.gvr()).Namespace(namespace)
	}
	return m.Dynamic.Resource(k.gvr())
}

// deleteObjects deletes the saved objects from inplace: it orphans again first (a dependent
// created since), releases them (finalizers: inplace's controller is stopped; deletion
// protection: inplace's admission would refuse), deletes each one
// (its UID as precondition: a newer object of the same name is not the saved one) and waits
// until they are gone.
func (m *Migrator) deleteObjects(ctx context.Context) error {
	if err := m.orphan(ctx); err != nil {
		return err
	}
	for _, k := range m.state.Kinds {
		if err := m.release(ctx, k); err != nil {
			return err
		}
	}
	for _, o := range m.objs {
		k, ok := m.kindOfObject(o)
		if !ok {
			return fmt.Errorf("%s %s/%s: no kind recorded", o.GetKind(), o.GetNamespace(), o.GetName())
		}
		uid := o.GetUID()
		err := m.client(k, o.GetNamespace()).Delete(ctx, o.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting %s %s/%s from inplace: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
	return m.poll(ctx, "the objects gone from inplace", func(ctx context.Context) (bool, error) {
		for _, o := range m.objs {
			k, _ := m.kindOfObject(o)
			got, err := m.client(k, o.GetNamespace()).Get(ctx, o.GetName(), metav1.GetOptions{})
			if err == nil && got.GetUID() == o.GetUID() {
				return false, fmt.Errorf("%s %s/%s still there", o.GetKind(), o.GetNamespace(), o.GetName())
			}
			if err != nil && !apierrors.IsNotFound(err) {
				return false, err
			}
		}
		return true, nil
	})
}

// removeAPIServices deletes inplace's APIServices of every carried group (those with a Service; a
// local one is already kube-apiserver's), policy.kruise.io's too when it had no budgets: inplace
// is leaving, and a CRD of the group can be served only once its APIServices are gone.
func (m *Migrator) removeAPIServices(ctx context.Context) error {
	for _, name := range groupAPIServices(Groups...) {
		local, err := m.localAPIService(ctx, name)
		if err != nil {
			return fmt.Errorf("reading APIService %s: %w", name, err)
		}
		if local {
			continue
		}
		if err := m.Dynamic.Resource(apiServiceGVR).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting APIService %s: %w", name, err)
		}
		m.printf("  deleted APIService %s", name)
	}
	return nil
}

// installCRDs creates the CRDs of --crds FILE (leaving one that exists), then waits until every
// carried kind's CRD is there at the recorded version and its objects can be listed (the CRD is
// Established and kube-apiserver serves the group again).
func (m *Migrator) installCRDs(ctx context.Context) error {
	if m.Opts.CRDs != "" {
		objs, err := loadManifests(m.Opts.CRDs)
		if err != nil {
			return err
		}
		for _, o := range objs {
			if o.GetKind() != "CustomResourceDefinition" {
				continue
			}
			c := o.DeepCopy()
			c.SetResourceVersion("")
			c.SetUID("")
			delete(c.Object, "status")
			if _, err := m.Dynamic.Resource(crdGVR).Create(ctx, c, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating CustomResourceDefinition %s: %w", c.GetName(), err)
			}
			m.printf("  created CustomResourceDefinition %s", c.GetName())
		}
	}
	err := m.poll(ctx, "OpenKruise's CRDs installed and served (install OpenKruise's CRDs, or pass --crds FILE)", func(ctx context.Context) (bool, error) {
		for _, k := range m.state.Kinds {
			crd, err := m.Dynamic.Resource(crdGVR).Get(ctx, k.CRD, metav1.GetOptions{})
			if err != nil {
				return false, fmt.Errorf("CustomResourceDefinition %s: %w", k.CRD, err)
			}
			if !servesVersion(*crd, k.Version) {
				return false, fmt.Errorf("CustomResourceDefinition %s does not serve %s", k.CRD, k.Version)
			}
			if _, err := m.Dynamic.Resource(k.gvr()).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
				return false, fmt.Errorf("listing %s: %w", k.CRD, err)
			}
		}
		for _, name := range kindAPIServices(m.state.Kinds) {
			if local, err := m.localAPIService(ctx, name); err != nil || !local {
				return false, fmt.Errorf("APIService %s not kube-apiserver's yet (%v)", name, err)
			}
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	// Installed with the whole chart: kruise-manager and its webhooks must wait until the objects
	// and their dependents are back together.
	return m.kruiseQuiet(ctx)
}

// kruiseQuiet refuses while OpenKruise's webhook configurations exist (with kruise-manager
// stopped they fail closed on the re-creation) or kruise-manager runs (its controllers would see
// the re-created workloads without their Pods and create new ones).
func (m *Migrator) kruiseQuiet(ctx context.Context) error {
	hooks, err := m.kruiseWebhooks(ctx)
	if err != nil {
		return err
	}
	var problems []string
	if len(hooks) > 0 {
		problems = append(problems, fmt.Sprintf("OpenKruise's webhook configurations %s exist: install only OpenKruise's CRDs now (delete these), the rest of its chart after the way back",
			strings.Join(hooks, ", ")))
	}
	deploy, err := m.Kube.AppsV1().Deployments(m.Opts.KruiseNamespace).Get(ctx, "kruise-manager", metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading Deployment %s/kruise-manager: %w", m.Opts.KruiseNamespace, err)
	}
	if err == nil && (deploy.Status.Replicas > 0 || deploy.Spec.Replicas != nil && *deploy.Spec.Replicas > 0) {
		problems = append(problems, fmt.Sprintf("kruise-manager (Deployment %s/kruise-manager) runs: its controllers would create Pods for the re-created workloads before they have theirs back; scale it to 0",
			m.Opts.KruiseNamespace))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}
