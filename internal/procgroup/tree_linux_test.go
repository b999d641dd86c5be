package procgroup

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// leftovers lists the running processes that carry the test's token.
func leftovers(t *testing.T) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	mark := []byte(tokenEnv + "=" + token(t) + "\x00")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && bytes.Contains(env, mark) && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// waitNoLeftovers waits (boundedly) for every process the test started to
// be gone.
func waitNoLeftovers(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := leftovers(t)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("left running: %v", left)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// KillTree kills a grandchild that moved to a session of its own, as
// Claude Code's Bash commands do.
func TestKillTreeSetsidGrandchild(t *testing.T) {
	g, cmd, f := start(t, "spawn")
	grand := atoi(t, f[0])
	if sid, _ := readStat(grand); sid.sid != grand || !alive(grand) {
		t.Fatalf("the grandchild %d is not in a session of its own", grand)
	}
	if n := g.Snapshot().Len(); n != 2 {
		t.Errorf("snapshot of %d processes, want 2", n)
	}
	g.Kill()
	_ = cmd.Wait()
	if !alive(grand) {
		t.Fatal("the grandchild died with the group: the test shows nothing")
	}
	// The group is dead, the grandchild's parent gone: this is what only
	// KillTree before the parent's end (or a Snapshot) finds. Start again.
	syscallKill(grand)

	g, cmd, f = start(t, "spawn")
	grand = atoi(t, f[0])
	g.KillTree()
	_ = cmd.Wait()
	waitGone(t, cmd.Process.Pid, grand)
	waitNoLeftovers(t)
}

// A Snapshot taken while the leader runs finds the grandchild after the
// leader has exited on its own, when nothing leads from the group to it.
func TestSnapshotAfterExit(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=spawn-eof", tokenEnv+"="+token(t))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	g, out := startReading(t, cmd)
	line, err := out.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	grand := atoi(t, strings.TrimSpace(line))
	tree := g.Snapshot()
	t.Cleanup(tree.Kill)
	if tree.Len() != 2 {
		t.Fatalf("snapshot of %d processes, want 2", tree.Len())
	}
	_ = stdin.Close()
	_ = cmd.Wait()
	g.KillTree() // the group is empty; the grandchild's parent is gone
	time.Sleep(20 * time.Millisecond)
	if !alive(grand) {
		t.Fatal("KillTree found the grandchild: the test shows nothing")
	}
	tree.Kill()
	waitGone(t, grand)
	waitNoLeftovers(t)
}

// KillTree after the leader was reaped still reaches the group's other
// processes and, below them, a grandchild in a session of its own.
func TestKillTreeAfterLeaderReaped(t *testing.T) {
	g, cmd, f := start(t, "middle")
	middle, grand := atoi(t, f[0]), atoi(t, f[1])
	_ = cmd.Wait()
	if !alive(middle) || !alive(grand) {
		t.Fatal("the group's processes did not outlive the leader")
	}
	g.KillTree()
	waitGone(t, middle, grand)
	waitNoLeftovers(t)
}

// A process that keeps forking into new sessions is stopped and read
// until nothing new appears: nothing escapes.
func TestKillTreeStorm(t *testing.T) {
	g, cmd, _ := start(t, "storm")
	deadline := time.Now().Add(10 * time.Second)
	for len(leftovers(t)) < 10 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d processes after 10s of the storm", len(leftovers(t)))
		}
		time.Sleep(time.Millisecond)
	}
	g.KillTree()
	_ = cmd.Wait()
	waitNoLeftovers(t)
}

// Tree.Kill skips entries whose pid now names another process.
func TestTreePidReuse(t *testing.T) {
	_, cmd, _ := start(t, "sleep")
	pid := cmd.Process.Pid
	st, ok := readStat(pid)
	if !ok {
		t.Fatal("no stat")
	}
	Tree{procs: []procID{{pid, st.start + "0"}, {pid, ""}}}.Kill()
	time.Sleep(50 * time.Millisecond)
	if !alive(pid) {
		t.Fatal("a stale entry was killed")
	}
	Tree{procs: []procID{{pid, st.start}}}.Kill()
	waitGone(t, pid)
}

func TestReadStat(t *testing.T) {
	st, ok := readStat(os.Getpid())
	if !ok || st.ppid != os.Getppid() || st.start == "" {
		t.Fatalf("%+v %v", st, ok)
	}
	if _, ok := readStat(-1); ok {
		t.Fatal("stat of pid -1")
	}
}

func syscallKill(pid int) { _ = syscall.Kill(pid, syscall.SIGKILL) }
