// Package charts holds the Helm chart of inplace (charts/inplace) and the tests that it installs
// what the kustomize manifests of artifacts/deploy install. No cluster: helm (hack/helm.sh, built
// once at its pinned version) renders the chart, kubectl (_output/bin/kubectl, or $KUBECTL)
// renders the kustomizations, and the objects are compared field by field.
package charts

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inplace-dev/inplace/test/manifests"
)

const chart = "charts/inplace"

var (
	rootOnce sync.Once
	root     string
	helmOnce sync.Once
	helmBin  string
	helmErr  error
)

// repoRoot is the repository's top directory (tests run in charts/).
func repoRoot(t *testing.T) string {
	rootOnce.Do(func() {
		wd, err := os.Getwd()
		if err != nil {
			panic(err)
		}
		root = filepath.Dir(wd)
	})
	return root
}

// run runs a program in the repository's top directory and returns its standard output.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = repoRoot(t)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, stderr.String(), stdout.String())
	}
	return stdout.String()
}

// helm is the path of the helm binary hack/helm.sh built (it builds it on first use).
func helm(t *testing.T) string {
	t.Helper()
	helmOnce.Do(func() {
		cmd := exec.Command("hack/helm.sh")
		cmd.Dir = repoRoot(t)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		helmBin, helmErr = strings.TrimSpace(string(out)), err
	})
	if helmErr != nil {
		t.Fatalf("hack/helm.sh: %v", helmErr)
	}
	return helmBin
}

// kubectl is $KUBECTL, or the kubectl the local cluster's build put in _output/bin, or the one on
// $PATH.
func kubectl(t *testing.T) string {
	t.Helper()
	if k := os.Getenv("KUBECTL"); k != "" {
		return k
	}
	if k := filepath.Join(repoRoot(t), "_output/bin/kubectl"); fileExists(k) {
		return k
	}
	k, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("no kubectl: set $KUBECTL or build _output/bin/kubectl (make kube-binaries)")
	}
	return k
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// helmTemplate renders the chart with --set pairs.
func helmTemplate(t *testing.T, set ...string) []*unstructured.Unstructured {
	t.Helper()
	args := []string{"template", "inplace", chart}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return decode(t, run(t, helm(t), args...))
}

// kustomize renders a kustomization of artifacts/deploy.
func kustomize(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	return decode(t, run(t, kubectl(t), "kustomize", dir))
}

func decode(t *testing.T, data string) []*unstructured.Unstructured {
	t.Helper()
	objects, err := manifests.Decode(data)
	if err != nil {
		t.Fatalf("decoding manifests: %v\n%s", err, data)
	}
	return objects
}

func id(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return obj.GetKind() + " " + ns + "/" + obj.GetName()
	}
	return obj.GetKind() + " " + obj.GetName()
}

func index(objects []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	m := map[string]*unstructured.Unstructured{}
	for _, o := range objects {
		m[id(o)] = o
	}
	return m
}

// helmOnly are what the chart adds to an object that the kustomize base leaves to the installer
// (hack/deploy.sh, cert-manager): helm's own labels, the keep policy, the caBundles.
var helmLabels = []string{"app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "helm.sh/chart"}

func normalize(obj *unstructured.Unstructured) map[string]any {
	o := obj.DeepCopy()
	labels := o.GetLabels()
	for _, l := range helmLabels {
		delete(labels, l)
	}
	o.SetLabels(labels)
	annotations := o.GetAnnotations()
	delete(annotations, "helm.sh/resource-policy")
	// helm's ownership, which the chart renders on its APIServices (see TestChartStandby).
	delete(annotations, "meta.helm.sh/release-name")
	delete(annotations, "meta.helm.sh/release-namespace")
	if len(annotations) == 0 {
		annotations = nil
	}
	o.SetAnnotations(annotations)
	switch o.GetKind() {
	case "APIService":
		unstructured.RemoveNestedField(o.Object, "spec", "caBundle")
	case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
		hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		for _, h := range hooks {
			unstructured.RemoveNestedField(h.(map[string]any), "clientConfig", "caBundle")
		}
		_ = unstructured.SetNestedSlice(o.Object, hooks, "webhooks")
	}
	return o.Object
}

// diff lists the paths where a and b differ.
func diff(path string, a, b any) []string {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: %v != %v", path, a, b)}
		}
		keys := map[string]bool{}
		for k := range av {
			keys[k] = true
		}
		for k := range bv {
			keys[k] = true
		}
		var sorted []string
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		var out []string
		for _, k := range sorted {
			out = append(out, diff(path+"."+k, av[k], bv[k])...)
		}
		return out
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return []string{fmt.Sprintf("%s: %v != %v", path, a, b)}
		}
		var out []string
		for i := range av {
			out = append(out, diff(fmt.Sprintf("%s[%d]", path, i), av[i], bv[i])...)
		}
		return out
	}
	// YAML numbers decode as int64 or float64 depending on the decoder's path: compare as text.
	if fmt.Sprint(a) != fmt.Sprint(b) || (a == nil) != (b == nil) {
		return []string{fmt.Sprintf("%s: %v != %v", path, a, b)}
	}
	return nil
}

// compare requires the chart's objects to be the kustomization's, field for field, but for what
// normalize drops and the objects named in chartOnly (the chart has them, kustomize leaves them
// to the installer).
func compare(t *testing.T, chartObjects, kustomizeObjects []*unstructured.Unstructured, chartOnly ...string) {
	t.Helper()
	got, want := index(chartObjects), index(kustomizeObjects)
	for name, w := range want {
		g := got[name]
		if g == nil {
			t.Errorf("the chart does not render %s", name)
			continue
		}
		if d := diff("", normalize(g), normalize(w)); len(d) > 0 {
			t.Errorf("%s: chart != kustomize:\n  %s", name, strings.Join(d, "\n  "))
		}
	}
	for name := range got {
		if want[name] == nil && !slices.Contains(chartOnly, name) {
			t.Errorf("the chart renders %s, which kustomize does not", name)
		}
	}
}

// TestChartRendersBase: with its default values the chart renders every object of
// artifacts/deploy (one inplace-apiserver, embedded etcd on a claim), field for field, plus the
// serving certificate's Secret hack/deploy.sh would make.
func TestChartRendersBase(t *testing.T) {
	compare(t, helmTemplate(t), kustomize(t, "artifacts/deploy"), "Secret inplace-system/inplace-apiserver-tls")
}

// TestChartRendersHA: with etcd.mode=cluster the chart renders artifacts/deploy/ha: three etcd
// members, two inplace-apiservers on them, budgets, the NetworkPolicy.
func TestChartRendersHA(t *testing.T) {
	compare(t, helmTemplate(t, "etcd.mode=cluster"), kustomize(t, "artifacts/deploy/ha"), "Secret inplace-system/inplace-apiserver-tls")
}

// TestChartRendersCertManager: with certificates.mode=certManager the chart renders
// artifacts/deploy/cert-manager (no Secret of its own, the CA injected by cert-manager).
func TestChartRendersCertManager(t *testing.T) {
	compare(t, helmTemplate(t, "certificates.mode=certManager"), kustomize(t, "artifacts/deploy/cert-manager"))
}

// TestChartLint: helm lint passes (strict: warnings fail) in every shape.
func TestChartLint(t *testing.T) {
	for _, set := range [][]string{
		nil,
		{"etcd.mode=cluster"},
		{"etcd.mode=external", "etcd.external.endpoints={https://etcd.example:2379}", "etcd.external.tlsSecret=etcd-client"},
		{"certificates.mode=certManager"},
		{"certificates.mode=secret", "certificates.caBundle=Zm9v"},
		{"standby=true"},
	} {
		args := []string{"lint", "--strict", chart}
		for _, s := range set {
			args = append(args, "--set", s)
		}
		t.Logf("%s", run(t, helm(t), args...))
	}
}

// TestChartStandby: with standby=true (installed beside OpenKruise, before
// `kubectl inplace migrate`) the chart renders everything but the APIServices, the Pod webhook and
// inplace-daemon, and inplace-controller with 0 replicas; inplace-apiserver and its Service are
// there (the migration's APIServices name them). The APIServices rendered alone with
// standby=false (the migration's --apiservices file) name that Service and carry helm's ownership
// annotations, so that `helm upgrade --set standby=false` takes over the ones the migration made.
func TestChartStandby(t *testing.T) {
	full := index(helmTemplate(t))
	standby := index(helmTemplate(t, "standby=true"))
	left := map[string]bool{
		"APIService v1alpha1.apps.kruise.io":               true,
		"APIService v1beta1.apps.kruise.io":                true,
		"APIService v1alpha1.policy.kruise.io":             true,
		"APIService v1beta1.policy.kruise.io":              true,
		"MutatingWebhookConfiguration inplace-pod-webhook": true,
		// OpenKruise's webhook checks its budgets until the migration.
		"ValidatingWebhookConfiguration inplace-pod-budget-webhook": true,
		// and its deletion protection.
		"ValidatingWebhookConfiguration inplace-deletion-protection-webhook": true,
		"DaemonSet inplace-system/inplace-daemon":                            true,
	}
	for name := range left {
		if full[name] == nil {
			t.Errorf("standby=false: no %s", name)
		}
	}
	for name := range full {
		if _, ok := standby[name]; ok == left[name] {
			t.Errorf("standby=true: %s rendered %v, want %v", name, ok, !left[name])
		}
	}
	for name := range standby {
		if full[name] == nil {
			t.Errorf("standby=true renders %s, which standby=false does not", name)
		}
	}
	replicas := func(name string) string {
		r, _, _ := unstructured.NestedFieldNoCopy(standby[name].Object, "spec", "replicas")
		return fmt.Sprint(r)
	}
	if r := replicas("Deployment inplace-system/inplace-controller"); r != "0" {
		t.Errorf("standby=true: inplace-controller replicas %s, want 0", r)
	}
	if r := replicas("Deployment inplace-system/inplace-apiserver"); r != "1" {
		t.Errorf("standby=true: inplace-apiserver replicas %s, want 1 (running, as without standby)", r)
	}

	services := decode(t, run(t, helm(t), "template", "inplace", chart, "--namespace", "inplace-system",
		"--set", "standby=false", "--show-only", "templates/apiservice.yaml"))
	var names []string
	for _, s := range services {
		names = append(names, id(s))
		if svc, _, _ := unstructured.NestedString(s.Object, "spec", "service", "name"); svc != "inplace-apiserver" || standby["Service inplace-system/"+svc] == nil {
			t.Errorf("%s: service %q, want inplace-apiserver (rendered in standby)", id(s), svc)
		}
		a := s.GetAnnotations()
		if a["meta.helm.sh/release-name"] != "inplace" || a["meta.helm.sh/release-namespace"] != "inplace-system" {
			t.Errorf("%s: annotations %v, want helm's ownership of release inplace-system/inplace", id(s), a)
		}
		if s.GetLabels()["app.kubernetes.io/managed-by"] != "Helm" {
			t.Errorf("%s: labels %v, want app.kubernetes.io/managed-by=Helm", id(s), s.GetLabels())
		}
	}
	sort.Strings(names)
	if !slices.Equal(names, []string{"APIService v1alpha1.apps.kruise.io", "APIService v1alpha1.policy.kruise.io",
		"APIService v1beta1.apps.kruise.io", "APIService v1beta1.policy.kruise.io"}) {
		t.Errorf("--show-only templates/apiservice.yaml: %v, want the four APIServices", names)
	}
}

// containerOf returns the first container of a workload's Pod template.
func containerOf(t *testing.T, obj *unstructured.Unstructured) map[string]any {
	t.Helper()
	if obj == nil {
		t.Fatalf("no such workload")
	}
	containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
	if len(containers) == 0 {
		t.Fatalf("%s has no containers", id(obj))
	}
	return containers[0].(map[string]any)
}

var workloads = []string{
	"Deployment inplace-system/inplace-apiserver",
	"Deployment inplace-system/inplace-controller",
	"DaemonSet inplace-system/inplace-daemon",
}

// TestChartValues: the values OpenKruise's chart also has reach what they mean: featureGates to
// all three programs' --feature-gates, the image, manager.replicas, resources, nodeSelector,
// tolerations, the webhook's failurePolicy and timeoutSeconds.
func TestChartValues(t *testing.T) {
	objects := index(helmTemplate(t,
		"featureGates=ResourcesDeletionProtection=true\\,PreDownloadImageForInPlaceUpdate=false",
		"image.repository=registry.example.com/inplace", "image.tag=v9.9.9",
		"manager.replicas=3",
		"manager.resources.limits.memory=2Gi",
		"manager.nodeSelector.pool=system",
		"manager.tolerations[0].key=dedicated", "manager.tolerations[0].operator=Exists",
		"daemon.nodeSelector.pool=workers",
		"apiserver.resources.requests.cpu=1500m",
		"webhookConfiguration.failurePolicy=Fail", "webhookConfiguration.timeoutSeconds=10",
		"budgetWebhook.failurePolicy=Ignore", "budgetWebhook.timeoutSeconds=2", "budgetWebhook.updateFailurePolicy=Fail",
	))
	for _, w := range workloads {
		c := containerOf(t, objects[w])
		args, _, _ := unstructured.NestedStringSlice(c, "args")
		if !slices.Contains(args, "--feature-gates=ResourcesDeletionProtection=true,PreDownloadImageForInPlaceUpdate=false") {
			t.Errorf("%s args %v: want the featureGates string in --feature-gates", w, args)
		}
		if c["image"] != "registry.example.com/inplace:v9.9.9" {
			t.Errorf("%s image %v", w, c["image"])
		}
	}
	ctrl := objects["Deployment inplace-system/inplace-controller"]
	if r := manifests.Int(ctrl.Object, "spec", "replicas"); r != 3 {
		t.Errorf("inplace-controller replicas %d, want manager.replicas 3", r)
	}
	if m, _, _ := unstructured.NestedString(containerOf(t, ctrl), "resources", "limits", "memory"); m != "2Gi" {
		t.Errorf("inplace-controller memory limit %q, want manager.resources'", m)
	}
	if s, _, _ := unstructured.NestedString(ctrl.Object, "spec", "template", "spec", "nodeSelector", "pool"); s != "system" {
		t.Errorf("inplace-controller nodeSelector pool=%q, want manager.nodeSelector's", s)
	}
	tols, _, _ := unstructured.NestedSlice(ctrl.Object, "spec", "template", "spec", "tolerations")
	if len(tols) != 1 || tols[0].(map[string]any)["key"] != "dedicated" {
		t.Errorf("inplace-controller tolerations %v, want manager.tolerations'", tols)
	}
	if s, _, _ := unstructured.NestedString(objects["DaemonSet inplace-system/inplace-daemon"].Object, "spec", "template", "spec", "nodeSelector", "pool"); s != "workers" {
		t.Errorf("inplace-daemon nodeSelector pool=%q, want daemon.nodeSelector's", s)
	}
	if cpu, _, _ := unstructured.NestedString(containerOf(t, objects["Deployment inplace-system/inplace-apiserver"]), "resources", "requests", "cpu"); cpu != "1500m" {
		t.Errorf("inplace-apiserver cpu request %q, want apiserver.resources'", cpu)
	}
	hooks, _, _ := unstructured.NestedSlice(objects["MutatingWebhookConfiguration inplace-pod-webhook"].Object, "webhooks")
	if len(hooks) != 1 || hooks[0].(map[string]any)["failurePolicy"] != "Fail" || fmt.Sprint(hooks[0].(map[string]any)["timeoutSeconds"]) != "10" {
		t.Errorf("webhooks %v: want failurePolicy Fail, timeoutSeconds 10", hooks)
	}
	hooks, _, _ = unstructured.NestedSlice(objects["ValidatingWebhookConfiguration inplace-pod-budget-webhook"].Object, "webhooks")
	if len(hooks) != 3 {
		t.Fatalf("budget webhooks %v: want the DELETE, eviction and UPDATE ones", hooks)
	}
	for i, h := range hooks {
		want := "Ignore"
		if i == 2 {
			want = "Fail" // the UPDATE one: updateFailurePolicy
		}
		if h.(map[string]any)["failurePolicy"] != want || fmt.Sprint(h.(map[string]any)["timeoutSeconds"]) != "2" {
			t.Errorf("budget webhook %v: want failurePolicy %s, timeoutSeconds 2", h, want)
		}
	}
}

// TestChartExternalEtcd: etcd.mode=external runs two inplace-apiservers on the given endpoints
// with the client certificate of the given Secret, no embedded etcd (claim, volume, --data-dir)
// and no etcd of the chart's own.
func TestChartExternalEtcd(t *testing.T) {
	objects := index(helmTemplate(t, "etcd.mode=external",
		"etcd.external.endpoints={https://etcd-0.example:2379,https://etcd-1.example:2379}",
		"etcd.external.tlsSecret=etcd-client"))
	for _, gone := range []string{"PersistentVolumeClaim inplace-system/inplace-apiserver-data", "StatefulSet inplace-system/inplace-etcd"} {
		if objects[gone] != nil {
			t.Errorf("external etcd: the chart renders %s", gone)
		}
	}
	d := objects["Deployment inplace-system/inplace-apiserver"]
	if r := manifests.Int(d.Object, "spec", "replicas"); r != 2 {
		t.Errorf("inplace-apiserver replicas %d, want 2 on an external etcd", r)
	}
	c := containerOf(t, d)
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	for _, want := range []string{"--etcd-servers=https://etcd-0.example:2379,https://etcd-1.example:2379",
		"--etcd-cafile=/etc/inplace/etcd/ca.crt", "--etcd-certfile=/etc/inplace/etcd/tls.crt", "--etcd-keyfile=/etc/inplace/etcd/tls.key",
		"--etcd-prefix=/registry/inplace"} {
		if !slices.Contains(args, want) {
			t.Errorf("inplace-apiserver args %v lack %s", args, want)
		}
	}
	if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--data-dir") }) {
		t.Errorf("inplace-apiserver args %v: --data-dir with an external etcd", args)
	}
	volumes, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "volumes")
	var secrets []string
	for _, v := range volumes {
		name, _, _ := unstructured.NestedString(v.(map[string]any), "secret", "secretName")
		if name == "" {
			t.Errorf("inplace-apiserver volume %v: only the Secrets' volumes expected", v)
		}
		secrets = append(secrets, name)
	}
	if !slices.Equal(secrets, []string{"inplace-apiserver-tls", "etcd-client"}) {
		t.Errorf("inplace-apiserver mounts Secrets %v, want the serving certificate and etcd.external.tlsSecret", secrets)
	}
	// Without endpoints the chart refuses to render.
	cmd := exec.Command(helm(t), "template", "inplace", chart, "--set", "etcd.mode=external")
	cmd.Dir = repoRoot(t)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "etcd.external.endpoints") {
		t.Errorf("etcd.mode=external without endpoints: err %v, output %.300s; want a refusal naming etcd.external.endpoints", err, out)
	}
}

// TestChartKeepsData: helm uninstall must not take the stored objects: the embedded etcd's claim
// and the Namespace holding it (and the etcd members' claims, which helm never owns: the
// StatefulSet's volumeClaimTemplates) carry helm.sh/resource-policy: keep.
func TestChartKeepsData(t *testing.T) {
	objects := index(helmTemplate(t))
	for _, name := range []string{"PersistentVolumeClaim inplace-system/inplace-apiserver-data", "Namespace inplace-system"} {
		o := objects[name]
		if o == nil {
			t.Errorf("no %s", name)
			continue
		}
		if got := o.GetAnnotations()["helm.sh/resource-policy"]; got != "keep" {
			t.Errorf("%s: helm.sh/resource-policy %q, want keep", name, got)
		}
	}
	ha := index(helmTemplate(t, "etcd.mode=cluster"))
	claims, _, _ := unstructured.NestedSlice(ha["StatefulSet inplace-system/inplace-etcd"].Object, "spec", "volumeClaimTemplates")
	if len(claims) != 1 {
		t.Errorf("etcd StatefulSet: %d volumeClaimTemplates, want 1 (claims helm does not own)", len(claims))
	}
}

// TestChartServingCertificate: certificates.mode=helm makes a Secret whose certificate is valid
// for inplace-apiserver.inplace-system.svc and signed by the CA that both caBundles carry.
func TestChartServingCertificate(t *testing.T) {
	objects := index(helmTemplate(t))
	secret := objects["Secret inplace-system/inplace-apiserver-tls"]
	if secret == nil {
		t.Fatal("no Secret inplace-apiserver-tls")
	}
	data, _, _ := unstructured.NestedStringMap(secret.Object, "data")
	caPEM, crtPEM := b64(t, data["ca.crt"]), b64(t, data["tls.crt"])
	if len(b64(t, data["tls.key"])) == 0 {
		t.Error("the Secret has no tls.key")
	}
	ca, crt := parseCert(t, caPEM), parseCert(t, crtPEM)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	if _, err := crt.Verify(x509.VerifyOptions{DNSName: "inplace-apiserver.inplace-system.svc", Roots: pool,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("the serving certificate does not verify for inplace-apiserver.inplace-system.svc against the Secret's CA: %v", err)
	}
	for _, name := range []string{"APIService v1alpha1.apps.kruise.io", "APIService v1beta1.apps.kruise.io",
		"APIService v1alpha1.policy.kruise.io", "APIService v1beta1.policy.kruise.io"} {
		if got, _, _ := unstructured.NestedString(objects[name].Object, "spec", "caBundle"); got != data["ca.crt"] {
			t.Errorf("%s: caBundle is not the Secret's CA", name)
		}
	}
	hooks, _, _ := unstructured.NestedSlice(objects["MutatingWebhookConfiguration inplace-pod-webhook"].Object, "webhooks")
	budget, _, _ := unstructured.NestedSlice(objects["ValidatingWebhookConfiguration inplace-pod-budget-webhook"].Object, "webhooks")
	if len(budget) != 3 {
		t.Fatalf("budget webhooks %v: want 3", budget)
	}
	protection, _, _ := unstructured.NestedSlice(objects["ValidatingWebhookConfiguration inplace-deletion-protection-webhook"].Object, "webhooks")
	if len(protection) != 1 {
		t.Fatalf("deletion-protection webhooks %v: want 1", protection)
	}
	for i, h := range append(append(hooks, budget...), protection...) {
		if got, _, _ := unstructured.NestedString(h.(map[string]any), "clientConfig", "caBundle"); got != data["ca.crt"] {
			t.Errorf("webhook %d (%v): its caBundle is not the Secret's CA", i, h.(map[string]any)["name"])
		}
	}
}

func b64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("base64: %v", err)
	}
	return b
}

func parseCert(t *testing.T, p []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(p)
	if block == nil {
		t.Fatalf("no PEM block in %q", p)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("parsing a certificate: %v", err)
	}
	return c
}
