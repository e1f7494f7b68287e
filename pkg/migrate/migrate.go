package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	// InplaceNamespace is inplace's own namespace (inplace-controller's --namespace), where
	// inplace keeps SidecarSets' ControllerRevisions; OpenKruise keeps them in KruiseNamespace.
	InplaceNamespace string
	// ScaleDownKruise scales kruise-manager to 0 instead of refusing while it runs.
	ScaleDownKruise bool
	// ToOpenKruise runs the way back (back.go): inplace's objects to OpenKruise's CRDs.
	ToOpenKruise bool
	// CRDs is a file of OpenKruise's CRD manifests the way back installs once inplace's
	// APIServices are gone; empty: the operator installs them (the way back waits for them).
	CRDs string
	// DryRun prints the plan and changes nothing.
	DryRun bool
	// Timeout bounds each wait (CRDs gone, APIServices Available).
	Timeout time.Duration
	// CrashAfter, for tests only, is a step after whose work the run stops with an error before
	// recording the step done: the crash a re-run must recover from by doing the step again. The
	// command sets it from $INPLACE_MIGRATE_CRASH_AFTER (test/e2e/migrate_test.go).
	CrashAfter string
	Out        io.Writer
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
	if m.Opts.InplaceNamespace == "" {
		m.Opts.InplaceNamespace = "inplace-system"
	}
	state, resume, err := loadState(StatePath(m.Opts.Backup))
	if err != nil {
		return err
	}
	m.state, m.resume = state, resume
	if err := m.checkDirection(); err != nil {
		return err
	}
	if m.Opts.ToOpenKruise && resume && state.allDone(BackSteps) {
		// kruise-manager runs again by now: nothing is left to do, nothing to refuse.
		m.printf("the way back recorded in %s is done: nothing to do", StatePath(m.Opts.Backup))
		return nil
	}
	if err := m.checkKruiseManager(ctx); err != nil {
		return err
	}
	if m.Opts.ToOpenKruise {
		return m.runBack(ctx)
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
	if err := m.runSteps(ctx, Steps, steps); err != nil {
		return err
	}
	created, _ := m.carried()
	m.printf("migrated: %d objects now served by inplace, %d Pods unchanged; keep %s (the way back)", created, len(m.state.Pods), m.Opts.Backup)
	return nil
}

// runSteps runs the steps not recorded done, in order, recording each one done after its work.
func (m *Migrator) runSteps(ctx context.Context, order []string, steps map[string]func(context.Context) error) error {
	for i, step := range order {
		if m.state.Done[step] {
			m.printf("step %d/%d %s: done before", i+1, len(order), step)
			continue
		}
		m.printf("step %d/%d %s", i+1, len(order), step)
		if err := steps[step](ctx); err != nil {
			return fmt.Errorf("step %s: %w (fix the cause and run the same command again: it carries on)", step, err)
		}
		if step == m.Opts.CrashAfter {
			return fmt.Errorf("step %s: crashed on purpose after its work, before recording it done (CrashAfter, for tests)", step)
		}
		m.state.Done[step] = true
		if err := saveState(StatePath(m.Opts.Backup), m.state); err != nil {
			return err
		}
	}
	return nil
}

// discover lists the CRDs of the carried groups and every object of theirs (at the storage
// version). An OpenKruise without the PodUnavailableBudget CRD (older than v0.10) has simply no
// policy.kruise.io kind: nothing of it to carry, no CRD of it to delete.
func (m *Migrator) discover(ctx context.Context) error {
	list, err := m.Dynamic.Resource(crdGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing CustomResourceDefinitions: %w", err)
	}
	m.state.Kinds = nil
	for _, crd := range list.Items {
		if g, _, _ := unstructured.NestedString(crd.Object, "spec", "group"); !carriedGroup(g) {
			continue
		}
		m.state.Kinds = append(m.state.Kinds, crdKind(crd))
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

// plan prints what the migration would do.
func (m *Migrator) plan(ctx context.Context) error {
	m.printf("plan (dry run: nothing is changed):")
	counts := m.countByCRD()
	m.printf("  1. backup: save %d objects of %s to %s (progress in %s)", len(m.objs), kindGroups(m.state.Kinds), m.Opts.Backup, StatePath(m.Opts.Backup))
	for _, k := range m.state.Kinds {
		m.printf("       %-40s %d at %s", k.CRD, counts[k.CRD], k.Version)
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
		m.printf("  5. apiservices: register the APIServices of %s and wait until %s are Available", m.Opts.APIServices, strings.Join(apiServiceNames(m.state.Kinds), ", "))
	} else {
		m.printf("  5. apiservices: wait until inplace's APIServices %s are registered (by you) and Available", strings.Join(apiServiceNames(m.state.Kinds), ", "))
	}
	created, kept := m.carried()
	m.printf("  6. recreate: create %d objects through inplace (same names, spec, labels, annotations; status where accepted); %d finished ContainerRecreateRequests stay in the backup only", created, kept)
	m.printf("  7. adopt: give the %d dependents their owners back, with the new UIDs", len(deps))
	m.printf("  8. verify: every owned Pod has the same UID, images and restart counts")
	return nil
}

// countByCRD counts the objects by the CRD of their kind.
func (m *Migrator) countByCRD() map[string]int {
	counts := map[string]int{}
	for _, o := range m.objs {
		if k, ok := m.kindOfObject(o); ok {
			counts[k.CRD]++
		}
	}
	return counts
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
	set := m.migrating()
	sidecarSets := m.sidecarSetNames()
	for _, p := range pods.Items {
		if !set.ownsAny(p.OwnerReferences) && !injectedBy(&p, sidecarSets) {
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

// sidecarSetNames are the names of the SidecarSets being migrated.
func (m *Migrator) sidecarSetNames() map[string]bool {
	names := map[string]bool{}
	for _, o := range m.objs {
		if o.GetKind() == "SidecarSet" {
			names[o.GetName()] = true
		}
	}
	return names
}

// injectedBy tells whether one of the SidecarSets injected the Pod (its kruise.io/sidecarset-hash
// annotation, a JSON object keyed by SidecarSet name, names it): the Pod is not owned by the
// SidecarSet, but its sidecars are the SidecarSet's, so it is kept unchanged like an owned Pod.
func injectedBy(p *corev1.Pod, sidecarSets map[string]bool) bool {
	raw := p.Annotations[sidecarSetHashAnnotation]
	if raw == "" || len(sidecarSets) == 0 {
		return false
	}
	var hashes map[string]json.RawMessage
	if json.Unmarshal([]byte(raw), &hashes) != nil {
		return false
	}
	for name := range hashes {
		if sidecarSets[name] {
			return true
		}
	}
	return false
}

const sidecarSetHashAnnotation = "kruise.io/sidecarset-hash"
