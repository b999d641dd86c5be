package tools_test

import (
	"errors"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/tools"
	"github.com/ferry-dev/ferry/internal/vfs"
)

// The racily-clean case: a file changed twice within one tick of the
// kernel's coarse clock keeps its stamp. A stamp that was that fresh when the
// file was read cannot vouch for the content; the hash must decide.
func TestCheckWriteRacyStamp(t *testing.T) {
	t.Parallel()
	changed := time.Now()
	stamp := vfs.Stamp{Size: 5, ModTime: changed, ChangeTime: changed, Inode: 7, Device: 1}
	info := vfs.Info{Path: "/w/f", Stamp: stamp}
	oldHash := tools.HashBytes([]byte("aaaaa"))
	newHash := tools.HashBytes([]byte("bbbbb"))

	s := tools.NewReadState()
	s.Record(tools.ReadEntry{Path: "/w/f", Stamp: stamp, Hash: oldHash, ReadAt: changed.Add(5 * time.Millisecond)})
	hashed := false
	err := s.CheckWrite("f", info, func() (tools.Hash, error) { hashed = true; return newHash, nil })
	if !hashed || !errors.Is(err, &tools.Error{Code: tools.CodeStale}) {
		t.Fatalf("racy stamp with changed content: hashed %v, err %v; want code 3", hashed, err)
	}
	if err := s.CheckWrite("f", info, func() (tools.Hash, error) { return oldHash, nil }); err != nil {
		t.Fatalf("racy stamp with the same content: %v", err)
	}

	// A stamp that was old when read is trusted without hashing.
	s.Record(tools.ReadEntry{Path: "/w/f", Stamp: stamp, Hash: oldHash, ReadAt: changed.Add(5 * time.Second)})
	if err := s.CheckWrite("f", info, func() (tools.Hash, error) { t.Fatal("hashed a settled stamp"); return tools.Hash{}, nil }); err != nil {
		t.Fatal(err)
	}
}

func TestDedupableRacy(t *testing.T) {
	t.Parallel()
	changed := time.Now()
	stamp := vfs.Stamp{Size: 5, ModTime: changed, ChangeTime: changed}
	h := tools.HashBytes([]byte("aaaaa"))
	s := tools.NewReadState()
	s.Record(tools.ReadEntry{Path: "/w/f", Stamp: stamp, Hash: h, View: "lines 1-2000", ReadAt: changed})
	probe := tools.ReadEntry{Path: "/w/f", Stamp: stamp, View: "lines 1-2000"}
	if s.Dedupable(probe, func() (tools.Hash, error) { return tools.HashBytes([]byte("bbbbb")), nil }) {
		t.Fatal("racy stamp, changed content: must not dedup")
	}
	if !s.Dedupable(probe, func() (tools.Hash, error) { return h, nil }) {
		t.Fatal("racy stamp, same content: may dedup")
	}
	s.ResetDedup()
	if s.Dedupable(probe, func() (tools.Hash, error) { return h, nil }) {
		t.Fatal("after ResetDedup nothing is deduped")
	}
	// Partial views keep no hash: a racy one is never deduped.
	s.Record(tools.ReadEntry{Path: "/w/g", Stamp: stamp, View: "lines 2-3", Partial: true, ReadAt: changed})
	if s.Dedupable(tools.ReadEntry{Path: "/w/g", Stamp: stamp, View: "lines 2-3"}, func() (tools.Hash, error) { return tools.Hash{}, nil }) {
		t.Fatal("racy partial view deduped")
	}
}
