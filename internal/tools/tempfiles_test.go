package tools

import (
	"strings"
	"testing"
)

// TestSearchSkipsWriteTemps: a write's temporary file (".NAME.ferry-tmp-*",
// in flight or left by a writer killed mid-way) is neither a Glob nor a
// Grep result: it is half-written, never the user's file.
func TestSearchSkipsWriteTemps(t *testing.T) {
	t.Parallel()
	env, root := srEnv(t)
	srWrite(t, root, map[string]string{
		"a.txt":                                 "needle\n",
		"sub/.a.txt.ferry-tmp-0123456789abcdef": "needle\n",
		"sub/.b.txt.ferry-tmp-42-4026531836-0123456789abcdef": "needle\n",
		".c.txt.ferry-tmp-0123456789abcdef":                   "needle\n",
	})
	for _, in := range []map[string]any{{"pattern": "**/*"}, {"pattern": "**/.*"}, {"pattern": "sub/*"}} {
		if got := srOK(t, Glob{}, env, in); strings.Contains(got, "ferry-tmp") {
			t.Errorf("Glob %v lists a temporary file:\n%s", in, got)
		}
	}
	if got := srOK(t, Grep{}, env, map[string]any{"pattern": "needle", "output_mode": "files_with_matches"}); strings.Contains(got, "ferry-tmp") || !strings.Contains(got, "a.txt") {
		t.Errorf("Grep lists:\n%s", got)
	}
}
