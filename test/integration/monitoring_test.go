package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestGrafanaDashboard: artifacts/monitoring/grafana-dashboard.json is a dashboard (valid JSON
// with panels and queries), and every inplace metric its queries use is one docs/metrics.md
// describes, so the dashboard and the documentation cannot drift apart from the names.
func TestGrafanaDashboard(t *testing.T) {
	root := repoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "artifacts", "monitoring", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("the dashboard is not valid JSON: %v", err)
	}
	docs, err := os.ReadFile(filepath.Join(root, "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	metric := regexp.MustCompile(`inplace_[a-z_]+`)
	var used []string
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, target := range p.Targets {
			for _, name := range metric.FindAllString(target.Expr, -1) {
				for _, suffix := range []string{"_bucket", "_count", "_sum"} {
					name = strings.TrimSuffix(name, suffix)
				}
				if !slices.Contains(used, name) {
					used = append(used, name)
				}
			}
		}
	}
	if dash.Title == "" || len(used) < 5 {
		t.Fatalf("dashboard %q uses %d inplace metrics: %v", dash.Title, len(used), used)
	}
	for _, name := range used {
		if !strings.Contains(string(docs), "`"+name+"`") {
			t.Errorf("the dashboard queries %s, which docs/metrics.md does not describe", name)
		}
	}
}
