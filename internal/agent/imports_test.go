package agent_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoAdapterImport: the agent is one implementation behind the adapter
// seam and must not depend on it (issue 18, item 4): it has its own Turn,
// Emit and errors, and adapter/builtin converts. Imports point one way.
func TestNoAdapterImport(t *testing.T) {
	t.Parallel()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the package's dependencies")
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const seam = "github.com/ferry-dev/ferry/internal/adapter"
	for dep := range strings.FieldsSeq(string(out)) {
		if dep == seam || strings.HasPrefix(dep, seam+"/") {
			t.Errorf("internal/agent depends on %s", dep)
		}
	}
}
