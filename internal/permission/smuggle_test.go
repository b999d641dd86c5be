package permission_test

import (
	"testing"

	"github.com/ferry-dev/ferry/internal/permission"
)

// smuggleRules allow every program and builtin the smuggling tests use,
// except touch, which each payload runs.
var smuggleRules = []string{
	"Bash(printf:*)", "Bash(test:*)", "Bash(read:*)", "Bash(mapfile:*)", "Bash(readarray:*)",
	"Bash(unset:*)", "Bash(getopts:*)", "Bash(wait:*)", "Bash(sleep:*)", "Bash(echo:*)",
	"Bash(command:*)", "Bash(builtin:*)", "Bash(trap:*)", "Bash(compgen:*)", "Bash(complete:*)",
	"Bash(jobs:*)", "Bash(hash:*)", "Bash(ls:*)", "Bash(shopt:*)", "Bash(alias:*)", "Bash(find:*)",
	"Bash(xargs:*)", "Bash(env:*)", "Bash(timeout:*)", "Bash(bash:*)", "Bash(eval:*)", "Bash(cat:*)",
	"Bash(true:*)", "Bash(enable:*)", "Bash(bind:*)", "Bash(sudo:*)", "Bash(nice:*)", "Bash(nohup:*)",
	"Bash(git diff:*)",
}

// TestBashSmuggling: with the builtins allowed, a line that runs code no
// allow rule names is never allowed without asking (issue 16, item 5).
// Each line here runs `touch X` under bash 5.2 (checked by hand with
// bash --norc -c, and by TestBashSmugglingProperty for the grammar's
// forms), though touch is not allowed.
func TestBashSmuggling(t *testing.T) {
	t.Parallel()
	r := mustRules(t, smuggleRules, nil, nil)
	for _, line := range []string{
		// A variable name with a subscript: bash evaluates it as arithmetic.
		`printf -v 'a[$(touch X)]' %s 1`,
		`printf -v"a[\$(touch X)]" %s 1`,
		`printf -v 'a[$(touch X)]' -- 1`,
		`command printf -v 'a[$(touch X)]' 1`,
		`builtin printf -v 'a[$(touch X)]' 1`,
		`test -v 'a[$(touch X)]'`,
		`test ! -v 'a[$(touch X)]'`,
		`test -R 'a[$(touch X)]'`,
		`[ -v 'a[$(touch X)]' ]`,
		`read 'a[$(touch X)]' <<< 1`,
		`read -r -a 'a[$(touch X)]' <<< 1`,
		`read -ra'a[$(touch X)]' <<< 1`,
		`mapfile 'a[$(touch X)]' <<< 1`,
		`readarray -t 'a[$(touch X)]' <<< 1`,
		`read -a a <<< 1; unset 'a[$(touch X)]'`,
		`getopts a 'a[$(touch X)]' -a`,
		`sleep 0 & wait -n -p 'a[$(touch X)]'`,
		`sleep 0 & wait -np 'a[$(touch X)]'`,
		// Arithmetic, however it is reached.
		`let 'a[$(touch X)]'`,
		`command let 'a[$(touch X)]'`,
		`(( a[$(touch X)] ))`,
		`echo $(( a[$(touch X)] ))`,
		`echo $[ a[$(touch X)] ]`,
		`for ((i=a[$(touch X)]; i<1; i++)); do true; done`,
		`[[ 'a[$(touch X)]' -eq 1 ]] && echo`,
		`[[ 1 -lt 'a[$(touch X)]' ]] || echo`,
		`[[ -v 'a[$(touch X)]' ]] && echo`,
		`read -a a <<< 1; echo ${a[$(touch X)]}`,
		`echo ${PATH:$(touch X)}`,
		`echo ${PATH:0:$(touch X)}`,
		// The payload as data, evaluated later.
		`read x <<< 'a[$(touch X)]'; echo $((x))`,
		`read x <<< 'a[$(touch X)]'; [[ x -eq 1 ]] && echo`,
		`read x <<< 'a[$(touch X)]'; [[ $x -eq 1 ]] && echo`,
		`read x <<< 'a[$(touch X)]'; echo ${!x}`,
		`read x <<< 'a[$(touch X)]'; echo ${PATH:x}`,
		`read x <<< 'a[$(touch X)]'; printf -v "$x" 1`,
		`read x <<< '-va[$(touch X)]'; printf "$x" 1`,
		`read a b <<< '-v a[$(touch\ X)]'; test "$a" "$b"`,
		`read x <<< 'a[$(touch X)]'; test -v "$x"`,
		`read x <<< '$(touch X)'; echo ${x@P}`,
		`printf -v x %s 'a[$(touch X)]'; echo $((x))`,
		`mapfile -t a <<< 'a[$(touch X)]'; echo $((a))`,
		`read b <<< 'x[$(touch X)]'; cat {a[b]}</dev/null`,
		// Builtins that take code, or bind a name to another program.
		`trap 'touch X' EXIT`,
		`mapfile -C 'touch X' -c 1 a <<< 1`,
		`compgen -C 'touch X' x`,
		`compgen -F f x`,
		`compgen -W '$(touch X)' x`,
		`complete -C 'touch X' ls`,
		`bind -x '"a":touch X'`,
		`jobs -x touch X`,
		`hash -p /usr/bin/touch ls; ls X`,
		"shopt -s expand_aliases; alias ls='touch X'\nls",
		`enable -f ./evil.so x`,
		`fc -e 'touch X'`,
		`command fc -e 'touch X'`,
		// Programs that run other programs: the rule names the runner only.
		`find . -maxdepth 0 -exec touch X \;`,
		`xargs touch <<< X`,
		`env touch X`,
		`timeout 5 touch X`,
		`nice touch X`,
		`bash -c 'touch X'`,
		`eval 'touch X'`,
		`sudo touch X`,
		`env GIT_EXTERNAL_DIFF=./evil git diff`,
		`bash -c 'echo > X'`,
	} {
		if got := r.Decide(bash(line)); got == permission.Allow {
			t.Errorf("Decide(%q) = allow; it runs touch, which no rule allows", line)
		}
	}
}

// TestBashNotSmuggling: the checks leave the everyday forms of the same
// builtins allowed.
func TestBashNotSmuggling(t *testing.T) {
	t.Parallel()
	r := mustRules(t, append(smuggleRules, "Bash(touch:*)"), nil, nil)
	for _, line := range []string{
		`printf '%s\n' 'a[$(touch X)]'`,
		`printf -v x '%s' 1; echo "$x"`,
		`read -r line < input.txt`,
		`read -ra parts <<< "a b"; echo "${parts[@]}" "${#parts[@]}" "${parts[0]}"`,
		`mapfile -t lines < input.txt`,
		`test -f go.mod && echo yes`,
		`test -n "$HOME" -a "$HOME" = /root`,
		`[[ -f go.mod && $HOME == /root* ]] && echo`,
		`[[ 'a[$(touch X)]' == x ]] || echo`,
		`test -v HOME`,
		`unset x y`,
		`echo ${HOME:0:3} ${#HOME} ${HOME%/*} ${HOME@Q}`,
		`trap - EXIT`,
		`trap '' INT`,
		`trap -p`,
		`command -v 'a[$(touch X)]'`,
		`getopts ab: opt -a`,
		`find . -name '*.go' -exec touch {} +`,
		`timeout 5 touch X`,
		`sudo touch X`,
		`jobs -l`,
		`hash -r`,
		`alias`,
		`cat {fd}</dev/null`,
	} {
		if got := r.Decide(bash(line)); got != permission.Allow {
			t.Errorf("Decide(%q) = %v, want allow", line, got)
		}
	}
}
