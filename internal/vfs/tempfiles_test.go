//go:build unix

package vfs_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/vfs"
)

// killedWriterEnv names the workspace the helper process writes in.
const killedWriterEnv = "FERRY_VFS_TEST_KILLED_WRITER"

// TestHelperKilledWriter is not a test: run by TestLocalSweepsLeftoverTemps
// as a separate process, it starts a write and blocks in its final check,
// with the temporary file written, until it is killed.
func TestHelperKilledWriter(t *testing.T) {
	ws := os.Getenv(killedWriterEnv)
	if ws == "" {
		return // only as the helper process
	}
	l, err := vfs.NewLocal(ws)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = l.WriteFile("sub/f.txt", []byte("half-way\n"), vfs.WriteOptions{Check: func(vfs.Info, bool) error {
		select {} // killed here
	}})
}

// TestLocalSweepsLeftoverTemps: a write killed mid-way (a real process,
// SIGKILLed with its temporary file on disk) leaves ".f.txt.ferry-tmp-*";
// the next write in that directory removes it, but never while its writer
// runs, and never a file whose writer it cannot judge (another PID
// namespace) unless it is over an hour old. NewLocal sweeps the whole
// workspace in the background, and Close waits for it.
func TestLocalSweepsLeftoverTemps(t *testing.T) {
	ws := canonicalTemp(t)
	sub := filepath.Join(ws, "sub")
	if err := os.MkdirAll(filepath.Join(ws, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperKilledWriter$", "-test.count=1")
	cmd.Env = append(os.Environ(), killedWriterEnv+"="+ws)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	kill := func() {
		if !killed {
			killed = true
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
	defer kill()
	var leftover string
	for deadline := time.Now().Add(20 * time.Second); leftover == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		ents, _ := os.ReadDir(sub)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".f.txt.ferry-tmp-") {
				leftover = e.Name()
			}
		}
	}
	if leftover == "" {
		t.Fatal("the helper never got to its temporary file")
	}
	if !vfs.IsTempName(leftover) {
		t.Fatalf("IsTempName(%q) = false", leftover)
	}

	hour := time.Now().Add(-2 * time.Hour)
	files := map[string]time.Time{
		vfs.OldTempName("old.txt"):                  hour, // older than an hour: gone
		vfs.OldTempName("fresh.txt"):                {},   // older version's, fresh: cannot tell
		vfs.TempNameFor("mine.txt", os.Getpid(), 0): {},   // this PID but no write of ours: gone
		vfs.TempNameFor("ns.txt", 999_999, 1):       {},   // another PID namespace, fresh: kept
		vfs.TempNameFor("nsold.txt", 999_999, 1):    hour, // ... but not for ever
		vfs.TempNameFor("dead.txt", deadPID(t), 0):  {},   // its writer is gone
		"notes.ferry-tmp-x":                         {},   // not ferry's
		".notes.txt.ferry-tmp-0123456789ABCDEF":     {},   // not ferry's either
	}
	for name, mtime := range files {
		p := filepath.Join(sub, name)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if !mtime.IsZero() {
			if err := os.Chtimes(p, mtime, mtime); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Mkdir(filepath.Join(sub, vfs.OldTempName("dir")), 0o755); err != nil {
		t.Fatal(err)
	}
	l := newLocal(t, ws)

	// The writer runs: its file stays.
	vfs.ForgetSweeps()
	if _, err := l.WriteFile("sub/other.txt", []byte("1\n"), vfs.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{leftover, vfs.OldTempName("dir"), vfs.OldTempName("fresh.txt"), vfs.TempNameFor("ns.txt", 999_999, 1),
		".notes.txt.ferry-tmp-0123456789ABCDEF", "notes.ferry-tmp-x", "other.txt"}
	wantDir(t, sub, want)

	// Killed: the next write in the directory removes its leftover.
	kill()
	vfs.ForgetSweeps()
	if _, err := l.WriteFile("sub/other.txt", []byte("2\n"), vfs.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	wantDir(t, sub, want[1:])

	// Opening the workspace sweeps it, deep down too.
	deep := filepath.Join(ws, "a", "b", vfs.TempNameFor("deep.txt", deadPID(t), 0))
	if err := os.WriteFile(deep, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	vfs.ForgetSweeps()
	l2, err := vfs.NewLocal(ws)
	if err != nil {
		t.Fatal(err)
	}
	vfs.WaitSweep(l2)
	l2.Close()
	if _, err := os.Lstat(deep); !os.IsNotExist(err) {
		t.Errorf("NewLocal left %s (%v)", deep, err)
	}
}

// deadPID is the PID of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func wantDir(t *testing.T, dir string, want []string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("%s holds\n  %q\nwant\n  %q", dir, got, want)
	}
}

func TestIsTempName(t *testing.T) {
	for name, want := range map[string]bool{
		".f.txt.ferry-tmp-0123456789abcdef":               true,
		".f.txt.ferry-tmp-42-4026531836-0123456789abcdef": true,
		".f.txt.ferry-tmp-42-0-0123456789abcdef":          true,
		"f.txt.ferry-tmp-0123456789abcdef":                false, // no leading dot
		"..ferry-tmp-0123456789abcdef":                    false, // no base
		".f.txt.ferry-tmp-0123456789abcde":                false,
		".f.txt.ferry-tmp-0-0-0123456789abcdef":           false, // PID 0
		".f.txt.ferry-tmp-+4-0-0123456789abcdef":          false,
		".f.txt.ferry-tmp-4-0123456789abcdef":             false,
		".f.txt.ferry-tmp-x-0-0123456789abcdef":           false,
		".f.txt.ferry-tmp-0123456789abcdef.swp":           false,
	} {
		if got := vfs.IsTempName(name); got != want {
			t.Errorf("IsTempName(%q) = %v, want %v", name, got, want)
		}
	}
}
