package permission

import (
	"errors"
	"strings"
)

// domainPrefix starts a WebFetch rule's pattern: WebFetch(domain:HOST).
const domainPrefix = "domain:"

// parseDomainPattern checks a WebFetch pattern, "domain:example.com" or
// "domain:*.example.com", and returns it normalised (lower case, no
// trailing dot).
func parseDomainPattern(p string) (string, error) {
	host, ok := strings.CutPrefix(strings.TrimSpace(p), domainPrefix)
	if !ok {
		return "", errors.New(`a WebFetch pattern is domain:HOST, e.g. WebFetch(domain:go.dev) or WebFetch(domain:*.github.com)`)
	}
	host = NormalizeDomain(host)
	name := strings.TrimPrefix(host, "*.")
	if name == "" || !validHostName(name) {
		return "", errors.New(`the domain must be a host name (letters, digits, "-" and "."; "*." in front for its subdomains), without scheme, port or path`)
	}
	return domainPrefix + host, nil
}

// NormalizeDomain is a host as WebFetch rules compare it: lower case,
// without a trailing dot.
func NormalizeDomain(host string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(host)), ".")
}

func validHostName(h string) bool {
	if len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		if strings.IndexFunc(label, func(r rune) bool { return !hostRune(r) }) >= 0 {
			return false
		}
	}
	return true
}

func hostRune(r rune) bool { return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' }

// domainMatches reports whether a WebFetch rule's pattern covers host: the
// same host, or for "*.example.com" any host below example.com. A pattern
// Parse would reject matches nothing here; decideDomain fails closed.
func domainMatches(pattern, host string) (match, valid bool) {
	p, err := parseDomainPattern(pattern)
	if err != nil {
		return false, false
	}
	d := strings.TrimPrefix(p, domainPrefix)
	host = NormalizeDomain(host)
	if host == "" {
		return false, true
	}
	if suffix, ok := strings.CutPrefix(d, "*."); ok {
		return strings.HasSuffix(host, "."+suffix), true
	}
	return host == d, true
}

// decideDomain decides a WebFetch call by its domain: deny, then ask, then
// allow rules; a rule without a pattern covers every domain. With none it
// asks: a fetch only reads, but it reaches outside the machine on the
// model's say-so.
func (r Rules) decideDomain(c Call) Decision {
	for _, l := range []struct {
		rules []Rule
		d     Decision
	}{{r.Deny, Deny}, {r.Ask, Ask}, {r.Allow, Allow}} {
		for _, rule := range l.rules {
			if rule.Tool != c.Tool {
				continue
			}
			if rule.Pattern == "" {
				return l.d
			}
			match, valid := domainMatches(rule.Pattern, c.Domain)
			if match || !valid && l.d != Allow {
				return l.d // a broken deny or ask rule fails closed
			}
		}
	}
	return Ask
}

// domainRulesFor is the rule "allow always" records for a WebFetch call:
// its exact domain. Nil when the call has no domain a rule can name.
func domainRulesFor(c Call) []Rule {
	if c.Domain == "" {
		return nil
	}
	p, err := parseDomainPattern(domainPrefix + c.Domain)
	if err != nil {
		return nil
	}
	return []Rule{{Tool: c.Tool, Pattern: p}}
}
