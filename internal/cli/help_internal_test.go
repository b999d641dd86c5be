package cli

import (
	"bytes"
	"context"
	"flag"
	"strings"
	"testing"
)

// TestHelpBoolFlagsTakeNoValue: the flag package shows a usage's
// back-quoted word as the flag's value name, so a boolean flag with one reads
// as if it took a value (-artifacts artifact). Every command's help is
// checked. Not parallel: it sets flagSetSeen, which parallel tests read.
func TestHelpBoolFlagsTakeNoValue(t *testing.T) {
	var sets []*flag.FlagSet
	flagSetSeen = func(fs *flag.FlagSet) { sets = append(sets, fs) }
	defer func() { flagSetSeen = nil }()
	checked := 0
	for name, cmd := range commands {
		if name == "help" || name == "version" {
			continue
		}
		sets = sets[:0]
		var stdout, stderr bytes.Buffer
		env := Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }}
		if err := cmd.run(context.Background(), env, []string{"-h"}); err != nil {
			t.Fatalf("ferry %s -h: %v", name, err)
		}
		if len(sets) == 0 {
			t.Fatalf("ferry %s -h parsed no flags", name)
		}
		help := stderr.String()
		for _, fs := range sets {
			fs.VisitAll(func(f *flag.Flag) {
				bf, ok := f.Value.(interface{ IsBoolFlag() bool })
				if !ok || !bf.IsBoolFlag() {
					return
				}
				checked++
				if v, _ := flag.UnquoteUsage(f); v != "" {
					t.Errorf("ferry %s: boolean -%s shows the value name %q", name, f.Name, v)
				}
				if !strings.Contains(help, "  -"+f.Name+"\n") {
					t.Errorf("ferry %s: help does not list -%s alone on its line:\n%s", name, f.Name, help)
				}
			})
		}
	}
	if checked == 0 {
		t.Fatal("no boolean flag seen")
	}
}
