package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeSettings: ferry serve's flags come from the command line, then
// the environment, then the --config file, then their defaults; a bad
// key, value, line or file is an error naming it.
func TestServeSettings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, doc string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	full := write("full.toml", `addr = "10.0.0.5:7860"
db = "/var/lib/ferry/file.db"
metrics-addr = "127.0.0.1:9090"
drain-timeout = "45s"
retention = 20000
verbose = true
trusted-proxy = ["10.0.0.0/8", "192.168.1.1"]
`)
	for _, c := range []struct {
		name    string
		args    []string
		env     map[string]string
		config  string // --config
		check   func(t *testing.T, f *masterFlags)
		wantErr []string // substrings of the error
	}{
		{name: "defaults", check: func(t *testing.T, f *masterFlags) {
			if f.addr != DefaultAddr || f.drainTimeout != DefaultDrainTimeout || f.metricsAddr != "" || f.retention != 10000 {
				t.Fatalf("defaults: %+v", f)
			}
		}},
		{name: "file", config: full, check: func(t *testing.T, f *masterFlags) {
			if f.addr != "10.0.0.5:7860" || f.db != "/var/lib/ferry/file.db" || f.metricsAddr != "127.0.0.1:9090" ||
				f.drainTimeout != 45*time.Second || f.retention != 20000 || !f.verbose || len(f.proxies) != 2 {
				t.Fatalf("from the file: %+v", f)
			}
		}},
		{name: "environment beats the file", config: full,
			env: map[string]string{"FERRY_ADDR": "10.0.0.6:7860", "FERRY_DRAIN_TIMEOUT": "5s", "FERRY_TRUSTED_PROXY": "10.1.0.0/16"},
			check: func(t *testing.T, f *masterFlags) {
				if f.addr != "10.0.0.6:7860" || f.drainTimeout != 5*time.Second || len(f.proxies) != 1 || f.retention != 20000 {
					t.Fatalf("environment over file: %+v", f)
				}
			}},
		{name: "flag beats the environment", config: full, args: []string{"--addr", "10.0.0.7:7860", "--retention", "7"},
			env: map[string]string{"FERRY_ADDR": "10.0.0.6:7860", "FERRY_RETENTION": "9", "FERRY_NATS": "nats://n:4222"},
			check: func(t *testing.T, f *masterFlags) {
				if f.addr != "10.0.0.7:7860" || f.retention != 7 || f.nats != "nats://n:4222" || f.db != "/var/lib/ferry/file.db" {
					t.Fatalf("flag over environment: %+v", f)
				}
			}},
		{name: "FERRY_CONFIG names the file", env: map[string]string{"FERRY_CONFIG": full}, check: func(t *testing.T, f *masterFlags) {
			if f.addr != "10.0.0.5:7860" {
				t.Fatalf("FERRY_CONFIG: %+v", f)
			}
		}},
		{name: "unknown key", config: write("unknown.toml", "addr = \"x:1\"\nlisten = \"y:2\"\n"),
			wantErr: []string{"unknown.toml", `unknown key "listen"`}},
		{name: "bad duration in the file", config: write("dur.toml", "drain-timeout = \"soon\"\n"),
			wantErr: []string{"dur.toml", `key "drain-timeout"`, `"soon"`}},
		{name: "bad duration in the environment", env: map[string]string{"FERRY_DRAIN_TIMEOUT": "soon"},
			wantErr: []string{"$FERRY_DRAIN_TIMEOUT", `"soon"`}},
		{name: "a number where a flag wants a number", config: write("num.toml", "retention = \"many\"\n"),
			wantErr: []string{"num.toml", `key "retention"`}},
		{name: "an array for a single flag", config: write("arr.toml", "addr = [\"a:1\", \"b:2\"]\n"),
			wantErr: []string{"arr.toml", `key "addr"`, "not an array"}},
		{name: "a table", config: write("table.toml", "[addr]\nhost = \"a\"\n"),
			wantErr: []string{"table.toml", `key "addr"`}},
		{name: "syntax error", config: write("syntax.toml", "addr = \"a:1\"\nretention = = 3\n"),
			wantErr: []string{"syntax.toml", "line 2"}},
		{name: "unreadable file", config: filepath.Join(dir, "missing.toml"),
			wantErr: []string{"missing.toml", "--config"}},
		{name: "config is not a key", config: write("config.toml", "config = \"other.toml\"\n"),
			wantErr: []string{`unknown key "config"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			fs, mf, configFile := serveFlags()
			args := c.args
			if c.config != "" {
				args = append([]string{"--config", c.config}, args...)
			}
			if err := fs.Parse(args); err != nil {
				t.Fatal(err)
			}
			env := Env{Getenv: func(k string) string { return c.env[k] }}
			err := serveSettings(fs, env, *configFile)
			if len(c.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error; flags %+v", mf)
				}
				for _, w := range c.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Fatalf("error %q does not say %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, mf)
		})
	}
}

// FuzzParseConfig: any document is parsed or refused with an error, never
// a panic, and what is parsed holds only known keys with at least one
// value each, several only for a repeatable flag.
func FuzzParseConfig(f *testing.F) {
	f.Add("addr = \"127.0.0.1:7860\"\nretention = 5\nverbose = true\ntrusted-proxy = [\"10.0.0.0/8\"]\n")
	fs, _, _ := serveFlags()
	var names []string
	for _, n := range []string{"addr", "db", "retention", "verbose", "trusted-proxy", "drain-timeout", "metrics-addr", "nats"} {
		if fs.Lookup(n) == nil {
			f.Fatalf("no flag %s", n)
		}
		names = append(names, n)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		got, err := parseConfig(doc, names, serveRepeatable)
		if err != nil {
			return
		}
		for k, vs := range got {
			if fs.Lookup(k) == nil {
				t.Fatalf("unknown key %q accepted", k)
			}
			if len(vs) > 1 && !serveRepeatable[k] {
				t.Fatalf("key %q got %d values", k, len(vs))
			}
		}
	})
}
