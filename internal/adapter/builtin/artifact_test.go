package builtin_test

import (
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/adapter/builtin"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/protocol"
)

func TestArtifactsReachTheResult(t *testing.T) {
	t.Parallel()
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server) {
		for _, on := range []bool{false, true} {
			s, _ := open(t, srv, f, func(c *builtin.Config) {
				c.Artifacts = on
				c.Rules = permission.Rules{Allow: []permission.Rule{{Tool: "Write"}}}
			})
			srv.Script(write("out/sales.csv", "a,b\n1,2\n"), fake.Reply{Text: []string{"done"}})
			rec := newRecorder()
			res, err := s.Run(testCtx(t), turn("write the csv"), rec.emit)
			if err != nil {
				t.Fatal(err)
			}
			reqs := srv.ModelRequests()
			schemaHasFlag := strings.Contains(string(reqs[len(reqs)-2].Raw), `"artifact"`)
			if !on {
				if len(res.Artifacts) != 0 || rec.Count(protocol.TypeArtifact) != 0 || schemaHasFlag {
					t.Fatalf("off: artifacts %d, events %d, schema flag %v", len(res.Artifacts), rec.Count(protocol.TypeArtifact), schemaHasFlag)
				}
				continue
			}
			if len(res.Artifacts) != 1 || res.Artifacts[0].Path() != "out/sales.csv" || res.Artifacts[0].Size() != 8 ||
				rec.Count(protocol.TypeArtifact) != 1 || !schemaHasFlag {
				t.Fatalf("on: %+v, events %d, schema flag %v", res.Artifacts, rec.Count(protocol.TypeArtifact), schemaHasFlag)
			}
		}
	})
}
