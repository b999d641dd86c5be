// Language server diagnostics after edits (Config.Diagnostics).

package agent

import (
	"context"
	"fmt"
	"io"

	"github.com/ferry-dev/ferry/internal/vfs"
)

// maxDiagnosedFile bounds the file sent to a language server: a larger
// one is left without diagnostics rather than held in memory twice.
const maxDiagnosedFile = 8 << 20

// diagnostics is tools.Env.Diagnostics reading the changed file through
// fsys (ferry's disk, or the editor's buffers when it lends them).
func (a *Agent) diagnostics(fsys vfs.FS) func(ctx context.Context, path string) (string, error) {
	return func(ctx context.Context, path string) (string, error) {
		f, err := fsys.Open(path)
		if err != nil {
			return "", fmt.Errorf("agent: diagnostics: %w", err)
		}
		defer func() { _ = f.Close() }()
		data, err := io.ReadAll(io.LimitReader(f, maxDiagnosedFile+1))
		if err != nil {
			return "", fmt.Errorf("agent: diagnostics: %w", err)
		}
		if len(data) > maxDiagnosedFile {
			return "", nil
		}
		text, err := a.lsp.Diagnostics(ctx, path, data)
		if text != "" {
			// Its own block for the model; agent.tool.finished's output
			// joins the blocks as they are, so it starts a line there.
			text = "\n" + text
		}
		return text, err
	}
}
