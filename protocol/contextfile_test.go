package protocol_test

import (
	"errors"
	"testing"

	"github.com/ferry-dev/ferry/protocol"
)

// TestContextFilesCheckedOnBothHops: a control.prompt.request whose
// context_files the master should have refused is refused by the client's
// decoder too, naming the field; a valid one decodes.
func TestContextFilesCheckedOnBothHops(t *testing.T) {
	for url, ok := range map[string]bool{
		"https://files.example/a.pdf":           true,
		"HTTPS://files.example/a.pdf":           true,
		"data:,hello%20world":                   true,
		"data:text/plain;base64,aGk=":           true,
		"file:///etc/shadow":                    false,
		"http://169.254.169.254/latest":         false,
		"ftp://files.example/a":                 false,
		"/v1/artifacts/x":                       false,
		"https://a:b@files.example/x":           false,
		"data:text/plain;base64,!!":             false,
		"vbscript:msgbox":                       false,
		"data:text/plain;charset=\"x,no":        false,
		"ferry-upload:upl_abc123":               true,
		"ferry-upload:upl_abc-_9?grant=a.b_c-1": true,
		"FERRY-UPLOAD:upl_x":                    true,
		"ferry-upload:upl_":                     false,
		"ferry-upload:abc":                      false,
		"ferry-upload:upl_a/../b":               false,
		"ferry-upload:upl_a?grant=":             false,
		"ferry-upload:upl_a?grant=x&y=1":        false,
		"ferry-upload:upl_a?other=1":            false,
		"ferry-upload:upl_a?grant=x#frag":       false,
		"ferry-upload:upl_a%2Fb":                false,
		"ferry-upload://upl_a":                  false,
	} {
		m := protocol.New(protocol.TypePromptRequest, &protocol.PromptRequest{PromptText: "p",
			ContextFiles: []protocol.ContextFile{{FileURL: url, FileName: "a"}}})
		m.SessionID = "s1"
		data, err := protocol.Encode(m)
		if err == nil {
			_, err = protocol.Decode(data)
		}
		var pe *protocol.Error
		switch {
		case ok && err != nil:
			t.Errorf("%s: refused: %v", url, err)
		case !ok && (!errors.As(err, &pe) || pe.Field != "payload.context_files[0].file_url"):
			t.Errorf("%s: %v, want an error at payload.context_files[0].file_url", url, err)
		}
	}
}
