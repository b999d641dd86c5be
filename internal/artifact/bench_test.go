package artifact_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	"github.com/ferry-dev/ferry/internal/artifact"
	"github.com/ferry-dev/ferry/internal/tools"
	"github.com/ferry-dev/ferry/internal/vfs"
)

// BenchmarkCollectorAdd measures registration under contention: every
// goroutine adds to one collector, as parallel tool calls would.
func BenchmarkCollectorAdd(b *testing.B) {
	c := artifact.NewCollector()
	f, err := artifact.New("out/report.csv", 1024, artifact.WithMimeType("text/csv"))
	if err != nil {
		b.Fatal(err)
	}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Add(f)
		}
	})
}

// BenchmarkWrite compares a plain Write of a small new file with the
// decorated one (flag parsing, the lookup and the sniff): the cost the
// artifact switch adds to a write.
func BenchmarkWrite(b *testing.B) {
	for _, deco := range []bool{false, true} {
		b.Run(fmt.Sprintf("decorated=%v", deco), func(b *testing.B) {
			fsys, err := vfs.NewLocal(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = fsys.Close() }()
			env := &tools.Env{FS: fsys, State: tools.NewReadState(), Limits: tools.DefaultLimits()}
			var tool tools.Tool = tools.Write{}
			if deco {
				tool = artifact.WrapWrite(tool, artifact.Config{Logger: slog.New(slog.DiscardHandler)})
			}
			ctx := artifact.WithCollector(context.Background(), artifact.NewCollector())
			inputs := make([]json.RawMessage, b.N)
			for i := range inputs {
				inputs[i], _ = json.Marshal(map[string]any{"file_path": fmt.Sprintf("f%d.csv", i), "content": "a,b\n1,2\n"})
			}
			b.ResetTimer()
			for i := range b.N {
				if _, err := tools.Invoke(ctx, env, tool, "t", inputs[i]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
