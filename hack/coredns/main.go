// Command coredns is the local cluster's DNS server (hack/local-up.sh starts it like the other
// host processes and points the kubelet's clusterDNS at it): CoreDNS with only the plugins a
// single-node test cluster needs, so Pods resolve Service and headless-Service names
// (inplace-etcd-0.inplace-etcd.inplace-system.svc) as in any real cluster. It is not part of
// inplace. Built by hack/build-kube.sh coredns from this separate module, which keeps CoreDNS's
// dependencies out of the project's go.mod.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	// The plugins this build offers, registered by their init functions; the order in which
	// they handle a query is dnsserver.Directives below.
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

func init() {
	dnsserver.Directives = []string{"bind", "errors", "ready", "cache", "kubernetes"}
}

func main() {
	coremain.Run()
}
