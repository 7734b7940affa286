package permission

import (
	"fmt"
	"strings"
	"testing"
)

// Lines that hide a second program; each must either list it or be refused.
func TestParseShellListsOrRefusesSecondProgram(t *testing.T) {
	lines := []string{
		"echo a; rm -rf x", "echo a && rm x", "echo a\nrm x", "echo $(rm x)", "echo `rm x`",
		"cat <(rm x)", "env X=1 rm x", "sh -c 'rm x'", "cat <<EOF\n$(rm x)\nEOF", "cat <<'EOF'\nx\nEOF\nrm x",
		"alias ls=rm; ls x", "echo a \\\nrm x", "X=1 rm x", "echo a | rm x", "echo a || rm x",
		"{ rm x; }", "(rm x)", "echo >$(rm x)", "echo ${x:-$(rm x)}", "exec rm x", "command rm x",
		"eval 'rm x'", "xargs rm < f", "find . -exec rm {} ;", "nice rm x", "timeout 1 rm x",
		"echo a # \\\nrm x", "echo a\r\nrm x", "echo a\rrm x", "time rm x", "f() { rm x; }; f",
		"echo 'a\nb'; rm x", "[[ -e x ]] && rm x", "echo $'\\n'rm", "cat <<EOF\nx\nEOF rm x",
		"echo a &>/dev/null; rm x", "echo a >&2 rm x", "! rm x", "rm x &", "IFS=x; echo", ". ./script",
		"source ./s", "exec 3>f; rm x", "trap 'rm x' EXIT", "echo a\x00; rm x", "echo a\u2028rm x", "echo a\u0085rm x",
		"echo a\vrm x", "echo a\frm x", "echo a\trm x", "busybox rm x",
	}
	runsArgs := setOf("env", "sh", "exec", "command", "eval", "xargs", "find", "nice", "timeout", "time",
		"trap", "busybox", ".", "source")
	for _, l := range lines {
		cmds, p := ParseShell(l)
		if p != "" {
			continue // the preview shows the raw line and why
		}
		if strings.Contains(l, "rm") && !strings.Contains(fmt.Sprint(cmds), "rm") {
			t.Errorf("ParseShell(%q) = %q: the second program is neither listed nor refused", l, cmds)
		}
		for _, c := range cmds {
			if runsArgs[c[0]] && len(CodeRunners(l)) == 0 {
				t.Errorf("CodeRunners(%q) is empty, though %s runs code from its arguments", l, c[0])
			}
		}
	}
}

// dash expands aliases in `sh -c` and reads each line after the one before ran, so
// `alias ls=rm` on one line makes the next line's ls run rm; the preview lists ls.
func TestAliasHidingProgramIsListed(t *testing.T) {
	for _, l := range []string{"alias ls=rm\nls x", "alias ls=rm; ls x", "unalias ls\nls x", "echo a && alias x=rm"} {
		if cmds, p := ParseShell(l); p == "" {
			t.Errorf("ParseShell(%q) = %q, plain; want a problem naming the alias", l, cmds)
		}
	}
}

// Keys encoding/json folds onto one struct field (case, ſ for s, K for k) are refused.
func TestFoldedKeysRefused(t *testing.T) {
	for _, a := range []string{
		`{"path":"a","contents":"x","contentſ":"y"}`, `{"path":"a","Path":"b"}`,
		`{"path":"a","path":"b"}`, `{"url":"a","URL":"b"}`, `{"kind":"a","\u212aind":"b"}`,
	} {
		if err := checkArgs([]byte(a)); err == nil {
			t.Errorf("checkArgs(%s) = nil, want a refusal", a)
		}
	}
}
