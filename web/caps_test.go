package web_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ferry-dev/ferry/internal/exectest"
)

// TestBrowserCapabilities: in a real browser against a real `ferry up`,
// the UI offers only what a session's agent really has
// (web/e2e/caps.mjs; docs/protocol.md, "Capabilities never over-claim"):
// no attach button, nor a pasted file attached, for an echo or a script
// session, which take no attachments; no Compact and no mode menu for the
// script agent; and for an ACP agent (the acppeer binary, a real child
// process) the plan mode its session/new offers although the adapter
// cannot promise it, no camera (its prompt capabilities take no images),
// and the Compact button once it lists a compact command.
func TestBrowserCapabilities(t *testing.T) {
	node, chromium := browserDeps(t)
	dir := t.TempDir()
	ws := project(t, dir, map[string]string{"README.md": "# caps\n"})
	script := filepath.Join(dir, "plain.sh")
	exectest.WriteScript(t, script, "#!/bin/sh\ncat >/dev/null\necho 'plain answer'\n")
	acpBin := filepath.Join(dir, "acppeer")
	build := exec.Command("go", "build", "-o", acpBin, "github.com/ferry-dev/ferry/internal/adapter/acp/acppeer/cmd/acppeer")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the ACP peer: %v\n%s", err, out)
	}
	// A plan mode in session/new, no prompt capabilities, and a compact
	// command listed with its first answer.
	peer := `{"session":{"modes":{"currentModeId":"code","availableModes":[{"id":"code","name":"Code"},{"id":"architect","name":"Plan"}]}},` +
		`"turns":[],"by_text":{"":[{"update":{"sessionUpdate":"available_commands_update","availableCommands":[{"name":"compact","description":"Compact the conversation"}]}},{"text":"peer answer"}]}}`
	acpScript := filepath.Join(dir, "acppeer.json")
	if err := os.WriteFile(acpScript, []byte(peer), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ACPPEER_SCRIPT", acpScript) // the ACP adapter passes its own environment on
	base, login := ferryUp(t, upEnv(dir, ""), "--db", filepath.Join(dir, "ferry.db"), "--workspace", ws,
		"--agent", "echo", "--agent", "script:"+script, "--agent", "acp:"+acpBin)
	runScript(t, node, "caps.mjs", map[string]any{"base": base, "login": login, "chromium": chromium,
		"echo": "echo", "script": "script:plain.sh", "acp": "acp:acppeer", "screenshots": shotsDir(t, dir)})
}
