package ignore

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// wildTable pairs rules with the paths to try them on, the awkward corners
// of git's wildcard language: escapes, every odd class, "**" in every
// position, and the literal-prefix rule of anchored patterns. Git decides
// what the answers are: each rule goes into its own directory's .gitignore
// and git check-ignore is asked about every path (paths need not exist;
// git and the Matcher both take a missing path for a file).
var wildTable = []struct {
	rule  string
	paths []string
}{
	{"foo", []string{"foo", "fo", "foox", "d/foo"}},
	{"???", []string{"foo", "fo", "abcd"}},
	{"f*", []string{"foo", "f", "of"}},
	{"*foo*", []string{"foo", "xfooy", "fo"}},
	{"*ob*a*r*", []string{"foobar", "foobaz"}},
	{"*ab", []string{"aaaaaaabababab", "aba"}},
	{"foo\\*", []string{"foo*", "foox", "foo\\x"}},
	{"foo\\*bar", []string{"foobar", "foo*bar"}},
	{"f\\\\oo", []string{"f\\oo", "foo"}},
	{"*[al]?", []string{"ball", "bat"}},
	{"[ten]", []string{"ten", "t"}},
	{"**[!te]", []string{"ten", "tee"}},
	{"t[a-g]n", []string{"ten", "ton"}},
	{"t[!a-g]n", []string{"ten", "ton"}},
	{"t[^a-g]n", []string{"ton", "ten"}},
	{"a[]]b", []string{"a]b", "ab"}},
	{"a[]-]b", []string{"a-b", "a]b", "aab"}},
	{"a[]a-]b", []string{"aab", "a-b"}},
	{"]", []string{"]"}},
	{"foo*bar", []string{"foo/baz/bar", "foobazbar"}},
	{"foo**bar", []string{"foo/baz/bar", "foobazbar"}},
	{"foo/**/bar", []string{"foo/baz/bar", "foo/bar", "foo/b/a/z/bar", "foo/barx"}},
	{"foo/**/**/bar", []string{"foo/baz/bar", "foo/bar", "foo/b/a/z/bar"}},
	{"foo?bar", []string{"foo/bar", "fooxbar"}},
	{"foo[/]bar", []string{"foo/bar"}},
	{"foo[^a-z]bar", []string{"foo/bar", "foo-bar"}},
	{"**/foo", []string{"foo", "XXX/foo", "bar/baz/foo"}},
	{"*/foo", []string{"bar/baz/foo", "bar/foo"}},
	{"**/bar*", []string{"foo/bar/baz", "foo/barx"}},
	{"**/bar/*", []string{"deep/foo/bar/baz", "deep/foo/bar", "deep/foo/bar/baz/x"}},
	{"**/bar/**", []string{"deep/foo/bar/baz", "deep/foo/bar", "deep/foo/bar/baz/x"}},
	{"**/bar**", []string{"foo/bar/baz", "foo/barx"}},
	{"*/bar/**", []string{"foo/bar/baz/x", "deep/foo/bar/baz/x"}},
	{"**/bar/*/*", []string{"deep/foo/bar/baz/x"}},
	{"a[c-c]st", []string{"acrt", "acst"}},
	{"a[c-c]rt", []string{"acrt"}},
	{"[!]-]", []string{"]", "a", "-"}},
	{"\\", []string{"\\", "x"}},
	{"*/\\", []string{"XXX/\\"}},
	{"*/\\\\", []string{"XXX/\\"}},
	{"@foo", []string{"@foo", "foo"}},
	{"\\[ab]", []string{"[ab]", "a"}},
	{"[[]ab]", []string{"[ab]"}},
	{"[[:]ab]", []string{"[ab]", ":ab]"}},
	{"[[::]ab]", []string{"[ab]"}},
	{"[[:digit]ab]", []string{"[ab]", "dab]"}},
	{"[\\[:]ab]", []string{"[ab]"}},
	{"\\??\\?b", []string{"?a?b", "xa?b"}},
	{"\\a\\b\\c", []string{"abc"}},
	{"**/t[o]", []string{"foo/bar/baz/to"}},
	{"[[:alpha:]][[:digit:]][[:upper:]]", []string{"a1B", "a1b"}},
	{"[[:digit:][:upper:][:space:]]", []string{"a", "A", "1", " ", "x"}},
	{"[[:digit:][:upper:][:spaci:]]", []string{"1"}},
	{"x[[:digit:][:punct:][:space:]]", []string{"x.", "xa"}},
	{"[[:xdigit:]]", []string{"5", "f", "D", "g"}},
	{"x[^[:alnum:][:alpha:][:blank:][:cntrl:][:digit:][:lower:][:space:][:upper:][:xdigit:]]", []string{"x.", "xa"}},
	{"[a-c[:digit:]x-z]", []string{"5", "b", "y", "q"}},
	{"[\\\\-^]", []string{"]", "["}},
	{"[\\-_]", []string{"-", "_", "a"}},
	{"[\\]]", []string{"]", "\\]", "\\"}},
	{"a[]b", []string{"ab", "a[]b"}},
	{"ab[", []string{"ab["}},
	{"[!", []string{"ab"}},
	{"[-", []string{"ab"}},
	{"[-]", []string{"-"}},
	{"[a-", []string{"-"}},
	{"[!a-", []string{"-"}},
	{"[--A]", []string{"-", "5", "B"}},
	{"[ --]", []string{" ", "$", "-", "0"}},
	{"[---]", []string{"-"}},
	{"[------]", []string{"-"}},
	{"[a-e-n]", []string{"j", "-"}},
	{"[!------]", []string{"a", "-"}},
	{"[]-a]", []string{"[", "^"}},
	{"[!]-a]", []string{"^", "["}},
	{"[a^bc]", []string{"^"}},
	{"[a-]b]", []string{"-b]"}},
	{"[\\]", []string{"\\"}},
	{"[\\\\]", []string{"\\"}},
	{"[!\\\\]", []string{"\\", "a"}},
	{"[A-\\\\]", []string{"G", "\\", "a"}},
	{"b*a", []string{"aaabbb"}},
	{"*ba*", []string{"aabcaa"}},
	{"[,]", []string{","}},
	{"[\\\\,]", []string{",", "\\"}},
	{"[,-.]", []string{"-", "+", "-.]"}},
	{"[\\1-\\3]", []string{"2", "3", "4"}},
	{"[[-\\]]", []string{"\\", "[", "]", "-"}},
	{"-*-*-*-*-*-*-12-*-*-*-m-*-*-*", []string{
		"-adobe-courier-bold-o-normal--12-120-75-75-m-70-iso8859-1",
		"-adobe-courier-bold-o-normal--12-120-75-75-X-70-iso8859-1",
	}},
	{"XXX/*/*/*/*/*/*/12/*/*/*/m/*/*/*", []string{
		"XXX/adobe/courier/bold/o/normal/x/12/120/75/75/m/70/iso8859/1",
		"XXX/adobe/courier/bold/o/normal/x/12/120/75/75/X/70/iso8859/1",
	}},
	{"**/*a*b*g*n*t", []string{"abcd/abcdefg/abcdefghijk/abcdefghijklmnop.txt", "abcd/abcdefg/abcdefghijk/abcdefghijklmnop.txtz"}},
	{"*/*/*", []string{"foo", "foo/bar", "foo/bba/arr", "foo/bb/aa/rr"}},
	{"**/**/**", []string{"foo/bb/aa/rr", "foo"}},
	{"*X*i", []string{"abcXdefXghi", "ab/cXd/efXg/hi"}},
	{"*/*X*/*/*i", []string{"ab/cXd/efXg/hi"}},
	{"**/*X*/**/*i", []string{"ab/cXd/efXg/hi"}},
	{"foo/*", []string{"foo/bar", "foo/bba/arr"}},
	{"foo/**", []string{"foo/bba/arr", "foo"}},
	{"foo*", []string{"foo/bba/arr", "foox"}},
	{"foo/*arr", []string{"foo/bba/arr", "foo/xarr"}},
	{"foo/**arr", []string{"foo/bba/arr", "foo/xarr"}},
	{"foo/*z", []string{"foo/bba/arr"}},
	{"foo/**z", []string{"foo/bba/arr"}},
	{"*Xg*i", []string{"ab/cXd/efXg/hi"}},
	{"[A-Z]", []string{"a", "A"}},
	{"[a-z]", []string{"A", "a"}},
	{"[[:upper:]]", []string{"a", "A"}},
	{"[[:lower:]]", []string{"A", "a"}},
	{"[B-Za]", []string{"A", "a"}},
	{"[B-a]", []string{"A", "a"}},
	{"[Z-y]", []string{"z", "Z"}},
	{"\\A", []string{"A", "a"}},
	{"Foo", []string{"foo", "FOO", "Foo"}},
	{"*.TXT", []string{"a.txt", "a.TXT"}},
	{"Dir/File", []string{"dir/file", "Dir/File"}},
	// The literal prefix of an anchored rule ends where the first wildcard
	// starts, and what follows counts as the start of a pattern.
	{"dir/foo**/bar", []string{"dir/foo/bar", "dir/foox/y/bar", "dir/fooxbar", "dir/foo/x/bar"}},
	{"dir/foo**", []string{"dir/foo", "dir/foox/y/z", "dir/foo/x"}},
	{"dir/**", []string{"dir", "dir/x", "dir/x/y"}},
	{"/dir/**/", []string{"dir/x"}},
	{"dir/**\\/x", []string{"dir/a/x", "dir/x"}},
	{"**\\/x", []string{"a/x", "x"}},
	{"d/a**/b", []string{"d/a/b", "d/ax/b", "d/a/x/b"}},
	{"d/**a/b", []string{"d/a/b", "d/xa/b", "d/x/a/b"}},
	{"a/*/b", []string{"a/x/b", "a/b", "a/x/y/b"}},
	{"/a", []string{"a", "x/a"}},
	{"//a", []string{"a"}},
	{"a//b", []string{"a/b"}},
	{"*", []string{"x", "x/y"}},
	{"/*", []string{"x", "x/y"}},
	{"**", []string{"x", "x/y"}},
	{"/**", []string{"x", "x/y"}},
	{"!x", []string{"x"}},
	{"\\!x", []string{"!x", "x"}},
	{"\\#x", []string{"#x"}},
	{"#x", []string{"#x"}},
	{"x\\ ", []string{"x ", "x"}},
	{"x \\ ", []string{"x  ", "x "}},
	{"x\\", []string{"x", "x\\"}},
	{" ", []string{" "}},
	{"\\ ", []string{" "}},
	{"\t", []string{"\t"}},
	{"x\t", []string{"x\t", "x"}},
}

// classBytes are the name bytes the class tests try: all ASCII but "/",
// and a few others.
func classBytes() []byte {
	var bs []byte
	for c := 1; c < 128; c++ {
		if c != '/' {
			bs = append(bs, byte(c))
		}
	}
	return append(bs, 0x80, 0xaa, 0xc3, 0xe9, 0xff)
}

func TestGitWildTable(t *testing.T) {
	for _, fold := range []bool{false, true} {
		t.Run(fmt.Sprintf("ignorecase=%v", fold), func(t *testing.T) {
			e := newGitEnv(t)
			root := t.TempDir()
			gitInit(t, e, root)
			if fold {
				appendFile(t, filepath.Join(root, ".git", "config"), "[core]\n\tignorecase = true\n")
			}
			var paths []string
			for i, tc := range wildTable {
				dir := fmt.Sprintf("t%03d", i)
				writeFile(t, filepath.Join(root, dir, ".gitignore"), tc.rule+"\n")
				for _, p := range tc.paths {
					paths = append(paths, dir+"/"+p)
				}
			}
			classes := []string{"alnum", "alpha", "blank", "cntrl", "digit", "graph",
				"lower", "print", "punct", "space", "upper", "xdigit"}
			rules := []string{"x[A-z]", "x[a-Z]", "x[!a-z]", "x?", "x*"}
			for _, c := range classes {
				rules = append(rules, "x[[:"+c+":]]", "x[![:"+c+":]]")
			}
			for i, rule := range rules {
				dir := fmt.Sprintf("c%03d", i)
				writeFile(t, filepath.Join(root, dir, ".gitignore"), rule+"\n")
				for _, b := range classBytes() {
					paths = append(paths, dir+"/x"+string([]byte{b}))
				}
			}
			compareVirtual(t, e, root, paths)
		})
	}
}

// compareVirtual compares git and the Matcher on paths that need not
// exist (taken for files by both).
func compareVirtual(t *testing.T, e gitEnv, root string, paths []string) {
	t.Helper()
	want := e.checkIgnore(t, root, paths)
	m, err := New(Config{Root: root, GitDir: filepath.Join(root, ".git"), Env: e.env()})
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for _, p := range paths {
		got := m.Match(p, false)
		if got != (want[p] != "") {
			bad++
			if bad <= 30 {
				rule, _ := os.ReadFile(filepath.Join(root, strings.SplitN(p, "/", 2)[0], ".gitignore"))
				t.Errorf("rule %q, path %q: ignored=%v, git says %v", strings.TrimSuffix(string(rule), "\n"), p, got, !got)
			}
		}
	}
	if bad > 30 {
		t.Errorf("... %d disagreements in all", bad)
	}
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
