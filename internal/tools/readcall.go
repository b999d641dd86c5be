// One Read call's state, shared by the text, image, PDF and notebook
// readers: deduplication and what is recorded in the read state.

package tools

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"

	"github.com/ferry-dev/ferry/internal/vfs"
)

// readCall is one Read in progress.
type readCall struct {
	ctx    context.Context
	env    *Env
	limits Limits
	req    readRequest
	f      vfs.File
	info   vfs.Info
	head   []byte
	// name is how the file is named in messages: workspace-relative.
	name string
}

// dedup returns the stub result if the agent already has this view of the
// unchanged file in its context.
func (rc *readCall) dedup(view string) *Result {
	if rc.env.State == nil {
		return nil
	}
	hash := func() (Hash, error) { return hashFile(rc.env.FS, rc.info.Path) }
	if !rc.env.State.Dedupable(ReadEntry{Path: rc.info.Path, Stamp: rc.info.Stamp, View: view}, hash) {
		return nil
	}
	return &Result{
		Blocks: Text(fmt.Sprintf("%s is unchanged since your last Read of it (%s); that earlier result is still current.", rc.name, view)),
		Path:   rc.info.Path,
		Rel:    rc.info.Rel,
	}
}

// record stores what this read saw. hash is meaningful only for a full read.
func (rc *readCall) record(view string, partial bool, hash Hash) {
	if rc.env.State == nil {
		return
	}
	rc.env.State.Record(ReadEntry{Path: rc.info.Path, Stamp: rc.info.Stamp, Hash: hash, Partial: partial, View: view})
}

// result builds a successful result.
func (rc *readCall) result(blocks []Block) *Result {
	return &Result{Blocks: blocks, Path: rc.info.Path, Rel: rc.info.Rel}
}

// hashFile hashes the whole file, streaming.
func (rc *readCall) hashFile() (Hash, error) {
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(rc.f, 0, 1<<62)); err != nil {
		return Hash{}, fmt.Errorf("hash %s: %w", rc.name, err)
	}
	var sum Hash
	h.Sum(sum[:0])
	return sum, nil
}

func displayName(info vfs.Info, given string) string {
	if info.Rel != "" && info.Rel != "." {
		return info.Rel
	}
	if info.Path != "" {
		return info.Path
	}
	return given
}
