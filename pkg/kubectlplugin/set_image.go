package kubectlplugin

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/util/retry"
)

// SetImageOptions are the flags of `set image`.
type SetImageOptions struct {
	All        bool
	DryRun     string
	PrintFlags *genericclioptions.PrintFlags

	dryRun    DryRun
	kind      Kind // with --all
	refs      []Ref
	images    map[string]string
	workloads workloads
	streams   genericiooptions.IOStreams
}

// NewCmdSetImage is `kubectl inplace set image`.
func NewCmdSetImage(f Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &SetImageOptions{PrintFlags: newPrintFlags("image updated"), streams: streams}
	cmd := &cobra.Command{
		Use:   "image (TYPE NAME | TYPE/NAME ...) CONTAINER_NAME_1=CONTAINER_IMAGE_1 ... CONTAINER_NAME_N=CONTAINER_IMAGE_N",
		Short: "Update the image of a pod template",
		Long: `Update the images of the Pod template of CloneSets, Advanced StatefulSets and Advanced
DaemonSets. A container name of '*' sets the image of every container (and init container), as in
kubectl set image. An image change is what an in-place update does best: with InPlaceIfPossible
or InPlaceOnly the containers are restarted with the new image in their running Pods.`,
		Example: `  # Set the image of container main of a CloneSet
  kubectl inplace set image clone/sample main=inplace.local/app:v2

  # Every container of every CloneSet in the namespace
  kubectl inplace set image clone --all '*=inplace.local/app:v2'

  # Ask the server what it would store, without storing it
  kubectl inplace set image asts/db main=inplace.local/app:v3 --dry-run=server -o yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(f, args); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().BoolVar(&o.All, "all", false, "Select all resources, in the namespace of the specified resource types")
	addDryRunFlag(cmd, &o.DryRun)
	o.PrintFlags.AddFlags(cmd)
	return cmd
}

// ParseImageArgs splits kubectl set image's arguments into the resources and the
// CONTAINER=IMAGE pairs.
func ParseImageArgs(args []string) (resources []string, images map[string]string, err error) {
	images = map[string]string{}
	for _, a := range args {
		name, image, ok := strings.Cut(a, "=")
		if !ok {
			if len(images) > 0 {
				return nil, nil, fmt.Errorf("all resources must be specified before image changes: %s", a)
			}
			resources = append(resources, a)
			continue
		}
		if name == "" || image == "" {
			return nil, nil, fmt.Errorf("invalid image change %q: expected CONTAINER_NAME=CONTAINER_IMAGE", a)
		}
		images[name] = image
	}
	if len(images) == 0 {
		return nil, nil, fmt.Errorf("at least one image update is required")
	}
	return resources, images, nil
}

// Complete reads the arguments and makes the client.
func (o *SetImageOptions) Complete(f Factory, args []string) error {
	resources, images, err := ParseImageArgs(args)
	if err != nil {
		return err
	}
	o.images = images
	if o.dryRun, err = parseDryRun(o.DryRun); err != nil {
		return err
	}
	if o.All {
		if len(resources) != 1 || strings.Contains(resources[0], "/") {
			return fmt.Errorf("--all takes one resource type (clone, asts or ads) and no names")
		}
		if o.kind, err = ParseKind(resources[0]); err != nil {
			return err
		}
	} else if o.refs, err = ParseRefs(resources); err != nil {
		return err
	}
	o.workloads, err = newWorkloads(f)
	return err
}

// SetImages sets the images of the template's containers and init containers; "*" is every
// container. It returns whether anything changed, and an error naming a container the template
// lacks.
func SetImages(t *corev1.PodTemplateSpec, images map[string]string) (bool, error) {
	changed := false
	for name, image := range images {
		found := false
		for _, list := range [][]corev1.Container{t.Spec.InitContainers, t.Spec.Containers} {
			for i := range list {
				if name == "*" || list[i].Name == name {
					found = true
					if list[i].Image != image {
						list[i].Image, changed = image, true
					}
				}
			}
		}
		if !found && name != "*" {
			return false, fmt.Errorf("unable to find container named %q", name)
		}
	}
	return changed, nil
}

// Run updates every workload (read, change, update; again on a conflict).
func (o *SetImageOptions) Run(ctx context.Context) error {
	refs := o.refs
	if o.All {
		all, err := o.workloads.list(ctx, o.kind)
		if err != nil {
			return err
		}
		for _, w := range all {
			refs = append(refs, w.Ref)
		}
	}
	for _, ref := range refs {
		var result *Workload
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			w, err := o.workloads.get(ctx, ref)
			if err != nil {
				return err
			}
			changed, err := SetImages(w.Template(), o.images)
			if err != nil {
				return fmt.Errorf("%s: %w", ref, err)
			}
			if !changed || o.dryRun == DryRunClient {
				result = w
				return nil
			}
			result, err = o.workloads.update(ctx, w, o.dryRun.updateOptions())
			return err
		})
		if err != nil {
			return err
		}
		if err := printObject(o.PrintFlags, "image updated", o.dryRun, result.Object, o.streams.Out); err != nil {
			return err
		}
	}
	return nil
}
