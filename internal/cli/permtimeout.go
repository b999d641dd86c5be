package cli

import (
	"flag"
	"fmt"
	"time"

	"github.com/ferry-dev/ferry/protocol"
)

// defaultPermissionTimeout is how long an agent's question waits for an
// answer by default: long enough to come back from a coffee or to the
// phone, short enough that an agent left alone does not stay stuck on a
// question all night (an unanswered permission is denied, so the agent
// goes on without that call, or stops).
const defaultPermissionTimeout = 10 * time.Minute

// permissionTimeoutFlag registers --permission-timeout on fs.
func permissionTimeoutFlag(fs *flag.FlagSet) *time.Duration {
	return fs.Duration("permission-timeout", defaultPermissionTimeout,
		"how long an agent's question waits for an answer before it times out (`DURATION`, e.g. 10m; 0 waits forever); "+
			"a permission that times out is denied, any other question takes its default; a session can change it in the UI")
}

// checkPermissionTimeout refuses what the flag cannot mean.
func checkPermissionTimeout(d time.Duration) error {
	switch {
	case d < 0:
		return fmt.Errorf("--permission-timeout %v: must be 0 (wait forever) or positive", d)
	case d > 0 && d < time.Second:
		return fmt.Errorf("--permission-timeout %v: must be at least 1s (or 0 to wait forever)", d)
	case d > protocol.MaxPermissionTimeoutMS*time.Millisecond:
		return fmt.Errorf("--permission-timeout %v: at most %v (or 0 to wait forever)", d, protocol.MaxPermissionTimeoutMS*time.Millisecond)
	}
	return nil
}
