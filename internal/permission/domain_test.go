package permission_test

import (
	"errors"
	"testing"

	"github.com/ferry-dev/ferry/internal/permission"
)

func domainRules(t *testing.T, allow, ask, deny []string) *permission.Rules {
	t.Helper()
	var r permission.Rules
	for kind, list := range map[permission.Decision][]string{permission.Allow: allow, permission.Ask: ask, permission.Deny: deny} {
		for _, s := range list {
			rule, err := permission.Parse(s)
			if err != nil {
				t.Fatalf("%s: %v", s, err)
			}
			r.Add(kind, rule)
		}
	}
	return &r
}

// WebFetch is decided per domain: deny, then ask, then allow rules; with
// none it asks, though it is read-only.
func TestWebFetchDomainRules(t *testing.T) {
	t.Parallel()
	r := domainRules(t,
		[]string{"WebFetch(domain:go.dev)", "WebFetch(domain:*.github.com)", "TodoWrite"},
		[]string{"WebFetch(domain:ask.example)"},
		[]string{"WebFetch(domain:evil.example)", "WebFetch(domain:*.evil.example)"})
	call := func(d string) permission.Call { return permission.Call{Tool: "WebFetch", Domain: d, ReadOnly: true} }
	for domain, want := range map[string]permission.Decision{
		"go.dev":              permission.Allow,
		"GO.DEV":              permission.Allow, // callers normalise; rules compare lower case
		"pkg.go.dev":          permission.Ask,   // go.dev is that host only
		"api.github.com":      permission.Allow,
		"github.com":          permission.Ask, // *.github.com is its subdomains
		"evil.example":        permission.Deny,
		"www.evil.example":    permission.Deny,
		"ask.example":         permission.Ask,
		"example.com":         permission.Ask,
		"":                    permission.Ask,
		"go.dev.evil.example": permission.Deny,
	} {
		if got := r.Decide(call(permission.NormalizeDomain(domain))); got != want {
			t.Errorf("WebFetch of %q: %v, want %v", domain, got, want)
		}
	}
	if got := (&permission.Rules{}).Decide(call("go.dev")); got != permission.Ask {
		t.Errorf("no rules: %v, want ask", got)
	}
	if got := domainRules(t, []string{"WebFetch"}, nil, []string{"WebFetch(domain:evil.example)"}).Decide(call("evil.example")); got != permission.Deny {
		t.Errorf("deny beats a blanket allow: %v", got)
	}
	// A rule built past Parse fails closed as deny, never allows.
	bad := &permission.Rules{Deny: []permission.Rule{{Tool: "WebFetch", Pattern: "go.dev"}}, Allow: []permission.Rule{{Tool: "WebFetch", Pattern: "domain:http://x"}}}
	if got := bad.Decide(call("go.dev")); got != permission.Deny {
		t.Errorf("broken deny rule: %v, want deny", got)
	}
	bad.Deny = nil
	if got := bad.Decide(call("x")); got != permission.Ask {
		t.Errorf("broken allow rule: %v, want ask", got)
	}
	// TodoWrite is read-only: allowed with no rule, deniable.
	if got := (&permission.Rules{}).Decide(permission.Call{Tool: "TodoWrite", ReadOnly: true}); got != permission.Allow {
		t.Errorf("TodoWrite: %v", got)
	}
	if got := domainRules(t, nil, nil, []string{"TodoWrite"}).Decide(permission.Call{Tool: "TodoWrite", ReadOnly: true}); got != permission.Deny {
		t.Errorf("denied TodoWrite: %v", got)
	}
}

func TestWebFetchRuleParse(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"WebFetch":                   "WebFetch",
		"WebFetch(domain:Go.Dev.)":   "WebFetch(domain:go.dev)",
		"WebFetch( domain:*.a-b.io)": "WebFetch(domain:*.a-b.io)",
	} {
		r, err := permission.Parse(in)
		if err != nil || r.String() != want {
			t.Errorf("Parse(%q) = %v, %v; want %s", in, r, err, want)
		}
	}
	for _, in := range []string{"WebFetch(go.dev)", "WebFetch(domain:)", "WebFetch(domain:https://go.dev)", "WebFetch(domain:go.dev:443)",
		"WebFetch(domain:go.dev/x)", "WebFetch(domain:*)", "WebFetch(domain:a..b)", "TodoWrite(x)"} {
		if _, err := permission.Parse(in); !errors.Is(err, &permission.Error{Code: permission.CodeBadPattern}) {
			t.Errorf("Parse(%q): %v, want bad_pattern", in, err)
		}
	}
	// "Allow always" offers the exact domain.
	got := permission.RulesFor(permission.Call{Tool: "WebFetch", Domain: "docs.example.com"})
	if len(got) != 1 || got[0].String() != "WebFetch(domain:docs.example.com)" {
		t.Errorf("RulesFor: %v", got)
	}
	if got := (&permission.Rules{}).RulesFor(permission.Call{Tool: "WebFetch"}); got != nil {
		t.Errorf("RulesFor without a domain: %v", got)
	}
}
