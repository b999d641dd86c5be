package artifact_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/ferry-dev/ferry/internal/artifact"
	"github.com/ferry-dev/ferry/internal/llm"
)

func TestFileName(t *testing.T) {
	cases := []struct{ in, want string }{
		{"/reports/sales.csv", "sales.csv"},
		{"reports/sales.csv", "sales.csv"},
		{"sales.csv", "sales.csv"},
		{"/reports/", "reports"},
		{"/reports//", "reports"},
		{`a\b\c.txt`, "c.txt"},
		{`C:\Users\me\report.pdf`, "report.pdf"},
		{`mixed/dir\file.md`, "file.md"},
		{`dir\`, "dir"},
		{"", ""},
		{"/", "/"},
		{"///", "///"},
		{`\`, `\`},
		{`/\/`, `/\/`},
		{"a b/c d.txt", "c d.txt"},
		{"データ/報告.csv", "報告.csv"},
	}
	for _, c := range cases {
		if got := artifact.FileName(c.in); got != c.want {
			t.Errorf("FileName(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestNewRules(t *testing.T) {
	f, err := artifact.New("out/sales.csv", 42, artifact.WithMimeType("text/csv"), artifact.WithToolUseID("toolu_1"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Path() != "out/sales.csv" || f.FileName() != "sales.csv" || f.Size() != 42 || f.MimeType() != "text/csv" ||
		f.ToolUseID() != "toolu_1" || f.DownloadToken() != "" {
		t.Fatalf("fields %+v", f.ToMessage().Fields())
	}
	named, err := artifact.New("out/x.bin", 0, artifact.WithFileName("Quarterly report.bin"), artifact.WithDownloadToken("tok"))
	if err != nil || named.FileName() != "Quarterly report.bin" || named.DownloadToken() != "tok" {
		t.Fatalf("%+v %v", named, err)
	}
	bad := []struct {
		name string
		path string
		size int64
		opts []artifact.Option
	}{
		{"empty path", "", 1, nil},
		{"blank path", "  \t", 1, nil},
		{"negative size", "a.txt", -1, nil},
		{"blank file name", "a.txt", 1, []artifact.Option{artifact.WithFileName(" ")}},
	}
	for _, b := range bad {
		if _, err := artifact.New(b.path, b.size, b.opts...); !errors.Is(err, llm.ErrInvalidArtifact) {
			t.Errorf("%s: err %v", b.name, err)
		}
	}
}

func TestValuesAreImmutable(t *testing.T) {
	f, err := artifact.New("out/a.csv", 3, artifact.WithMimeType("text/csv"))
	if err != nil {
		t.Fatal(err)
	}
	m := f.ToMessage()
	tokened := m.WithDownloadToken("dl_1")
	if m.DownloadToken() != "" || f.DownloadToken() != "" || tokened.DownloadToken() != "dl_1" {
		t.Fatalf("WithDownloadToken changed the original: %q %q", m.DownloadToken(), f.DownloadToken())
	}
	if tokened.Path() != m.Path() || tokened.Size() != m.Size() || tokened.MimeType() != m.MimeType() {
		t.Fatal("WithDownloadToken lost fields")
	}
	// Fields is a copy: changing it changes nothing.
	fields := m.Fields()
	fields.Path = "elsewhere"
	if m.Path() != "out/a.csv" {
		t.Fatal("Fields shares state")
	}
	// Snapshots of a collector hold values: changing a slice changes no
	// other snapshot.
	c := artifact.NewCollector()
	c.Add(f)
	s1 := c.Artifacts()
	s1[0] = artifact.File{}
	if got := c.Artifacts()[0]; got.Path() != "out/a.csv" {
		t.Fatalf("snapshot aliasing: %q", got.Path())
	}
	if back := artifact.FromMessage(tokened); back.DownloadToken() != "dl_1" || back.Path() != "out/a.csv" {
		t.Fatalf("FromMessage %+v", back)
	}
}

func TestMessageArtifactJSON(t *testing.T) {
	f, err := artifact.New("out/r.md", 10, artifact.WithMimeType("text/markdown"), artifact.WithToolUseID("t9"))
	if err != nil {
		t.Fatal(err)
	}
	msg := llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockText, Text: "hi"}},
		Artifacts: []llm.Artifact{f.ToMessage().WithDownloadToken("dl_x")}}
	b, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	want := `"artifacts":[{"path":"out/r.md","file_name":"r.md","size":10,"mime_type":"text/markdown","tool_use_id":"t9","download_token":"dl_x"}]`
	if !strings.Contains(string(b), want) {
		t.Fatalf("encoding %s", b)
	}
	var back llm.Message
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Artifacts) != 1 || back.Artifacts[0] != msg.Artifacts[0] {
		t.Fatalf("round trip %+v", back.Artifacts)
	}
	// A message without artifacts encodes as before.
	plain, _ := json.Marshal(llm.Message{Role: llm.RoleUser, Content: []llm.Block{}})
	if strings.Contains(string(plain), "artifacts") {
		t.Fatalf("empty artifacts encoded: %s", plain)
	}
	// Decoding enforces the rules.
	for _, bad := range []string{
		`{"path":"","file_name":"x","size":1}`,
		`{"path":"a","file_name":"","size":1}`,
		`{"path":"a","file_name":"a","size":-5}`,
		`{"path":"a","file_name":"a","size":"big"}`,
	} {
		var a llm.Artifact
		if err := json.Unmarshal([]byte(bad), &a); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
}

func TestCollectorParallelAdds(t *testing.T) {
	const writers, each = 32, 200
	c := artifact.NewCollector()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var readers sync.WaitGroup
	// Readers check, while the writers run, that every SliceFrom is one
	// consistent window: as long as what was there at its mark, never
	// shifted (a window that slid would start with a later item).
	for r := range 4 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				mark := c.Len()
				before := c.Artifacts()
				if len(before) < mark {
					t.Errorf("reader %d: snapshot of %d shorter than an earlier Len %d", r, len(before), mark)
					return
				}
				win := c.SliceFrom(mark)
				after := c.Artifacts()
				if mark+len(win) > len(after) {
					t.Errorf("reader %d: window past the end", r)
					return
				}
				for j, f := range win {
					if f != after[mark+j] {
						t.Errorf("reader %d: window item %d is %s, the collector has %s there", r, j, f.Path(), after[mark+j].Path())
						return
					}
				}
				for j, f := range before {
					if f != after[j] {
						t.Errorf("reader %d: an earlier snapshot changed at %d", r, j)
						return
					}
				}
			}
		}()
	}
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				f, err := artifact.New(fmt.Sprintf("w%d/%d.txt", w, i), int64(i), artifact.WithToolUseID(fmt.Sprint(w)))
				if err != nil {
					t.Error(err)
					return
				}
				c.Add(f)
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	all := c.Artifacts()
	if len(all) != writers*each || c.Len() != writers*each {
		t.Fatalf("%d artifacts, want %d", len(all), writers*each)
	}
	// Each writer's artifacts are all there, in its order.
	next := make([]int, writers)
	for _, f := range all {
		var w, i int
		if _, err := fmt.Sscanf(f.Path(), "w%d/%d.txt", &w, &i); err != nil {
			t.Fatal(err)
		}
		if i != next[w] {
			t.Fatalf("writer %d: item %d after %d", w, i, next[w]-1)
		}
		next[w]++
	}
}

func TestSliceFromMarks(t *testing.T) {
	c := artifact.NewCollector()
	for i := range 3 {
		f, _ := artifact.New(fmt.Sprintf("%d.txt", i), 1)
		c.Add(f)
	}
	for _, tc := range []struct{ mark, want int }{{0, 3}, {1, 2}, {3, 0}, {4, 0}, {-1, 0}, {1 << 30, 0}, {-1 << 30, 0}} {
		got := c.SliceFrom(tc.mark)
		if got == nil || len(got) != tc.want {
			t.Errorf("SliceFrom(%d) = %d items (nil %v), want %d", tc.mark, len(got), got == nil, tc.want)
		}
	}
	if got := c.SliceFrom(2); got[0].Path() != "2.txt" {
		t.Fatalf("SliceFrom(2) = %s", got[0].Path())
	}
	// A nil collector (no artifacts in this assembly) is empty and ignores Adds.
	var none *artifact.Collector
	f, _ := artifact.New("x", 1)
	none.Add(f)
	if none.Len() != 0 || len(none.Artifacts()) != 0 || len(none.SliceFrom(0)) != 0 {
		t.Fatal("nil collector not empty")
	}
	var zero artifact.Collector
	zero.Add(f)
	if zero.Len() != 1 {
		t.Fatal("zero collector unusable")
	}
}

func TestContextCarriesCollector(t *testing.T) {
	if artifact.CollectorFrom(context.Background()) != nil {
		t.Fatal("a collector out of nowhere")
	}
	c := artifact.NewCollector()
	ctx := artifact.WithCollector(context.Background(), c)
	if artifact.CollectorFrom(ctx) != c {
		t.Fatal("collector lost")
	}
	sub, own := artifact.Fork(ctx)
	if artifact.CollectorFrom(sub) != own || own == c {
		t.Fatal("Fork shares the parent's collector")
	}
	if artifact.CollectorFrom(ctx) != c {
		t.Fatal("Fork changed the parent's context")
	}
}

func TestToMessages(t *testing.T) {
	if artifact.ToMessages(nil) != nil {
		t.Fatal("empty list not nil")
	}
	a, _ := artifact.New("a", 1)
	b, _ := artifact.New("b", 2)
	ms := artifact.ToMessages([]artifact.File{a, b})
	if len(ms) != 2 || ms[0].Path() != "a" || ms[1].Size() != 2 {
		t.Fatalf("%+v", ms)
	}
}
