package permission

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Bash runs code that no simple command of a line names in more places
// than $(…) and backticks. The subscript of an array name is an arithmetic
// expression, arithmetic expands $(…) inside it, and it evaluates the
// values of the variables it names as expressions in turn. So
// `printf -v 'a[$(touch x)]' 1` runs touch although every word is fixed
// text, and so does `read x <<<'a[$(touch x)]'; echo $((x))`, where the
// payload arrives as data. Some builtins take code outright (trap,
// mapfile -C, compgen -C/-F/-W, jobs -x), or change what a later name runs
// (hash -p, alias). A line with any of these is unvetted: no allow rule
// covers it, so it asks. Deny rules still see every command the line shows.
//
// The checks below close the class rather than list examples: any
// arithmetic at all; any parameter expansion that evaluates (an index
// other than a number, @ or *, a slice other than numbers, indirection,
// prompt expansion); [[ ]] with -v, -R or an arithmetic comparison; and
// every builtin that takes a variable name gets only plain identifiers
// there, written as fixed text.

// hidesCode reports whether n, a node of a command line, may run code
// that no simple command of the line shows.
func hidesCode(n syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause, *syntax.CStyleLoop:
		return true
	case *syntax.ParamExp:
		return paramEvaluates(n)
	case *syntax.Redirect:
		// {name}<file stores the descriptor in name, subscript and all.
		if n.N != nil && strings.HasPrefix(n.N.Value, "{") {
			return !isIdent(word{text: strings.Trim(n.N.Value, "{}"), lit: true})
		}
	case *syntax.UnaryTest:
		return n.Op == syntax.TsVarSet || n.Op == syntax.TsRefVar
	case *syntax.BinaryTest:
		switch n.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			return true
		}
	}
	return false
}

// safeTransforms are the ${x@OP} operators that only quote or describe
// the value; @P expands it as a prompt, command substitution included.
var safeTransforms = map[string]bool{"Q": true, "E": true, "A": true, "K": true, "k": true, "a": true, "u": true, "U": true, "L": true}

// paramEvaluates reports whether a parameter expansion may evaluate text
// as arithmetic or as a prompt.
func paramEvaluates(p *syntax.ParamExp) bool {
	if p.Excl || p.NestedParam != nil {
		return true // ${!x} resolves x's value as a name, subscript and all
	}
	if p.Index != nil && !plainIndex(p.Index) {
		return true
	}
	if p.Slice != nil && (!digits(p.Slice.Offset) || (p.Slice.Length != nil && !digits(p.Slice.Length))) {
		return true
	}
	if p.Exp != nil && p.Exp.Op == syntax.OtherParamOps {
		op := wordOf(p.Exp.Word)
		return !op.lit || !safeTransforms[op.text]
	}
	return false
}

// plainIndex: a subscript that evaluates nothing: digits, @ or *.
func plainIndex(x syntax.ArithmExpr) bool {
	if w, ok := x.(*syntax.Word); ok {
		if t := wordOf(w); t.lit && (t.text == "@" || t.text == "*") {
			return true
		}
	}
	return digits(x)
}

func digits(x syntax.ArithmExpr) bool {
	w, ok := x.(*syntax.Word)
	if !ok {
		return false
	}
	t := wordOf(w)
	if !t.lit || t.text == "" {
		return false
	}
	for _, r := range t.text {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// isIdent: a plain shell variable name, no subscript.
func isIdent(w word) bool {
	if !w.lit || w.text == "" {
		return false
	}
	for i, r := range w.text {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i > 0 && r >= '0' && r <= '9':
		default:
			return false
		}
	}
	return true
}

// option is one option getopt found: its letter and argument, if it takes
// one.
type option struct {
	letter byte
	arg    word
}

// getopt splits a builtin's arguments the way bash's internal_getopt does:
// options until "--" or the first operand, several letters to a word, an
// option's argument attached ("-vNAME") or in the next word. spec lists
// the letters; a letter followed by ':' takes an argument. ok is false
// when a word in option position is not fixed text: it could expand to
// any option.
func getopt(args []word, spec string) (opts []option, operands []word, ok bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !a.lit {
			return nil, nil, false
		}
		t := a.text
		if t == "--" {
			return opts, args[i+1:], true
		}
		if len(t) < 2 || (t[0] != '-' && t[0] != '+') {
			return opts, args[i:], true
		}
		for j := 1; j < len(t); j++ {
			c := t[j]
			k := strings.IndexByte(spec, c)
			if k < 0 || k+1 >= len(spec) || spec[k+1] != ':' {
				opts = append(opts, option{letter: c})
				continue
			}
			o := option{letter: c}
			switch {
			case j+1 < len(t):
				o.arg = word{text: t[j+1:], lit: true}
			case i+1 < len(args):
				i++
				o.arg = args[i]
			}
			opts = append(opts, o)
			break
		}
	}
	return opts, nil, true
}

func hasOpt(opts []option, letters string) bool {
	for _, o := range opts {
		if strings.IndexByte(letters, o.letter) >= 0 {
			return true
		}
	}
	return false
}

// optArgsAreNames reports whether every argument of the options in letters
// is a plain identifier.
func optArgsAreNames(opts []option, letters string) bool {
	for _, o := range opts {
		if strings.IndexByte(letters, o.letter) >= 0 && !isIdent(o.arg) {
			return false
		}
	}
	return true
}

func allNames(ws []word) bool {
	for _, w := range ws {
		if !isIdent(w) {
			return false
		}
	}
	return true
}

// builtinOpts are the getopt specs of the builtins checked below.
var builtinOpts = map[string]string{
	"printf":    "v:",
	"read":      "ersa:d:i:n:N:p:t:u:",
	"mapfile":   "d:u:n:O:s:tC:c:",
	"readarray": "d:u:n:O:s:tC:c:",
	"unset":     "fnv",
	"wait":      "fnp:",
	"getopts":   "",
	"trap":      "lpP",
	"complete":  "abcdefgjksuvDEIo:A:G:W:F:C:X:P:S:",
	"compgen":   "abcdefgjksuvo:A:G:W:F:C:X:P:S:",
	"bind":      "lpsvPSVXm:f:q:u:r:x:",
	"jobs":      "lnprsx",
	"enable":    "adnpsf:",
	"hash":      "lrp:dt",
	"command":   "pvV",
	"builtin":   "",
}

// builtinHidesCode reports whether a simple command, run as a bash builtin,
// may run code that its words do not show: a variable name with a
// subscript, code given as an argument, or a name bound to another program.
// A builtin's name is fixed text after quote removal (`\printf` is printf);
// `command` and `builtin` in front run the same builtin.
func builtinHidesCode(words []word) bool {
	for range maxNesting {
		if len(words) == 0 || !words[0].lit {
			return false
		}
		name, args := words[0].text, words[1:]
		switch name {
		case "let", "declare", "typeset", "local", "export", "readonly", "nameref", "fc":
			// As a plain command the parser reads these as clauses, which
			// are unvetted; here they come after command or builtin.
			return true
		case "test", "[":
			return testHidesCode(args)
		case "alias":
			for _, a := range args {
				if !a.lit || strings.Contains(a.text, "=") {
					return true
				}
			}
			return false
		}
		spec, ok := builtinOpts[name]
		if !ok {
			return false
		}
		opts, operands, ok := getopt(args, spec)
		if !ok {
			return true
		}
		switch name {
		case "command", "builtin":
			if hasOpt(opts, "vV") {
				return false // only looks the name up
			}
			words = operands
			continue
		case "printf":
			return !optArgsAreNames(opts, "v")
		case "read":
			return !optArgsAreNames(opts, "a") || !allNames(operands)
		case "mapfile", "readarray":
			return hasOpt(opts, "C") || !allNames(operands)
		case "unset":
			return !allNames(operands)
		case "wait":
			return !optArgsAreNames(opts, "p")
		case "getopts":
			return len(operands) > 1 && !isIdent(operands[1])
		case "trap":
			// trap, trap -l, trap -p, trap SIG and trap - SIG run nothing;
			// trap '' SIG ignores it.
			if len(operands) <= 1 {
				return false
			}
			a := operands[0]
			return !a.lit || (a.text != "-" && a.text != "")
		case "complete", "compgen":
			return hasOpt(opts, "CFW") // -W's words are expanded, $(…) and all
		case "bind":
			return hasOpt(opts, "xf")
		case "jobs":
			return hasOpt(opts, "x") // jobs -x runs its operands
		case "enable":
			return hasOpt(opts, "f") // loads a shared object
		case "hash":
			return hasOpt(opts, "p") // binds a name to any program
		}
		return false
	}
	return true
}

// testOperators are the binary operators of test and [: a word before one
// of these is an operand, not a unary operator.
var testOperators = map[string]bool{
	"=": true, "==": true, "!=": true, "<": true, ">": true, "-eq": true, "-ne": true, "-lt": true,
	"-le": true, "-gt": true, "-ge": true, "-nt": true, "-ot": true, "-ef": true, "-a": true, "-o": true,
}

// testHidesCode reports whether test's arguments may apply -v or -R (which
// evaluate a subscript) to something other than a plain name. A word that
// is not fixed text may expand to -v itself, unless what follows it
// marks it as an operand.
func testHidesCode(args []word) bool {
	if n := len(args); n > 0 && args[n-1].lit && args[n-1].text == "]" {
		args = args[:n-1]
	}
	for i := 0; i+1 < len(args); i++ {
		a, next := args[i], args[i+1]
		if isIdent(next) || (next.lit && testOperators[next.text]) {
			continue
		}
		if !a.lit || a.text == "-v" || a.text == "-R" {
			return true
		}
	}
	return false
}
