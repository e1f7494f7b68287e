package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
)

// scrape GETs a /metrics URL. An https one (kube-controller-manager's secure port) is reached with
// the kubeconfig's client certificate, which its delegated authorization admits; its serving
// certificate is self-signed, so it is not verified (loopback only).
func (b *bench) scrape(ctx context.Context, url string) ([]byte, error) {
	client := http.DefaultClient
	if strings.HasPrefix(url, "https://") {
		cfg := rest.CopyConfig(b.cfg)
		cfg.Insecure, cfg.CAData, cfg.CAFile = true, nil, ""
		c, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return nil, fmt.Errorf("client for %s: %w", url, err)
		}
		client = c
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping %s: %d %v %s", url, resp.StatusCode, err, body)
	}
	return body, nil
}

// metrics are the families of one scrape, parsed once however many figures are read from it.
type metrics map[string]*dto.MetricFamily

// parseMetrics parses a scrape in Prometheus' text format (what parses, with a warning otherwise).
func parseMetrics(body []byte) metrics {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		logf("WARNING: parsing metrics: %v", err)
	}
	return families
}

// sum adds up the samples of the counter or gauge name whose labels include every pair of labels.
func (ms metrics) sum(name string, labels map[string]string) float64 {
	f, ok := ms[name]
	if !ok {
		return 0
	}
	var sum float64
next:
	for _, m := range f.GetMetric() {
		for k, v := range labels {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum
}

// writeVerbs are the verbs of apiserver_request_total that change something.
var writeVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true}

// writes adds up kube-apiserver's apiserver_request_total of the write verbs by
// "VERB resource[/subresource]" (dry runs apart: they cost admission but store nothing; failed
// requests apart, by code: a 409 is a conflict to retry).
func (ms metrics) writes() map[string]float64 {
	out := map[string]float64{}
	f, ok := ms["apiserver_request_total"]
	if !ok {
		return out
	}
	for _, m := range f.GetMetric() {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		if !writeVerbs[l["verb"]] {
			continue
		}
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		if l["dry_run"] != "" {
			key += " (dry run)"
		}
		if code := l["code"]; code != "" && code[0] != '2' {
			key += " " + code
		}
		out[key] += m.GetCounter().GetValue()
	}
	return out
}
