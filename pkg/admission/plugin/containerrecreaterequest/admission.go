// Package containerrecreaterequest is the built-in admission plugin of ContainerRecreateRequests
// (CRRs). On CREATE it checks the request against the live Pod it names and fills in what the
// daemon and the controller need from that Pod, as OpenKruise's CRR webhook does:
//
//   - the Pod must exist, not be terminating or terminated, be scheduled to a node, and have a
//     restartPolicy that starts a stopped container again (not Never);
//   - every named container must be a container of the Pod (not an init container) that has
//     started (a containerID in the Pod status);
//   - labels crr.apps.kruise.io/pod-uid, crr.apps.kruise.io/node-name and
//     crr.apps.kruise.io/active=true; each container's statusContext (the instance to replace:
//     containerID and restartCount), preStop (the container's lifecycle.preStop) and, for an
//     httpGet preStop, ports; strategy.terminationGracePeriodSeconds from the Pod when unset;
//     the annotation crr.apps.kruise.io/admitted-at, which orders a Pod's requests made within
//     one second (creationTimestamp has whole seconds).
//
// preStop, ports and statusContext are the server's to fill: a request that sets them is refused.
// Field validation (names, bounds, immutability on UPDATE) is the registry strategy's.
//
// The Pod is read with a live GET, not from an informer: the statusContext must name the
// container instance that runs now, or a request made just after a restart would count that
// restart as its own.
package containerrecreaterequest

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	genericinitializer "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/kubernetes"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/containerrecreate"
	"github.com/inplace-dev/inplace/pkg/podreadiness"
)

// PluginName is the plugin's name in --enable-admission-plugins and --disable-admission-plugins.
const PluginName = "ContainerRecreateRequest"

// defaultTerminationGracePeriodSeconds is the Pod default (core/v1 defaults it to 30 as well).
const defaultTerminationGracePeriodSeconds = 30

// Register registers the plugin.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) { return New(), nil })
}

// Plugin admits ContainerRecreateRequests.
type Plugin struct {
	*admission.Handler
	kube kubernetes.Interface
	now  func() time.Time
}

var (
	_ admission.MutationInterface                   = &Plugin{}
	_ admission.ValidationInterface                 = &Plugin{}
	_ genericinitializer.WantsExternalKubeClientSet = &Plugin{}
	_ admission.InitializationValidator             = &Plugin{}
)

// New returns the plugin; it acts on CREATE only (UPDATE is the strategy's: the spec is immutable).
func New() *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create), now: time.Now}
}

// SetExternalKubeClientSet gives the plugin the core client it reads Pods with.
func (p *Plugin) SetExternalKubeClientSet(client kubernetes.Interface) { p.kube = client }

// ValidateInitialization fails when the plugin did not get its client.
func (p *Plugin) ValidateInitialization() error {
	if p.kube == nil {
		return fmt.Errorf("%s admission plugin: no core client (it needs a cluster: aggregated mode)", PluginName)
	}
	return nil
}

// shouldIgnore skips everything but the creation of a ContainerRecreateRequest itself.
func shouldIgnore(a admission.Attributes) bool {
	return a.GetResource().GroupResource() != apps.Resource("containerrecreaterequests") || a.GetSubresource() != ""
}

// Admit checks the request against its Pod and fills in what comes from the Pod.
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if shouldIgnore(a) {
		return nil
	}
	crr, ok := a.GetObject().(*apps.ContainerRecreateRequest)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("expected a ContainerRecreateRequest, got %T", a.GetObject()))
	}
	if crr.Spec.PodName == "" {
		return nil // the strategy's validation says spec.podName is required
	}
	pod, err := p.kube.CoreV1().Pods(a.GetNamespace()).Get(ctx, crr.Spec.PodName, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return apierrors.NewInternalError(fmt.Errorf("reading pod %s/%s: %w", a.GetNamespace(), crr.Spec.PodName, err))
	}
	if apierrors.IsNotFound(err) {
		pod = nil
	}
	if errs := Fill(crr, pod); len(errs) > 0 {
		return apierrors.NewInvalid(apps.Kind("ContainerRecreateRequest"), objectName(crr), errs)
	}
	if crr.Annotations == nil {
		crr.Annotations = map[string]string{}
	}
	crr.Annotations[containerrecreate.AdmittedAtAnnotation] = p.now().UTC().Format(time.RFC3339Nano)
	if w := Warning(crr, pod); w != "" {
		warning.AddWarning(ctx, "", w)
	}
	return p.Validate(ctx, a, nil)
}

// Validate refuses a request whose Pod facts were not filled in (or were taken away after Admit,
// by a later mutating webhook).
func (p *Plugin) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if shouldIgnore(a) {
		return nil
	}
	crr, ok := a.GetObject().(*apps.ContainerRecreateRequest)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("expected a ContainerRecreateRequest, got %T", a.GetObject()))
	}
	var errs field.ErrorList
	labels := field.NewPath("metadata", "labels")
	for _, k := range []string{v1alpha1.ContainerRecreateRequestPodUIDKey, v1alpha1.ContainerRecreateRequestNodeNameKey} {
		if crr.Labels[k] == "" {
			errs = append(errs, field.Required(labels.Key(k), "filled from the Pod by admission"))
		}
	}
	for i := range crr.Spec.Containers {
		if crr.Spec.Containers[i].StatusContext == nil {
			errs = append(errs, field.Required(field.NewPath("spec", "containers").Index(i).Child("statusContext"), "filled from the Pod by admission"))
		}
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(apps.Kind("ContainerRecreateRequest"), objectName(crr), errs)
	}
	return nil
}

func objectName(crr *apps.ContainerRecreateRequest) string {
	if crr.Name != "" {
		return crr.Name
	}
	return crr.GenerateName
}

// Fill checks crr against its Pod (nil: not found) and fills in what comes from the Pod. It
// returns what is wrong, with field paths; crr is changed only when nothing is.
func Fill(crr *apps.ContainerRecreateRequest, pod *corev1.Pod) field.ErrorList {
	podPath := field.NewPath("spec", "podName")
	name := crr.Spec.PodName
	switch {
	case pod == nil:
		return field.ErrorList{field.NotFound(podPath, name)}
	case pod.DeletionTimestamp != nil:
		return field.ErrorList{field.Invalid(podPath, name, "the Pod is being deleted: its containers cannot be recreated")}
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		return field.ErrorList{field.Invalid(podPath, name, fmt.Sprintf("the Pod has terminated (phase %s): its containers cannot be recreated", pod.Status.Phase))}
	case pod.Spec.NodeName == "":
		return field.ErrorList{field.Invalid(podPath, name, "the Pod is not scheduled to a node yet: its containers cannot be recreated")}
	case pod.Spec.RestartPolicy == corev1.RestartPolicyNever:
		return field.ErrorList{field.Invalid(podPath, name, "the Pod's restartPolicy is Never: a stopped container would not be started again")}
	}

	var errs field.ErrorList
	filled := make([]apps.ContainerRecreateRequestContainer, len(crr.Spec.Containers))
	for i, c := range crr.Spec.Containers {
		path := field.NewPath("spec", "containers").Index(i)
		if c.PreStop != nil {
			errs = append(errs, field.Forbidden(path.Child("preStop"), "filled from the Pod's container by the server; leave it out"))
		}
		if len(c.Ports) > 0 {
			errs = append(errs, field.Forbidden(path.Child("ports"), "filled from the Pod's container by the server; leave it out"))
		}
		if c.StatusContext != nil {
			errs = append(errs, field.Forbidden(path.Child("statusContext"), "filled from the Pod's status by the server; leave it out"))
		}
		spec := findContainer(pod.Spec.Containers, c.Name)
		if spec == nil {
			msg := fmt.Sprintf("the Pod has no container %q", c.Name)
			if findContainer(pod.Spec.InitContainers, c.Name) != nil {
				msg = fmt.Sprintf("%q is an init container of the Pod: only its containers can be recreated", c.Name)
			}
			errs = append(errs, field.Invalid(path.Child("name"), c.Name, msg))
			continue
		}
		status := findStatus(pod.Status.ContainerStatuses, c.Name)
		if status == nil || status.ContainerID == "" {
			errs = append(errs, field.Invalid(path.Child("name"), c.Name,
				"the container has not been started yet (no containerID in the Pod status): there is nothing to recreate"))
			continue
		}
		filled[i] = apps.ContainerRecreateRequestContainer{
			Name:          c.Name,
			StatusContext: &apps.ContainerRecreateRequestContainerContext{ContainerID: status.ContainerID, RestartCount: status.RestartCount},
		}
		if spec.Lifecycle != nil && spec.Lifecycle.PreStop != nil {
			h := spec.Lifecycle.PreStop
			filled[i].PreStop = &apps.ProbeHandler{Exec: h.Exec, HTTPGet: h.HTTPGet, TCPSocket: h.TCPSocket}
			if h.HTTPGet != nil {
				filled[i].Ports = spec.Ports
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}

	crr.Spec.Containers = filled
	if crr.Labels == nil {
		crr.Labels = map[string]string{}
	}
	crr.Labels[v1alpha1.ContainerRecreateRequestPodUIDKey] = string(pod.UID)
	crr.Labels[v1alpha1.ContainerRecreateRequestNodeNameKey] = pod.Spec.NodeName
	crr.Labels[v1alpha1.ContainerRecreateRequestActiveKey] = strconv.FormatBool(true)
	if crr.Spec.Strategy == nil {
		crr.Spec.Strategy = &apps.ContainerRecreateRequestStrategy{}
	}
	if crr.Spec.Strategy.FailurePolicy == "" {
		crr.Spec.Strategy.FailurePolicy = apps.ContainerRecreateRequestFailurePolicyFail
	}
	if crr.Spec.Strategy.TerminationGracePeriodSeconds == nil {
		grace := int64(defaultTerminationGracePeriodSeconds)
		if pod.Spec.TerminationGracePeriodSeconds != nil {
			grace = *pod.Spec.TerminationGracePeriodSeconds
		}
		crr.Spec.Strategy.TerminationGracePeriodSeconds = &grace
	}
	return nil
}

// Warning is what the client should know about an accepted request, "" when nothing.
func Warning(crr *apps.ContainerRecreateRequest, pod *corev1.Pod) string {
	if s := crr.Spec.Strategy; s != nil && s.UnreadyGracePeriodSeconds != nil && pod != nil && !podreadiness.HasGate(pod) {
		return fmt.Sprintf("spec.strategy.unreadyGracePeriodSeconds: Pod %s has no KruisePodReady readiness gate, so it stays in service "+
			"while its containers are recreated (the wait still applies)", pod.Name)
	}
	return ""
}

func findContainer(containers []corev1.Container, name string) *corev1.Container {
	for i := range containers {
		if containers[i].Name == name {
			return &containers[i]
		}
	}
	return nil
}

func findStatus(statuses []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range statuses {
		if statuses[i].Name == name {
			return &statuses[i]
		}
	}
	return nil
}
