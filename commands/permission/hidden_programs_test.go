package permission

import (
	"strings"
	"testing"
)

// Lines whose listed programs hide another program must either fail ParseShell
// or name a code runner.
func TestHiddenProgramsFailOrNameCodeRunner(t *testing.T) {
	for _, line := range []string{
		"command alias ls=rm\nls -rf x",
		"command -- alias ls=rm\nls x",
		"builtin alias ls=rm\nls x",
		"\\alias ls=rm\nls x",
		"'alias' ls=rm\nls x",
		"/usr/bin/alias ls=rm\nls x",
		"command unalias ls\nls x",
		"trap 'rm -rf x' EXIT",
		"eval rm x",
		"env -S 'rm x'",
		"find . -exec rm {} +",
		"command eval rm x",
		"exec rm x",
		"xargs rm < list",
		". ./script",
		"command . ./script",
		"git -c core.pager=rm log",
		"ls x\r\nrm y",
		"ls x\x1b[2Krm y",
		"cat <<EOF\nEOF\nrm x",
	} {
		cmds, problem := ParseShell(line)
		if strings.Contains(line, "alias ") && problem == "" {
			t.Errorf("%q: an alias through command/builtin is not refused: %q", line, cmds)
		}
		runners := CodeRunners(line)
		if problem == "" && len(runners) == 0 {
			t.Errorf("%q: plain, no code runner: %q", line, cmds)
		} else {
			t.Logf("%q: problem=%q runners=%v cmds=%q", line, problem, runners, cmds)
		}
	}
}
