package framework

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// HTTPGet GETs url (a program's /metrics, /healthz...) and returns the status code and the body.
func HTTPGet(ctx context.Context, url string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, body, fmt.Errorf("reading the answer of GET %s: %w", url, err)
	}
	return resp.StatusCode, body, nil
}

// MetricValue scrapes http://ADDR/metrics and returns the value of the series named exactly
// series (name with its labels, as Prometheus' text format prints them), 0 when absent.
func MetricValue(t *testing.T, ctx context.Context, addr, series string) float64 {
	t.Helper()
	code, body, err := HTTPGet(ctx, "http://"+addr+"/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("scraping %s: HTTP %d %v", addr, code, err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatalf("%s: %q: %v", series, line, err)
			}
			return v
		}
	}
	return 0
}
