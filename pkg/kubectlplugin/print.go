package kubectlplugin

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	kruisescheme "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned/scheme"
)

// scheme knows the core kinds and apps.kruise.io's, so that the printers can set apiVersion and
// kind on what the typed clients return.
var scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(kruisescheme.AddToScheme(scheme))
}

// newPrintFlags are kubectl's -o flags (json|yaml|name|go-template|jsonpath...) whose default
// output is "KIND.GROUP/NAME OPERATION", as kubectl's rollout, set and scale print.
func newPrintFlags(operation string) *genericclioptions.PrintFlags {
	return genericclioptions.NewPrintFlags(operation).WithTypeSetter(scheme)
}

// printObject prints obj with the operation (and the dry-run suffix) in the default output.
func printObject(pf *genericclioptions.PrintFlags, operation string, dryRun DryRun, obj runtime.Object, out io.Writer) error {
	flags := *pf
	names := *pf.NamePrintFlags
	names.Operation = operation + dryRun.suffix()
	flags.NamePrintFlags = &names
	printer, err := flags.ToPrinter()
	if err != nil {
		return err
	}
	return printer.PrintObj(obj, out)
}

// outputRequested tells whether -o asks for the object rather than the sentence.
func outputRequested(pf *genericclioptions.PrintFlags) bool {
	return pf.OutputFormat != nil && *pf.OutputFormat != "" && *pf.OutputFormat != "name"
}

// DryRun is kubectl's --dry-run: none, client (nothing is sent), server (sent with dryRun=All).
type DryRun string

// The --dry-run strategies.
const (
	DryRunNone   DryRun = "none"
	DryRunClient DryRun = "client"
	DryRunServer DryRun = "server"
)

func addDryRunFlag(cmd *cobra.Command, target *string) {
	cmd.Flags().StringVar(target, "dry-run", "none",
		`Must be "none", "server", or "client". If client strategy, only print the object that would be sent, without sending it. If server strategy, submit a server-side request without persisting the resource.`)
	cmd.Flags().Lookup("dry-run").NoOptDefVal = "unchanged"
}

// parseDryRun reads --dry-run as kubectl does ("unchanged", a bare --dry-run, is client).
func parseDryRun(s string) (DryRun, error) {
	switch s {
	case "", "none", "false":
		return DryRunNone, nil
	case "client", "unchanged", "true":
		return DryRunClient, nil
	case "server":
		return DryRunServer, nil
	}
	return "", fmt.Errorf(`invalid dry-run value (%v). Must be "none", "server", or "client"`, s)
}

func (d DryRun) suffix() string {
	switch d {
	case DryRunClient:
		return " (dry run)"
	case DryRunServer:
		return " (server dry run)"
	}
	return ""
}

// options of a write, with dryRun=All for server dry runs.
func (d DryRun) updateOptions() metav1.UpdateOptions {
	if d == DryRunServer {
		return metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}
	}
	return metav1.UpdateOptions{}
}

func (d DryRun) patchOptions() metav1.PatchOptions {
	if d == DryRunServer {
		return metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}
	}
	return metav1.PatchOptions{}
}

func (d DryRun) createOptions() metav1.CreateOptions {
	if d == DryRunServer {
		return metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	}
	return metav1.CreateOptions{}
}
