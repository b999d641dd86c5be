// Package backend opens the store.Store a DSN names: PostgreSQL for a
// postgres:// or postgresql:// URL, SQLite for sqlite:PATH, file:PATH or a
// plain path. Anything else is refused with a message listing the forms,
// so that a typo never silently creates a SQLite file named after a URL.
package backend

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/postgres"
	"github.com/ferry-dev/ferry/internal/store/sqlite"
)

// Kind names a backend.
type Kind string

// Backends.
const (
	SQLite   Kind = "sqlite"
	Postgres Kind = "postgres"
)

const forms = "want postgres://…, postgresql://…, sqlite:PATH, file:PATH or a file path"

// Parse tells which backend dsn names and what to open it with: the DSN
// itself for PostgreSQL, the file path for SQLite.
func Parse(dsn string) (Kind, string, error) {
	switch {
	case dsn == "":
		return "", "", fmt.Errorf("store: empty database address (%s)", forms)
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return Postgres, dsn, nil
	}
	for _, prefix := range []string{"sqlite://", "sqlite:", "file:"} {
		if path, ok := strings.CutPrefix(dsn, prefix); ok {
			if path == "" {
				return "", "", fmt.Errorf("store: %q has no file path (%s)", dsn, forms)
			}
			if strings.Contains(path, "?") {
				// A query would be taken as part of the file name.
				return "", "", fmt.Errorf("store: %q: options after '?' are not supported; give the file path only", dsn)
			}
			return SQLite, path, nil
		}
	}
	// Any other scheme (mysql://, postgres:/x, http://…) is a mistake,
	// not a file name.
	if hasScheme(dsn) {
		return "", "", fmt.Errorf("store: unsupported database address %q (%s)", redact(dsn), forms)
	}
	return SQLite, dsn, nil
}

// hasScheme reports whether dsn starts with a URL scheme and a colon: two
// or more letters, digits, '+', '-' or '.', the first a letter. One letter
// is a Windows drive (C:\ferry.db), not a scheme.
func hasScheme(dsn string) bool {
	i := strings.IndexByte(dsn, ':')
	if i < 2 {
		return false
	}
	for j, c := range dsn[:i] {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case j > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

// redact drops what could be a password from an address quoted in an error.
func redact(dsn string) string {
	if i := strings.LastIndex(dsn, "@"); i >= 0 {
		if j := strings.Index(dsn, "://"); j >= 0 && j < i {
			return dsn[:j+3] + "…" + dsn[i:]
		}
		return "…" + dsn[i:]
	}
	return dsn
}

// Open opens the store dsn names (see Parse).
func Open(ctx context.Context, dsn string) (store.Store, error) {
	kind, target, err := Parse(dsn)
	if err != nil {
		return nil, err
	}
	switch kind {
	case Postgres:
		return postgres.Open(ctx, target)
	case SQLite:
		return sqlite.Open(ctx, target)
	}
	return nil, errors.New("store: unreachable backend kind " + string(kind))
}
