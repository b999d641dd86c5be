// Command acppeer is the scripted ACP agent of package acppeer as a
// program of its own, for tests that start an agent by command rather than
// by re-executing a test binary: the browser tests run
//
//	go build -o /tmp/acppeer ./internal/adapter/acp/acppeer/cmd/acppeer
//	ferry up --agent acp:/tmp/acppeer
//
// to have an ACP agent without image support (its initialize declares no
// promptCapabilities), which ferry refuses an attached image for before
// the turn starts.
//
// ACPPEER_SCRIPT (acppeer.EnvScript) names the JSON acppeer.Script to
// play; unset, the peer answers every prompt with the text "acppeer got
// your prompt" and end_turn. ACPPEER_LOG (acppeer.EnvLog), when set, is
// the file every line the peer receives is appended to.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ferry-dev/ferry/internal/adapter/acp/acppeer"
)

// defaultScript answers any prompt (every text starts with "").
const defaultScript = `{"turns":[],"by_text":{"":[{"text":"acppeer got your prompt"}]}}`

func main() {
	if os.Getenv(acppeer.EnvScript) == "" {
		dir, err := os.MkdirTemp("", "acppeer")
		if err == nil {
			p := filepath.Join(dir, "script.json")
			if err = os.WriteFile(p, []byte(defaultScript), 0o600); err == nil {
				err = os.Setenv(acppeer.EnvScript, p)
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "acppeer: default script:", err)
			os.Exit(2)
		}
	}
	acppeer.Main()
}
