{{/*
The namespace of every namespaced object: inplace-apiserver and inplace-controller look for their
own objects (SidecarSet revisions, the Lease) in inplace-system, and the serving certificate names
inplace-apiserver.inplace-system.svc.
*/}}
{{- define "inplace.namespace" -}}inplace-system{{- end -}}

{{/* Labels of every object: the kustomize base's part-of, plus helm's own. */}}
{{- define "inplace.labels" -}}
app.kubernetes.io/part-of: inplace
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "inplace.image" -}}{{ .Values.image.repository }}:{{ .Values.image.tag }}{{- end -}}

{{/* --feature-gates, when featureGates is set (one list item). */}}
{{- define "inplace.featureGatesArg" -}}
{{- with .Values.featureGates }}
- --feature-gates={{ . }}
{{- end }}
{{- end -}}

{{- define "inplace.etcdMode" -}}
{{- $m := .Values.etcd.mode -}}
{{- if not (has $m (list "embedded" "cluster" "external")) -}}
{{- fail (printf "etcd.mode %q: want embedded, cluster or external" $m) -}}
{{- end -}}
{{- $m -}}
{{- end -}}

{{- define "inplace.apiserverReplicas" -}}
{{- $mode := include "inplace.etcdMode" . -}}
{{- if eq $mode "embedded" -}}
{{- if and (not (kindIs "invalid" .Values.apiserver.replicas)) (ne (int .Values.apiserver.replicas) 1) -}}
{{- fail "apiserver.replicas: the embedded etcd is one member with one writer: 1, or etcd.mode cluster/external" -}}
{{- end -}}
1
{{- else -}}
{{- if kindIs "invalid" .Values.apiserver.replicas }}2{{ else }}{{ int .Values.apiserver.replicas }}{{ end -}}
{{- end -}}
{{- end -}}

{{/* The client URLs of the chart's etcd members (etcd.mode cluster). */}}
{{- define "inplace.etcdClusterServers" -}}
{{- $ns := include "inplace.namespace" . -}}
{{- $urls := list -}}
{{- range $i := until (int .Values.etcd.cluster.replicas) -}}
{{- $urls = append $urls (printf "http://inplace-etcd-%d.inplace-etcd.%s.svc:2379" $i $ns) -}}
{{- end -}}
{{- join "," $urls -}}
{{- end -}}

{{/* The caBundle of the APIServices and the webhook (helm and secret modes). */}}
{{- define "inplace.caBundle" -}}
{{- if eq .Values.certificates.mode "helm" -}}
{{- (include "inplace.tls" . | fromYaml).ca -}}
{{- else if eq .Values.certificates.mode "secret" -}}
{{- required "certificates.caBundle: the base64 PEM of the CA that signed the Secret inplace-apiserver-tls" .Values.certificates.caBundle -}}
{{- end -}}
{{- end -}}

{{/*
The serving certificate of certificates.mode helm, as YAML (crt, key, ca: base64): the one in the
Secret when it is there and still valid for the Service's name (an upgrade must not change the CA
under running clients), otherwise a new CA and a certificate it signs. Computed once per render
(cached in .Values) so the Secret and the caBundles agree.
*/}}
{{- define "inplace.tls" -}}
{{- if not .Values._tls -}}
{{- $ns := include "inplace.namespace" . -}}
{{- $dns := printf "inplace-apiserver.%s.svc" $ns -}}
{{- $existing := lookup "v1" "Secret" $ns "inplace-apiserver-tls" -}}
{{- $tls := dict -}}
{{- if and $existing $existing.data (index $existing.data "ca.crt") (index $existing.data "tls.crt") (index $existing.data "tls.key") -}}
{{- $tls = dict "crt" (index $existing.data "tls.crt") "key" (index $existing.data "tls.key") "ca" (index $existing.data "ca.crt") -}}
{{- else -}}
{{- $ca := genCA "inplace-ca" 3650 -}}
{{- $cert := genSignedCert $dns nil (list $dns (printf "%s.cluster.local" $dns)) (int .Values.certificates.days) $ca -}}
{{- $tls = dict "crt" ($cert.Cert | b64enc) "key" ($cert.Key | b64enc) "ca" ($ca.Cert | b64enc) -}}
{{- end -}}
{{- $_ := set .Values "_tls" $tls -}}
{{- end -}}
{{- toYaml .Values._tls -}}
{{- end -}}

{{/* The annotation that has cert-manager's CA injector fill a caBundle (certManager mode). */}}
{{- define "inplace.injectCA" -}}
{{- if eq .Values.certificates.mode "certManager" -}}
annotations:
  cert-manager.io/inject-ca-from: {{ include "inplace.namespace" . }}/inplace-apiserver-tls
{{- end -}}
{{- end -}}
