package migrate

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
)

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
// APIService manifests missing their Service or missing for a carried group.
func (m *Migrator) preflight(ctx context.Context) error {
	var problems []string
	counts := m.countByCRD()
	for _, k := range m.state.Kinds {
		if counts[k.CRD] > 0 && !carried[k.CRD] {
			problems = append(problems, fmt.Sprintf("%d %s objects: inplace does not serve %s, they cannot be carried (delete them, or keep OpenKruise)", counts[k.CRD], k.Kind, k.CRD))
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
		names := map[string]bool{}
		for _, s := range services {
			names[s.GetName()] = true
		}
		for _, name := range apiServiceNames(m.state.Kinds) {
			if !names[name] {
				problems = append(problems, fmt.Sprintf("%s has no APIService %s: the objects of its group would have nothing to be re-created in (render it from an inplace that serves the group)", m.Opts.APIServices, name))
			}
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
