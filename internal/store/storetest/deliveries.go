package storetest

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/store"
)

// prompt is an event stored with Deliver, created d after base.
func prompt(id string, d time.Duration) store.Event {
	return store.Event{MessageID: id, Type: "control.prompt.request", Deliver: true, CreatedAt: at(d),
		Data: []byte(fmt.Sprintf(`{"type": "control.prompt.request", "message_id": %q, "payload": {"prompt_text": "hi"}}`, id))}
}

// answer is an event that answers the undelivered event id.
func answer(id, answers string) store.Event {
	ev := event(id)
	ev.Answers = answers
	return ev
}

// undelivered lists the undelivered events of machine stored by before,
// as "session/message_id@seq".
func undelivered(t *testing.T, s store.Store, machine string, before time.Time, limit int) []string {
	t.Helper()
	ds, err := s.Undelivered(ctx(t), machine, before, limit)
	mustNil(t, err, "Undelivered")
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = fmt.Sprintf("%s/%s@%d", d.SessionID, d.MessageID, d.Seq)
	}
	return out
}

// testDeliveries: an event stored with Deliver is listed by Undelivered
// (with its session's machine, seq and time) from the append that stores
// it until the append of an event of the same session that Answers it, or
// Delivered; a duplicate append lists nothing twice, the filters by
// machine and time and the limit hold, and a deleted session's go with it.
func testDeliveries(t *testing.T, s store.Store) {
	c := ctx(t)
	far := at(time.Hour)
	newSession(t, s, "s1", "m1")
	newSession(t, s, "s2", "m2")
	if got := undelivered(t, s, "", far, 0); len(got) != 0 {
		t.Fatalf("Undelivered of an empty store = %v", got)
	}
	appendOK(t, s, "s1", event("d0"), prompt("p1", time.Minute), event("d1"))
	appendOK(t, s, "s2", prompt("p2", 2*time.Minute))
	if got, want := undelivered(t, s, "", far, 0), []string{"s1/p1@2", "s2/p2@1"}; !slices.Equal(got, want) {
		t.Fatalf("Undelivered = %v, want %v (oldest first)", got, want)
	}
	ds, err := s.Undelivered(c, "m2", far, 0)
	mustNil(t, err, "Undelivered m2")
	if len(ds) != 1 || ds[0].MachineID != "m2" || ds[0].SessionID != "s2" || ds[0].MessageID != "p2" || ds[0].Seq != 1 ||
		!ds[0].CreatedAt.Equal(at(2*time.Minute)) {
		t.Fatalf("Undelivered(m2) = %+v, want p2 (seq 1) of s2 on m2, stored at 2m", ds)
	}
	evs, err := s.Events(c, "s2", ds[0].Seq-1, 1)
	mustNil(t, err, "Events of the delivery")
	if len(evs) != 1 || evs[0].MessageID != "p2" || !bytes.Equal(evs[0].Data, prompt("p2", 0).Data) {
		t.Fatalf("the event a delivery names: %+v", evs)
	}
	if got, want := undelivered(t, s, "", at(90*time.Second), 0), []string{"s1/p1@2"}; !slices.Equal(got, want) {
		t.Fatalf("Undelivered stored by 90s = %v, want %v", got, want)
	}
	if got, want := undelivered(t, s, "", far, 1), []string{"s1/p1@2"}; !slices.Equal(got, want) {
		t.Fatalf("Undelivered limit 1 = %v, want %v", got, want)
	}

	// A duplicate is stored once and listed once.
	got := appendOK(t, s, "s1", prompt("p1", time.Minute))
	if !got[0].Duplicate {
		t.Fatal("a prompt appended again was not a duplicate")
	}
	if got, want := undelivered(t, s, "m1", far, 0), []string{"s1/p1@2"}; !slices.Equal(got, want) {
		t.Fatalf("after a duplicate, Undelivered(m1) = %v, want %v", got, want)
	}

	// An answer counts in its own session only.
	appendOK(t, s, "s1", answer("a-wrong", "p2"))
	if got, want := undelivered(t, s, "", far, 0), []string{"s1/p1@2", "s2/p2@1"}; !slices.Equal(got, want) {
		t.Fatalf("an answer from another session delivered: %v, want %v", got, want)
	}
	appendOK(t, s, "s1", event("d2"), answer("a1", "p1"))
	if got, want := undelivered(t, s, "", far, 0), []string{"s2/p2@1"}; !slices.Equal(got, want) {
		t.Fatalf("after p1's answer, Undelivered = %v, want %v", got, want)
	}
	mustNil(t, s.Delivered(c, "s2", "p2"), "Delivered")
	mustNil(t, s.Delivered(c, "s2", "p2"), "Delivered again")
	mustNil(t, s.Delivered(c, "nosuch", "p9"), "Delivered of an unknown session")
	if got := undelivered(t, s, "", time.Time{}, 0); len(got) != 0 {
		t.Fatalf("after Delivered, Undelivered = %v", got)
	}

	// Several in one append, in seq order; a trimmed one stays listed
	// (its reader finds it gone); a deleted session's go with it.
	newSession(t, s, "s3", "m1")
	appendOK(t, s, "s3", prompt("p3", time.Minute), prompt("p4", time.Minute), event("d3"), event("d4"))
	if got, want := undelivered(t, s, "m1", far, 0), []string{"s3/p3@1", "s3/p4@2"}; !slices.Equal(got, want) {
		t.Fatalf("Undelivered(m1) = %v, want %v", got, want)
	}
	mustNil(t, s.Trim(c, "s3", 3), "Trim")
	if got, want := undelivered(t, s, "m1", far, 0), []string{"s3/p3@1", "s3/p4@2"}; !slices.Equal(got, want) {
		t.Fatalf("after a trim, Undelivered(m1) = %v, want %v", got, want)
	}
	mustNil(t, s.DeleteSession(c, "s3"), "DeleteSession")
	if got := undelivered(t, s, "", far, 0); len(got) != 0 {
		t.Fatalf("after DeleteSession, Undelivered = %v", got)
	}

	if _, err := s.AppendEvents(c, "s1", []store.Event{answer("self", "self")}); err == nil {
		t.Error("an event that answers itself was stored")
	}
	if err := s.Delivered(c, "", "p1"); err == nil {
		t.Error("Delivered with no session ID did not fail")
	}
	if err := s.Delivered(c, "s1", ""); err == nil {
		t.Error("Delivered with no message ID did not fail")
	}
}
