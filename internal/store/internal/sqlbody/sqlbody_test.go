package sqlbody

import (
	"testing"
	"time"
)

func TestRebind(t *testing.T) {
	for in, want := range map[string]string{
		``:                      ``,
		`SELECT 1`:              `SELECT 1`,
		`WHERE a = ? AND b = ?`: `WHERE a = $1 AND b = $2`,
		`VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`: `VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
	} {
		if got := Rebind(in); got != want {
			t.Errorf("Rebind(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTimeScan(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	east := time.FixedZone("east", 3600)
	for _, c := range []struct {
		v    any
		want time.Time
	}{
		{nil, time.Time{}},
		{at.UnixMicro(), at},
		{at.In(east), at},
	} {
		var got Time
		if err := got.Scan(c.v); err != nil {
			t.Fatalf("Scan(%v): %v", c.v, err)
		}
		if !got.T.Equal(c.want) || got.T.Location() != c.want.Location() {
			t.Errorf("Scan(%v) = %v, want %v", c.v, got.T, c.want)
		}
	}
	var bad Time
	if err := bad.Scan("2026"); err == nil {
		t.Error("Scan(string): no error")
	}
}

func TestBlobAndRawJSON(t *testing.T) {
	if Blob(nil) != nil {
		t.Error("Blob(nil) is not NULL")
	}
	if RawJSON(nil) != nil {
		t.Error("RawJSON(nil) is not nil")
	}
	if got := string(RawJSON([]byte(`{}`))); got != `{}` {
		t.Errorf("RawJSON = %s", got)
	}
}
