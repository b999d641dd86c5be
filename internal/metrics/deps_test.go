package metrics_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLinksNoPrometheusClient: the ferry binary links neither
// client_golang nor what comes with it (client_model, common, procfs,
// protobuf), whose package init every ferry process would pay at start-up
// (issue 37). The test-only expfmt import of this package's tests does not
// count: go list -deps without -test sees what the binary links.
func TestBinaryLinksNoPrometheusClient(t *testing.T) {
	t.Parallel()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs the go tool on PATH (install Go from https://go.dev/dl)")
	}
	out, err := exec.CommandContext(t.Context(), gobin, "list", "-deps",
		"github.com/ferry-dev/ferry/cmd/ferry").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	var bad []string
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "github.com/prometheus/") || strings.HasPrefix(p, "google.golang.org/protobuf/") {
			bad = append(bad, p)
		}
	}
	if len(bad) > 0 {
		t.Fatalf("cmd/ferry links %d packages of the Prometheus client or protobuf, e.g. %v", len(bad), bad[:min(len(bad), 5)])
	}
}
