package download

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
)

const (
	// tokenPrefix starts every download token; tokenChars characters of
	// base64url (32 random bytes) follow.
	tokenPrefix = "ferry_dl_"
	tokenChars  = 43
)

// NewToken returns a fresh download token: the link's secret.
func NewToken() (string, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("random download token: %w", err)
	}
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(raw[:]), nil
}

// WellFormedToken reports whether s has a download token's shape, so
// that no other string costs a store lookup.
func WellFormedToken(s string) bool {
	enc, ok := strings.CutPrefix(s, tokenPrefix)
	if !ok || len(enc) != tokenChars {
		return false
	}
	_, err := base64.RawURLEncoding.Strict().DecodeString(enc)
	return err == nil
}
