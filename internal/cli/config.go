package cli

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// configKeyFlag is the flag naming the configuration file; it has no key
// of its own in the file (FERRY_CONFIG names the file too).
const configKeyFlag = "config"

// configUsage is the help text of --config and of where values come from.
const configUsage = "read settings from the TOML `FILE` whose keys are these flags' names, e.g. addr = \"0.0.0.0:7860\", drain-timeout = \"45s\", trusted-proxy = [\"10.0.0.0/8\"] (default $FERRY_CONFIG). " +
	"Every flag is also read from $FERRY_<FLAG> (upper case, - as _: FERRY_DB, FERRY_METRICS_ADDR); a flag beats the environment, which beats the file, which beats the default"

// envName is the environment variable of flag name: FERRY_ and the name in
// upper snake case.
func envName(name string) string {
	return "FERRY_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// applySettings fills the flags of fs that the command line did not set,
// from the environment and then from the TOML file path (none when
// empty). repeatable names the flags that take several values: a TOML
// array, or a comma-separated variable. Every error names where the value
// came from: the variable, or the file and its key (or line, for a syntax
// error).
func applySettings(fs *flag.FlagSet, getenv func(string) string, path string, repeatable map[string]bool) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	defer explainNumbers(fs)()
	var names []string
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name != configKeyFlag {
			names = append(names, f.Name)
		}
	})
	for _, name := range names {
		if set[name] {
			continue
		}
		v := getenv(envName(name))
		if v == "" {
			continue
		}
		vals := []string{v}
		if repeatable[name] {
			vals = strings.Split(v, ",")
		}
		for _, x := range vals {
			if err := fs.Set(name, strings.TrimSpace(x)); err != nil {
				return fmt.Errorf("$%s: invalid value %q: %w", envName(name), x, err)
			}
		}
		set[name] = true
	}
	if path == "" {
		return nil
	}
	data, err := os.ReadFile(path) //nolint:gosec // the operator names the file on purpose
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	file, err := parseConfig(string(data), names, repeatable)
	if err != nil {
		return fmt.Errorf("--config %s: %w", path, err)
	}
	keys := make([]string, 0, len(file))
	for k := range file {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if set[k] {
			continue
		}
		for _, x := range file[k] {
			if err := fs.Set(k, x); err != nil {
				return fmt.Errorf("--config %s: key %q: invalid value %q: %w", path, k, x, err)
			}
		}
	}
	return nil
}

// parseConfig reads a TOML document whose top-level keys are among names
// (a flag's name) into each key's values as the flag would take them:
// a string as it is, an integer, float or boolean in Go's notation, an
// array (only for the repeatable flags) as one value per element. Tables
// and other shapes are errors naming the key.
func parseConfig(doc string, names []string, repeatable map[string]bool) (map[string][]string, error) {
	var raw map[string]any
	if _, err := toml.Decode(doc, &raw); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("line %d: %s", pe.Position.Line, pe.Message)
		}
		return nil, err
	}
	known := make(map[string]bool, len(names))
	for _, n := range names {
		known[n] = true
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the first bad key, the same every time
	out := make(map[string][]string, len(raw))
	for _, k := range keys {
		if !known[k] {
			return nil, fmt.Errorf("unknown key %q (the keys are the flags' names: %s)", k, strings.Join(names, ", "))
		}
		v := raw[k]
		if arr, ok := v.([]any); ok {
			if !repeatable[k] {
				return nil, fmt.Errorf("key %q: takes one value, not an array", k)
			}
			for _, e := range arr {
				s, err := scalar(e)
				if err != nil {
					return nil, fmt.Errorf("key %q: %w", k, err)
				}
				out[k] = append(out[k], s)
			}
			continue
		}
		s, err := scalar(v)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", k, err)
		}
		out[k] = []string{s}
	}
	return out, nil
}

// scalar is a TOML value as a flag's text.
func scalar(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	case bool:
		return strconv.FormatBool(x), nil
	}
	return "", fmt.Errorf("a %T is not a flag's value (want a string, number or boolean)", v)
}
