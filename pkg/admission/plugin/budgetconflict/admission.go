// Package budgetconflict is the built-in admission plugin that keeps one PodUnavailableBudget per
// Pod, as OpenKruise's webhook does: a budget whose targetRef names the workload another budget of
// its namespace names, or whose selector overlaps another's loosely (podbudget.Conflict), is
// refused with a 422 naming the other budget. The budgets are read from this server's informer
// (no kube-apiserver needed: it runs in standalone mode too).
package budgetconflict

import (
	"context"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"

	"github.com/inplace-dev/inplace/pkg/admission/appsinitializer"
	"github.com/inplace-dev/inplace/pkg/apis/policy"
	informers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions"
	listers "github.com/inplace-dev/inplace/pkg/generated/listers/policy/v1beta1"
	"github.com/inplace-dev/inplace/pkg/podbudget"
)

// PluginName is the plugin's name in --enable-admission-plugins and --disable-admission-plugins.
const PluginName = "PodUnavailableBudget"

// Register registers the plugin.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) { return New(), nil })
}

// Plugin refuses a budget that would guard Pods another budget guards.
type Plugin struct {
	*admission.Handler
	budgets listers.PodUnavailableBudgetLister
}

var (
	_ admission.ValidationInterface               = &Plugin{}
	_ appsinitializer.WantsInplaceInformerFactory = &Plugin{}
)

// New returns the plugin; it acts on CREATE and UPDATE.
func New() *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update)}
}

// SetInplaceInformerFactory gives the plugin the budgets it checks a new one against.
func (p *Plugin) SetInplaceInformerFactory(f informers.SharedInformerFactory) {
	informer := f.Policy().V1beta1().PodUnavailableBudgets()
	p.budgets = informer.Lister()
	p.SetReadyFunc(informer.Informer().HasSynced)
}

// ValidateInitialization fails when the plugin did not get its lister.
func (p *Plugin) ValidateInitialization() error {
	if p.budgets == nil {
		return fmt.Errorf("%s admission plugin: no PodUnavailableBudget informer", PluginName)
	}
	return nil
}

// Validate refuses a budget that conflicts with another of its namespace.
func (p *Plugin) Validate(_ context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != policy.Resource("podunavailablebudgets") || a.GetSubresource() != "" {
		return nil
	}
	// A budget checked against an informer not yet synced would miss the budgets it conflicts with.
	if !p.WaitForReady() {
		return admission.NewForbidden(a, fmt.Errorf("%s admission plugin: not yet ready to check PodUnavailableBudgets, try again", PluginName))
	}
	pub, ok := a.GetObject().(*policy.PodUnavailableBudget)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("expected a PodUnavailableBudget, got %T", a.GetObject()))
	}
	listed, err := p.budgets.PodUnavailableBudgets(a.GetNamespace()).List(labels.Everything())
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("listing the PodUnavailableBudgets of %s: %w", a.GetNamespace(), err))
	}
	others := make([]*policy.PodUnavailableBudget, 0, len(listed))
	for _, l := range listed {
		internal := &policy.PodUnavailableBudget{}
		if err := o.GetObjectConvertor().Convert(l, internal, nil); err != nil {
			return apierrors.NewInternalError(fmt.Errorf("converting PodUnavailableBudget %s: %w", l.Name, err))
		}
		others = append(others, internal)
	}
	pub = pub.DeepCopy()
	pub.Namespace = a.GetNamespace()
	name, path := podbudget.Conflict(pub, others)
	if path == "" {
		return nil
	}
	what := map[string]string{"spec.targetRef": "the same workload", "spec.selector": "overlapping Pods"}[path]
	return apierrors.NewInvalid(policy.Kind("PodUnavailableBudget"), pub.Name, field.ErrorList{field.Invalid(field.NewPath(path), "",
		fmt.Sprintf("conflicts with PodUnavailableBudget %s, which guards %s: a Pod may be guarded by one budget only", name, what))})
}
