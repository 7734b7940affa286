package permission

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDashDifferential runs random lines the parser calls plain through /bin/sh's usual
// reader, dash, with programs that print their argv, and compares with the parser's
// commands and words. A disagreement is a line a rule would judge as something else
// than what runs. Lines with || (skips after a success), redirections and pipes (they
// move the output) are parsed but not compared.
func TestDashDifferential(t *testing.T) {
	dash, err := exec.LookPath("dash")
	if err != nil {
		t.Skip("dash is not installed: the parser is not compared with it")
	}
	bin := t.TempDir()
	printer := "#!" + dash + "\nfor a in \"$0\" \"$@\"; do printf '[%s]' \"$a\"; done; printf '\\n'\n"
	for _, name := range []string{"a", "b", "c"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(printer), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	alphabet := []string{"a", "b", "c", " ", " ", "\t", "x", "'", "\"", "\\", "#", " #", ";", "&&", "||",
		"\n", "\r", "{", "}", "!", "=", "~", "-", "/", ".", "\\\n", "é", "%", "^", ":", ",", "@", "+",
		"[", "]", "$", "`", "(", ")", "*", "?", "&", `\"`, `'\'`, `"\\"`, `"#"`, "\v", "\f", "a=b ",
		"${x}", "\u00a0", "\u2028", "<", ">/dev/null", "\"\\\n\"", "'\n'", "|"}
	rng := rand.New(rand.NewPCG(8, 11))
	compared := 0
	for range 4000 {
		var b strings.Builder
		b.WriteString([]string{"a ", "b ", "c "}[rng.IntN(3)])
		for range rng.IntN(12) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		line := b.String()
		sl := parseShell(line)
		if sl.problem != "" || strings.Contains(line, "||") || strings.ContainsAny(line, "<>|") {
			continue
		}
		var want strings.Builder
		known := true
		for _, c := range sl.cmds {
			known = known && (c.raw == "a" || c.raw == "b" || c.raw == "c")
			want.WriteString("[" + filepath.Join(bin, c.raw) + "]")
			for _, a := range c.args {
				want.WriteString("[" + a + "]")
			}
			want.WriteString("\n")
		}
		if !known {
			continue // a program that does not exist: dash would only say so
		}
		cmd := exec.Command(dash, "-c", line)
		cmd.Env = []string{"PATH=" + bin, "HOME=~"} // ~ stays ~, as the parser keeps it
		cmd.Dir = bin
		out, _ := cmd.Output()
		compared++
		if string(out) != want.String() {
			t.Errorf("%q: the parser reads\n%q\nand dash runs\n%q", line, want.String(), out)
		}
	}
	if compared < 500 {
		t.Fatalf("only %d lines compared: the generator makes too few plain lines", compared)
	}
}
