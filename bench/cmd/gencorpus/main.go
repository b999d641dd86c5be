// Command gencorpus prints a deterministic list of Unicode file paths for
// the matcher benchmarks: accented Latin words in NFC or NFD form at random,
// CJK, Hangul, Greek, Cyrillic and emoji (some outside the BMP, some joined
// sequences), mixed with the ASCII names of ordinary projects.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"

	"golang.org/x/text/unicode/norm"
)

var (
	dirWords = []string{
		"src", "docs", "test", "lib", "assets", "menu", "données", "résumés", "Ångström",
		"über", "façade", "São_Paulo", "Zürich", "crème-brûlée", "naïve", "Ελληνικά", "документы",
		"文档", "测试", "プロジェクト", "設定", "한국어", "문서", "📁", "🚀launch", "café", "Æsir",
		"Łódź", "İstanbul", "ĳssel", "straße", "ΣΊΣΥΦΟΣ", "mañana", "déjà-vu", "jalapeño",
	}
	nameWords = []string{
		"readme", "README", "main", "index", "café", "résumé", "naïve", "Noël", "piñata",
		"crème", "façade", "Ελλάδα", "Москва", "日本語", "中文", "한글", "👍🏽", "👨‍👩‍👧", "🎉party",
		"emoji😀", "señor", "smörgåsbord", "Ärger", "über_config", "Öl", "Ñandú", "kelvin_\u212a",
		"ﬁle", "Ωmega", "σίσυφος", "test_", "store", "router", "util",
	}
	exts = []string{".txt", ".md", ".go", ".ts", ".py", ".jpg", ".c", ".h", ""}
)

func main() {
	n := flag.Int("n", 50000, "number of paths")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	r := rand.New(rand.NewPCG(*seed, *seed^0x9e3779b97f4a7c15)) //nolint:gosec // a reproducible corpus, not secrets
	w := bufio.NewWriter(os.Stdout)
	for i := range *n {
		var b strings.Builder
		for range r.IntN(5) {
			b.WriteString(pick(r, dirWords))
			b.WriteByte('/')
		}
		b.WriteString(pick(r, nameWords))
		if r.IntN(3) == 0 {
			b.WriteString("_" + pick(r, nameWords))
		}
		fmt.Fprintf(&b, "%d", i%97)
		b.WriteString(exts[r.IntN(len(exts))])
		s := b.String()
		// Half of the paths as macOS stores names (decomposed), half composed.
		if r.IntN(2) == 0 {
			s = norm.NFD.String(s)
		} else {
			s = norm.NFC.String(s)
		}
		fmt.Fprintln(w, s)
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "gencorpus:", err)
		os.Exit(1)
	}
}

func pick(r *rand.Rand, words []string) string { return words[r.IntN(len(words))] }
