//go:build unix

package procgroup

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the processes the tests start: with
// helperEnv set it runs the helper named there instead of the tests.
const (
	helperEnv = "PROCGROUP_TEST_HELPER"
	// tokenEnv marks every process a test starts, so that the test can
	// find what is left of them (see leftovers).
	tokenEnv = "PROCGROUP_TEST_TOKEN"
)

func TestMain(m *testing.M) {
	if h := os.Getenv(helperEnv); h != "" {
		helper(h)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helper runs one helper process:
//
//	spawn       start `sleep 300` in a session of its own, print its pid, wait
//	spawn-eof   the same, but exit at the end of its input
//	middle      start "spawn" in the same group, print what it prints, exit
//	storm       start a new `sleep 300` in a session of its own every
//	            millisecond, forever
//	sleep       sleep
func helper(name string) {
	setsidSleep := func() int {
		cmd := exec.Command("sleep", "300")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		return cmd.Process.Pid
	}
	switch name {
	case "spawn":
		fmt.Println(setsidSleep())
		time.Sleep(time.Hour)
	case "spawn-eof":
		fmt.Println(setsidSleep())
		_, _ = io.Copy(io.Discard, os.Stdin)
	case "middle":
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), helperEnv+"=spawn")
		out, err := cmd.StdoutPipe()
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		fmt.Printf("%d %s", cmd.Process.Pid, line)
	case "storm":
		fmt.Println("started")
		for {
			setsidSleep()
			time.Sleep(time.Millisecond)
		}
	case "sleep":
		time.Sleep(time.Hour)
	}
}

// start starts the helper in a Group and returns the first line it
// prints, split into fields.
func start(t *testing.T, name string) (*Group, *exec.Cmd, []string) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"="+name, tokenEnv+"="+token(t))
	g, out := startReading(t, cmd)
	t.Cleanup(func() {
		g.KillTree()
		_ = cmd.Wait()
	})
	var fields []string
	if name != "sleep" {
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("helper %s: %q, %v", name, line, err)
		}
		fields = strings.Fields(line)
	}
	if len(fields) > 0 && fields[0] == "error" {
		t.Fatalf("helper %s: %v", name, fields)
	}
	return g, cmd, fields
}

// startReading starts cmd in a Group with its standard output piped to
// the returned reader.
func startReading(t *testing.T, cmd *exec.Cmd) (*Group, *bufio.Reader) {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	g, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	return g, bufio.NewReader(out)
}

// token is the test's mark on the processes it starts.
func token(t *testing.T) string {
	return fmt.Sprintf("%d-%s", os.Getpid(), t.Name())
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// alive reports whether pid runs (a zombie waiting for its reaper does
// not).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no /proc: the signal test is all there is
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}

// waitGone waits (boundedly) until none of pids runs.
func waitGone(t *testing.T, pids ...int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, pid := range pids {
		for alive(pid) {
			if ctx.Err() != nil {
				t.Fatalf("process %d still runs", pid)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func TestStartNewSession(t *testing.T) {
	cmd := exec.Command("sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // overridden
	g, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { g.Kill(); _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	if g.Pid() != pid {
		t.Fatalf("Pid = %d, want %d", g.Pid(), pid)
	}
	if st, ok := readStat(pid); ok && st.sid != pid {
		t.Errorf("session %d, want %d", st.sid, pid)
	}
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		t.Errorf("group %d, %v; want %d", pgid, err, pid)
	}
}

func TestStartError(t *testing.T) {
	g, err := Start(exec.Command("/nonexistent/command"))
	if g != nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%v, %v", g, err)
	}
}

// Terminate reaches the whole group; once the group is empty the Group
// stops signalling it.
func TestTerminateGroup(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 300 & sleep 300 & echo $!; wait")
	g, out := startReading(t, cmd)
	line, _ := out.ReadString('\n')
	bg := atoi(t, strings.TrimSpace(line))
	if !g.Terminate() {
		t.Fatal("Terminate reached nobody")
	}
	err := cmd.Wait()
	if sig, ok := ExitSignal(cmd.ProcessState); !ok || sig != syscall.SIGTERM {
		t.Errorf("ExitSignal = %v, %v (%v)", sig, ok, err)
	}
	waitGone(t, bg)
	// Reaped children are gone at once, but the group empties when the
	// last one is reaped by init: wait for ESRCH.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for g.Terminate() {
		if ctx.Err() != nil {
			t.Fatal("the group is not empty")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !g.gone.Load() || g.Kill() {
		t.Error("the Group signals an empty group")
	}
}

func TestExitSignal(t *testing.T) {
	if sig, ok := ExitSignal(nil); ok {
		t.Errorf("nil: %v", sig)
	}
	cmd := exec.Command("sh", "-c", "exit 3")
	_ = cmd.Run()
	if sig, ok := ExitSignal(cmd.ProcessState); ok {
		t.Errorf("exit 3: %v", sig)
	}
	cmd = exec.Command("sleep", "300")
	g, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	g.Kill()
	_ = cmd.Wait()
	if sig, ok := ExitSignal(cmd.ProcessState); !ok || sig != syscall.SIGKILL {
		t.Errorf("killed: %v, %v", sig, ok)
	}
}

// A Group whose leader's pid now names another process (another start
// time) signals nothing: this stands for the pid reused after the group
// emptied.
func TestGroupPidReuse(t *testing.T) {
	if _, ok := readStat(os.Getpid()); !ok {
		t.Skip("no /proc to tell processes apart")
	}
	_, cmd, _ := start(t, "sleep")
	pid := cmd.Process.Pid
	stale := &Group{proc: cmd.Process, leader: procID{pid, "1"}}
	if stale.Terminate() || stale.Kill() {
		t.Fatal("a stale Group signalled the new process")
	}
	stale.KillTree()
	stale.Snapshot().Kill()
	time.Sleep(50 * time.Millisecond)
	if !alive(pid) {
		t.Fatal("a stale Group killed the process that has its pid")
	}
	if !stale.gone.Load() {
		t.Error("the stale Group is not marked gone")
	}
}
