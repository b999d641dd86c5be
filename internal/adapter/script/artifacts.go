package script

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/artifact"
	"github.com/ferry-dev/ferry/internal/ignore"
	"github.com/ferry-dev/ferry/internal/vfs"
)

// ArtifactMarker starts a line of standard output that names a file the
// script made: "::ferry-artifact path/to/file" (relative to the workspace,
// or absolute inside it), alone on its line. The line is never shown as
// text; with SessionConfig.Artifacts on the file is handed over even when
// the ignore rules ignore it.
const ArtifactMarker = "::ferry-artifact "

// maxMarkerLine bounds how much of a line that starts like a marker is held
// back waiting for its end; longer, it is shown as text.
const maxMarkerLine = len(ArtifactMarker) + 4096

// Bounds of the workspace snapshot taken around a run: a huge workspace
// must not stall a turn. Variables so that tests can lower them.
var (
	// maxSnapshotFiles is the most files one snapshot records.
	maxSnapshotFiles = 100_000
	// snapshotTime bounds one snapshot's walk.
	snapshotTime = 2 * time.Second
)

// snapshot maps the workspace's regular files that the ignore rules keep
// (workspace-relative, "/"-separated) to their stamps.
type snapshot struct {
	files map[string]vfs.Stamp // a write changes one field at least (ctime even when mtime is restored)
	// complete is false when the walk was cut short (a bound, an error):
	// a file missing from files may then exist.
	complete bool
}

// takeSnapshot walks the workspace with its ignore rules (".git" is always
// skipped), within maxSnapshotFiles and snapshotTime; what cut it short is
// logged.
func (s *session) takeSnapshot(ctx context.Context, log *slog.Logger) snapshot {
	snap := snapshot{files: make(map[string]vfs.Stamp)}
	m, err := ignore.ForDir(s.root, ignore.OSEnv())
	if err != nil {
		log.Warn("script artifacts: no ignore rules, the workspace is not compared", "err", err)
		return snap
	}
	wctx, cancel := context.WithTimeout(ctx, snapshotTime)
	defer cancel()
	full := false
	err = m.Walk(wctx, ignore.OS(), s.root, func(rel string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return nil //nolint:nilerr // an unreadable directory: compare the rest
		}
		if len(snap.files) >= maxSnapshotFiles {
			full = true
			return fs.SkipAll
		}
		fi, err := d.Info()
		if err != nil {
			return nil //nolint:nilerr // gone since it was listed
		}
		snap.files[rel] = vfs.StampOf(fi)
		return nil
	})
	switch {
	case full:
		log.Warn("script artifacts: the workspace snapshot stopped at its file bound", "files", maxSnapshotFiles)
	case err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		log.Warn("script artifacts: the workspace snapshot stopped at its time bound", "limit", snapshotTime, "files", len(snap.files))
	case err != nil:
		log.Warn("script artifacts: the workspace snapshot failed", "err", err)
	default:
		snap.complete = true
	}
	return snap
}

// changed lists, sorted, the files of after that are not in before or
// differ from it. An incomplete before compares nothing: a file it missed
// would look new.
func changed(before, after snapshot) []string {
	if !before.complete {
		return nil
	}
	var out []string
	for rel, st := range after.files {
		if old, ok := before.files[rel]; !ok || old != st {
			out = append(out, rel)
		}
	}
	slices.Sort(out)
	return out
}

// handOver registers the files the run created or changed and the files it
// named, each once, in path order: agent.artifact for each, and the list
// for Result.Artifacts. A file that cannot be registered is logged and
// skipped.
func (r *runner) handOver(ctx context.Context, log *slog.Logger, before snapshot) []artifact.File {
	after := r.s.takeSnapshot(ctx, log)
	if !before.complete && after.files != nil {
		log.Warn("script artifacts: the workspace was not compared; only named files are handed over")
	}
	fsys, err := vfs.NewLocal(r.s.ws)
	if err != nil {
		log.Warn("script artifacts: workspace", "err", err)
		return nil
	}
	byPath := make(map[string]artifact.File)
	for _, name := range append(changed(before, after), r.named...) {
		f, err := artifact.Register(fsys, name, "")
		if err != nil {
			log.Warn("script artifacts: file not handed over", "name", name, "err", err)
			continue
		}
		byPath[f.Path()] = f
	}
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	files := make([]artifact.File, 0, len(paths))
	for _, p := range paths {
		f := byPath[p]
		if err := adapter.EmitArtifact(ctx, r.emit, r.turnID, f); err != nil {
			log.Warn("script artifacts: emit", "path", p, "err", err)
			continue
		}
		files = append(files, f)
	}
	return files
}

// markerFilter takes marker lines (ArtifactMarker) out of standard output.
// Text that cannot start a marker passes at once; only a line start that
// may still become one is held until its end.
type markerFilter struct {
	held string // the start of a line that is a prefix of a marker line
	mid  bool   // inside a line that is not a marker
}

// feed returns the text to show of d and the names of the marker lines it
// completed.
func (f *markerFilter) feed(d string) (text string, named []string) {
	var out strings.Builder
	s := f.held + d
	f.held = ""
	for s != "" {
		if f.mid {
			i := strings.IndexByte(s, '\n')
			if i < 0 {
				out.WriteString(s)
				break
			}
			out.WriteString(s[:i+1])
			s, f.mid = s[i+1:], false
			continue
		}
		n := min(len(s), len(ArtifactMarker))
		if s[:n] != ArtifactMarker[:n] {
			f.mid = true
			continue
		}
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			if len(s) > maxMarkerLine {
				out.WriteString(s)
				f.mid = true
				break
			}
			f.held = s
			break
		}
		if name := strings.TrimSuffix(s[len(ArtifactMarker):i], "\r"); name != "" {
			named = append(named, name)
		}
		s = s[i+1:]
	}
	return out.String(), named
}

// end returns what is still held at the end of the output: a marker line
// without its newline is still one.
func (f *markerFilter) end() (text string, named []string) {
	s := f.held
	f.held = ""
	if name, ok := strings.CutPrefix(s, ArtifactMarker); ok {
		if name = strings.TrimSuffix(name, "\r"); name != "" {
			return "", []string{name}
		}
		return "", nil
	}
	return s, nil
}
