package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
)

func TestComplete(t *testing.T) {
	newEnvDaemon(t)
	tests := []struct {
		name  string
		words []string
		want  string // candidates, space-separated
	}{
		{name: "commands", words: []string{"st"}, want: "status stop"},
		{name: "all_commands_include_completion", words: []string{"comp"}, want: "completion"},
		{name: "hidden_command_not_offered", words: []string{"__"}, want: ""},
		{name: "global_flags", words: []string{"--"}, want: "--json --socket --help"},
		{name: "after_global_flag", words: []string{"--json", "h"}, want: "history help"},
		{name: "agent_names", words: []string{"approve", ""}, want: "builder researcher scribe scribe/filer stale walker"},
		{name: "agent_prefix", words: []string{"show", "s"}, want: "scribe scribe/filer stale"},
		{name: "optional_agent", words: []string{"commands", "w"}, want: "walker"},
		{name: "no_second_agent", words: []string{"show", "scribe", ""}, want: ""},
		{name: "command_flags", words: []string{"run", "--"}, want: "--auto --follow --help --json --max-steps --max-time --max-tokens"},
		{name: "policy_actions", words: []string{"policy", "scribe", ""}, want: "add allow deny revoke rm test"},
		{name: "policy_rm_effect", words: []string{"policy", "scribe", "rm", "a"}, want: "allow"},
		{name: "help_topics", words: []string{"help", "po"}, want: "policy"},
		{name: "shells", words: []string{"completion", ""}, want: "bash fish zsh"},
		{name: "unknown_command", words: []string{"bogus", ""}, want: ""},
		{name: "no_words", words: nil, want: strings.Join(commandNames(t), " ")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, "", append([]string{"__complete"}, tt.words...)...)
			got := strings.Join(strings.Fields(r.stdout), " ")
			if r.code != 0 || got != tt.want {
				t.Errorf("__complete %q = %q (exit %d, stderr %q), want %q", tt.words, got, r.code, r.stderr, tt.want)
			}
		})
	}
	// With no daemon, agent names are simply not offered.
	t.Setenv(api.SocketEnv, filepath.Join(t.TempDir(), "none.sock"))
	if r := runCLI(t, "", "__complete", "show", ""); r.code != 0 || r.stdout != "" {
		t.Errorf("with no daemon: %v", r)
	}
}

// commandNames reads the command list from help's overview.
func commandNames(t *testing.T) []string {
	r := runCLI(t, "", "help")
	var names []string
	in := false
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(l, "Commands:") {
			in = true
			continue
		}
		if in {
			if !strings.HasPrefix(l, "  ") {
				if len(names) > 0 {
					break
				}
				continue
			}
			names = append(names, strings.Fields(l)[0])
		}
	}
	if len(names) < 10 {
		t.Fatalf("could not read the command list from help:\n%s", r.stdout)
	}
	return names
}

// The bash script, loaded into a real bash, completes through a built agentctl.
func TestBashCompletionScript(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	if testing.Short() {
		t.Skip("builds agentctl")
	}
	f := newFakeDaemon(t)
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/agentd/agentd/cmd/agentctl").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	script := runCLI(t, "", "completion", "bash").stdout
	prog := script + `
COMP_WORDS=(agentctl approve re); COMP_CWORD=2; _agentctl; echo "${COMPREPLY[*]}"
COMP_WORDS=(agentctl pol); COMP_CWORD=1; _agentctl; echo "${COMPREPLY[*]}"
`
	cmd := exec.Command(bash, "--norc", "-c", prog)
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), api.SocketEnv+"="+f.sock)
	out, err := cmd.CombinedOutput()
	if got, want := string(out), "researcher\npolicy\n"; err != nil || got != want {
		t.Errorf("bash completion printed %q (%v), want %q", got, err, want)
	}
}
