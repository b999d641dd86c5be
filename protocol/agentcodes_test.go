package protocol

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The schema's enum of stop_reason is written in a struct tag; the
// constants are what the code sends. They must name the same set.
func TestStopReasonEnumMatchesConstants(t *testing.T) {
	t.Parallel()
	f, ok := reflect.TypeFor[TextDone]().FieldByName("StopReason")
	if !ok {
		t.Fatal("TextDone has no StopReason")
	}
	var enum []string
	for part := range strings.SplitSeq(f.Tag.Get("jsonschema"), ",") {
		if v, ok := strings.CutPrefix(part, "enum="); ok {
			enum = append(enum, v)
		}
	}
	consts := []string{StopEndTurn, StopCancelled, StopMaxTurns, StopError, StopRefusal}
	slices.Sort(enum)
	slices.Sort(consts)
	if !slices.Equal(enum, consts) {
		t.Errorf("stop_reason enum = %v, constants = %v", enum, consts)
	}
}
