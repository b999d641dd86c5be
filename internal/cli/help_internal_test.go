package cli

import (
	"bytes"
	"context"
	"flag"
	"regexp"
	"strings"
	"testing"
	"time"
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

// TestBadNumberFlagNamesFlagValueAndExample: every duration or number flag
// of every command, given "banana", says which flag, the value and an
// example of a good one (--permission-timeout 10m), not "parse error";
// and the help still shows each flag's value type. Not parallel: it sets
// flagSetSeen.
func TestBadNumberFlagNamesFlagValueAndExample(t *testing.T) {
	type numFlag struct{ cmd, name string }
	var flags []numFlag
	var sets []*flag.FlagSet
	flagSetSeen = func(fs *flag.FlagSet) { sets = append(sets, fs) }
	defer func() { flagSetSeen = nil }()
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
		for _, fs := range sets {
			fs.VisitAll(func(f *flag.Flag) {
				if g, ok := f.Value.(flag.Getter); ok {
					switch g.Get().(type) {
					case time.Duration, int, int64, uint, uint64, float64:
						flags = append(flags, numFlag{name, f.Name})
						if typ, _ := flag.UnquoteUsage(f); typ == "value" {
							t.Errorf("ferry %s -h: -%s shows its value as %q", name, f.Name, typ)
						}
					}
				}
			})
		}
	}
	if len(flags) < 10 {
		t.Fatalf("only %d number flags seen", len(flags))
	}
	for _, f := range flags {
		var stdout, stderr bytes.Buffer
		env := Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }}
		code := Run(context.Background(), env, []string{f.cmd, "--" + f.name, "banana"})
		first, _, _ := strings.Cut(stderr.String(), "\n")
		if code != ExitUsage || !strings.Contains(first, `"banana"`) || !strings.Contains(first, "-"+f.name) ||
			!regexp.MustCompile(`e\.g\. --`+regexp.QuoteMeta(f.name)+` [0-9]`).MatchString(first) || strings.Contains(first, "parse error") {
			t.Errorf("ferry %s --%s banana: exit %d, first line %q", f.cmd, f.name, code, first)
		}
	}
	// The same words when the value comes from the environment.
	var stdout, stderr bytes.Buffer
	env := Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		Getenv: func(k string) string { return map[string]string{"FERRY_DRAIN_TIMEOUT": "banana"}[k] }}
	if code := Run(context.Background(), env, []string{"serve"}); code != ExitUsage ||
		!strings.Contains(stderr.String(), `$FERRY_DRAIN_TIMEOUT: invalid value "banana": want a duration such as 90s, 10m or 1h30m, e.g. --drain-timeout 30s`) {
		t.Errorf("FERRY_DRAIN_TIMEOUT=banana ferry serve: exit %d, %q", code, stderr.String())
	}
	t.Logf("%d number flags checked", len(flags))
}
