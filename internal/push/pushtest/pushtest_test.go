package pushtest

import (
	"bytes"
	"crypto/ecdh"
	"crypto/rand"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	webpush "github.com/SherClockHolmes/webpush-go"
)

type capture struct{ req *http.Request }

func (c *capture) Do(r *http.Request) (*http.Response, error) {
	c.req = r
	return &http.Response{StatusCode: http.StatusCreated, Body: io.NopCloser(strings.NewReader(""))}, nil
}

// TestChecksCanFail: the stand-in's checks accept a real request and
// refuse it with the wrong key, a changed body, a changed signature, a
// foreign audience or an expired JWT.
func TestChecksCanFail(t *testing.T) {
	priv, _ := ecdh.P256().GenerateKey(rand.Reader)
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	vpriv, vpub, err := webpush.GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	c := &capture{}
	endpoint := "https://push.example.com/push/abc"
	resp, err := webpush.SendNotification([]byte("hello"), &webpush.Subscription{Endpoint: endpoint,
		Keys: webpush.Keys{P256dh: B64(priv.PublicKey().Bytes()), Auth: B64(auth)}},
		&webpush.Options{HTTPClient: c, Subscriber: "ops@example.com", TTL: 60, VAPIDPublicKey: vpub, VAPIDPrivateKey: vpriv})
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	body, _ := io.ReadAll(c.req.Body)
	authz := c.req.Header.Get("Authorization")
	if got, err := Decrypt(body, priv, auth); err != nil || string(got) != "hello" {
		t.Fatalf("Decrypt = %q, %v", got, err)
	}
	if _, _, err := VerifyVAPID(authz, endpoint, time.Now()); err != nil {
		t.Fatalf("VerifyVAPID: %v", err)
	}
	other, _ := ecdh.P256().GenerateKey(rand.Reader)
	if _, err := Decrypt(body, other, auth); err == nil {
		t.Error("decrypted with another private key")
	}
	if _, err := Decrypt(body, priv, bytes.Repeat([]byte{1}, 16)); err == nil {
		t.Error("decrypted with another auth secret")
	}
	bad := bytes.Clone(body)
	bad[len(bad)-1] ^= 1
	if _, err := Decrypt(bad, priv, auth); err == nil {
		t.Error("decrypted a changed body")
	}
	i := strings.LastIndex(authz, ".")
	flipped := authz[:i+1] + "A" + authz[i+2:]
	if authz[i+1] == 'A' {
		flipped = authz[:i+1] + "B" + authz[i+2:]
	}
	if _, _, err := VerifyVAPID(flipped, endpoint, time.Now()); err == nil {
		t.Error("a changed signature verified")
	}
	if _, _, err := VerifyVAPID(authz, "https://other.example.com/push/abc", time.Now()); err == nil {
		t.Error("a JWT for another origin verified")
	}
	if _, _, err := VerifyVAPID(authz, endpoint, time.Now().Add(13*time.Hour)); err == nil {
		t.Error("an expired JWT verified")
	}
	if _, _, err := VerifyVAPID(authz, endpoint, time.Now().Add(-13*time.Hour)); err == nil {
		t.Error("a JWT expiring more than 24 h later verified")
	}
}
