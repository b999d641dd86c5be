package fileref

import (
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/protocol"
)

// Parse must stay linear: MB/s should be about the same at 100 KB and 1 MB
// for every input shape, including the adversarial ones.

var benchRefs = []protocol.FileReference{ref("ref_0", "src/auth.ts"), ref("ref_1", "docs/설계.md")}

const (
	kb100 = 100 << 10
	mb1   = 1 << 20
)

var benchShapes = []struct {
	name string
	unit string // repeated up to the size
}{
	{"text", "이 파일의 버그를 찾아줘 <@file:ref_0|src/auth.ts>, and compare it with <@file:ref_1|docs/설계.md> \\<@file:x> ok.\n"},
	{"plain", "The quick brown fox jumps over the lazy dog; 다람쥐 헌 쳇바퀴에 타고파.\n"},
	{"unclosed", "<@file:a|"},
	{"backslashes", `\`},
	{"escaped-openers", `\<@`},
	{"openers", "<@"},
	{"unmapped", "<@file:zz|x>"},
	{"tokens", "<@file:ref_0|a>"},
}

func benchInput(unit string, size int) string {
	s := strings.Repeat(unit, size/len(unit)+1)
	return s[:size]
}

func benchParse(b *testing.B, in string) {
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		Parse(in, benchRefs)
	}
}

// BenchmarkParse1MB is the headline figure: a megabyte of prose with tokens.
func BenchmarkParse1MB(b *testing.B) {
	benchParse(b, benchInput(benchShapes[0].unit, mb1))
}

// BenchmarkParse runs every shape at two sizes; compare MB/s across sizes.
func BenchmarkParse(b *testing.B) {
	for _, shape := range benchShapes {
		for _, size := range []struct {
			name string
			n    int
		}{{"100KB", kb100}, {"1MB", mb1}} {
			b.Run(shape.name+"/"+size.name, func(b *testing.B) {
				benchParse(b, benchInput(shape.unit, size.n))
			})
		}
	}
}

func BenchmarkEscape1MB(b *testing.B) {
	in := benchInput(`typed <@file:x|y> with \ backslashes `, mb1)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		Escape(in)
	}
}

func BenchmarkCompose1MB(b *testing.B) {
	var segs []protocol.PromptSegment
	for n := 0; n < mb1; n += 64 {
		segs = append(segs, text(`some typed text with a \ and <@ in it, `), picked("src/auth.ts", ""))
	}
	out, _, err := Compose(segs)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Compose(segs); err != nil {
			b.Fatal(err)
		}
	}
}
