package agent

import (
	"reflect"
	"testing"

	"github.com/ferry-dev/ferry/internal/mcpclient"
)

// TestMergeServersPrecedence: the editor's server wins a name clash over
// the workspace's, which wins over the user's; the others are kept.
func TestMergeServersPrecedence(t *testing.T) {
	user := []mcpclient.Server{{Name: "a", Command: "user-a"}, {Name: "b", Command: "user-b"}}
	ws := []mcpclient.Server{{Name: "b", Command: "ws-b"}, {Name: "c", Command: "ws-c"}}
	ed := []mcpclient.Server{{Name: "c", Command: "ed-c"}}
	got := mergeServers(mergeServers(user, ws), ed)
	want := []mcpclient.Server{{Name: "a", Command: "user-a"}, {Name: "b", Command: "ws-b"}, {Name: "c", Command: "ed-c"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if len(user) != 2 || user[1].Command != "user-b" {
		t.Fatalf("the base list was changed: %+v", user)
	}
}
