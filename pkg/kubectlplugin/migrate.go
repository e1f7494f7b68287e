package kubectlplugin

import (
	"errors"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/inplace-dev/inplace/pkg/migrate"
)

// RESTConfig is the client configuration of kubectl's flags: migrate works on CRDs and foreign
// objects with the dynamic client.
func (f *configFactory) RESTConfig() (*rest.Config, error) { return f.flags.ToRESTConfig() }

// NewCmdMigrate is `kubectl inplace migrate`.
func NewCmdMigrate(f Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := migrate.Options{KruiseNamespace: "kruise-system", InplaceNamespace: "inplace-system", Timeout: 5 * time.Minute, Out: streams.Out}
	cmd := &cobra.Command{
		Use:   "migrate --backup FILE [--apiservices FILE | --to-openkruise [--crds FILE]] [--dry-run]",
		Short: "Move a cluster from OpenKruise to inplace without touching a Pod",
		Long: `Move every apps.kruise.io object and every PodUnavailableBudget (policy.kruise.io) from
OpenKruise's CustomResourceDefinitions to inplace's aggregated API, keeping every Pod, PVC and
ControllerRevision (an OpenKruise without the PodUnavailableBudget CRD has simply none to carry):

  1. backup       save every object of the CRDs to --backup FILE (a YAML List: the way back)
  2. webhooks     delete OpenKruise's webhook configurations (kruise-*)
  3. orphan       remove the apps.kruise.io ownerReferences of Pods, PVCs, ControllerRevisions
  4. crds         delete the apps.kruise.io and policy.kruise.io CRDs and wait until they are gone
  5. apiservices  register inplace's APIServices of both groups (--apiservices FILE), wait until Available
  6. recreate     create every object again through inplace, same names
  7. adopt        give the Pods, PVCs and revisions their owners back (the new UIDs)
  8. verify       every Pod has the same UID, images and restart counts

It refuses to start while kruise-manager runs (or scales it down with --scale-down-kruise), while
a rollout is in flight, or with objects of a kind inplace does not serve. Progress is recorded in
FILE.state.json: after a failure, run the same command again and it carries on. Run inplace's
controller only after the migration (see docs/migration.md).

With --to-openkruise it goes the way back, from inplace's objects as they are now to OpenKruise's
CRDs, keeping every Pod, PVC and ControllerRevision (--backup names a file of its own):

  1. backup              save every object inplace serves, at OpenKruise's storage versions
  2. orphan              remove the apps.kruise.io ownerReferences of Pods, PVCs, ControllerRevisions
  3. objects             delete the objects from inplace
  4. remove-apiservices  delete inplace's APIServices of apps.kruise.io and policy.kruise.io
  5. install-crds        create OpenKruise's CRDs (--crds FILE), or wait until you install them
  6. recreate            create every object again in the CRDs, same names
  7. adopt               give the dependents their owners back (the new UIDs)
  8. verify              every Pod has the same UID, images and restart counts

It refuses while kruise-manager or inplace-controller runs, while OpenKruise's webhook
configurations exist and while a rollout is in flight: install only OpenKruise's CRDs, and the
rest of its chart (kruise-manager, webhooks) when it is done.`,
		Example: `  kubectl inplace migrate --backup kruise-backup.yaml --apiservices apiservices.yaml --dry-run
  kubectl -n kruise-system scale deployment/kruise-manager --replicas=0
  kubectl inplace migrate --backup kruise-backup.yaml --apiservices apiservices.yaml
  kubectl inplace migrate --to-openkruise --backup inplace-backup.yaml --crds kruise-crds.yaml`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Backup == "" {
				return errors.New("--backup FILE is required: the objects are saved there (the way back)")
			}
			if o.ToOpenKruise && o.APIServices != "" {
				return errors.New("--apiservices is for the migration to inplace, not --to-openkruise")
			}
			if !o.ToOpenKruise && o.CRDs != "" {
				return errors.New("--crds is for --to-openkruise")
			}
			rc, ok := f.(interface{ RESTConfig() (*rest.Config, error) })
			if !ok {
				return errors.New("migrate needs a client configuration")
			}
			config, err := rc.RESTConfig()
			if err != nil {
				return err
			}
			dyn, err := dynamic.NewForConfig(config)
			if err != nil {
				return err
			}
			kube, err := kubernetes.NewForConfig(config)
			if err != nil {
				return err
			}
			// For tests only: stop after a step's work as a crash would (see migrate.Options.CrashAfter).
			o.CrashAfter = os.Getenv("INPLACE_MIGRATE_CRASH_AFTER")
			m := &migrate.Migrator{Dynamic: dyn, Kube: kube, Opts: o}
			return m.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&o.Backup, "backup", "", "File to save the apps.kruise.io and policy.kruise.io objects to (and the progress to FILE.state.json).")
	cmd.Flags().StringVar(&o.APIServices, "apiservices", "", "inplace's APIService manifests, registered once the CRDs are gone (default: wait for them to be registered).")
	cmd.Flags().StringVar(&o.KruiseNamespace, "kruise-namespace", o.KruiseNamespace, "The namespace of kruise-manager.")
	cmd.Flags().StringVar(&o.InplaceNamespace, "inplace-namespace", o.InplaceNamespace, "inplace's namespace (inplace-controller's --namespace): SidecarSets' ControllerRevisions are moved there from --kruise-namespace.")
	cmd.Flags().BoolVar(&o.ScaleDownKruise, "scale-down-kruise", false, "Scale kruise-manager to 0 instead of refusing while it runs.")
	cmd.Flags().BoolVar(&o.ToOpenKruise, "to-openkruise", false, "The way back: move inplace's objects to OpenKruise's CRDs.")
	cmd.Flags().StringVar(&o.CRDs, "crds", "", "With --to-openkruise: OpenKruise's CRD manifests, created once inplace's APIServices are gone (default: wait for them to be installed). Their storage versions are the versions the objects are carried at.")
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "Print the plan; change nothing.")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", o.Timeout, "How long each wait (CRDs gone, APIServices Available) may take.")
	return cmd
}
