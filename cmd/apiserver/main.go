// Command inplace-apiserver serves OpenKruise's apps.kruise.io API (CloneSet, SidecarSet,
// ContainerRecreateRequest and the Pod subresources), standalone or aggregated into kube-apiserver.
package main

import (
	"os"

	"github.com/spf13/cobra"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"

	"github.com/inplace-dev/inplace/pkg/apiserver/options"
)

func main() {
	o := options.NewOptions()
	cmd := &cobra.Command{
		Use:   "inplace-apiserver",
		Short: "Serves apps.kruise.io: CloneSets, SidecarSets, ContainerRecreateRequests and in-place Pod updates",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	o.AddFlags(cmd.Flags())
	// SIGTERM or SIGINT cancels the context: the server drains, then the embedded etcd closes.
	cmd.SetContext(genericapiserver.SetupSignalContext())
	os.Exit(cli.Run(cmd))
}
