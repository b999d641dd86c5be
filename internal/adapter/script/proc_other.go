//go:build !unix

package script

import (
	"os"
	"syscall"
)

// Script agents need process groups to stop a command with everything it
// started; where there are none, starting one fails.

const (
	sigTerm = syscall.Signal(15)
	sigKill = syscall.Signal(9)
)

func newSession() *syscall.SysProcAttr { return nil }

func signalGroup(int, syscall.Signal) bool { return false }

func signaled(*os.ProcessState) (string, bool) { return "", false }
