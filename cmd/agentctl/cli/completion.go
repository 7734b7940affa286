package cli

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
)

var completionCmd = &command{
	name:  "completion",
	args:  "bash|zsh|fish",
	short: "print a shell completion script",
	long: `Completion prints a script that makes your shell complete agentctl's commands, flags
and agent names (asked from the running daemon as you type). Load it once per shell:

  bash:  echo 'source <(agentctl completion bash)' >> ~/.bashrc
  zsh:   echo 'source <(agentctl completion zsh)' >> ~/.zshrc
  fish:  agentctl completion fish > ~/.config/fish/completions/agentctl.fish

The scripts call "agentctl __complete WORDS..." for the candidates, so they stay right
as agentctl changes.`,
	run: verb(helpVerbs.runCompletion),
}

const bashCompletion = `# bash completion for agentctl; load with: source <(agentctl completion bash)
_agentctl() {
	local IFS=$'\n'
	COMPREPLY=($(agentctl __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _agentctl agentctl
`

const zshCompletion = `#compdef agentctl
# zsh completion for agentctl; load with: source <(agentctl completion zsh)
_agentctl() {
	local -a candidates
	candidates=("${(@f)$(agentctl __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
	compadd -a candidates
}
if (( $+functions[compdef] )); then
	compdef _agentctl agentctl
else
	autoload -Uz compinit && compinit && compdef _agentctl agentctl
fi
`

const fishCompletion = `# fish completion for agentctl; save as ~/.config/fish/completions/agentctl.fish
function __agentctl_complete
	set -l words (commandline -opc) (commandline -ct)
	agentctl __complete $words[2..-1] 2>/dev/null
end
complete -c agentctl -f -a '(__agentctl_complete)'
`

var completionScripts = map[string]string{"bash": bashCompletion, "zsh": zshCompletion, "fish": fishCompletion}

func (a helpVerbs) runCompletion(_ context.Context, args []string) error {
	pos, err := a.parse(a.newFlagSet(), args, -1)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want one shell: bash, zsh or fish")
	}
	script, ok := completionScripts[pos[0]]
	if !ok {
		return usagef("unknown shell %q: want bash, zsh or fish", pos[0])
	}
	_, err = fmt.Fprint(a.stdout, script)
	return err
}

var flagInArgs = regexp.MustCompile(`--[a-z][a-z-]*`)

// runComplete is the hidden __complete: given the words typed after "agentctl", the
// last one possibly partial, it prints the candidates for that last word, one per
// line. It never fails loudly: a shell shows nothing instead.
func (a helpVerbs) runComplete(ctx context.Context, args []string) error {
	if len(args) == 0 {
		args = []string{""}
	}
	cur := args[len(args)-1]
	before := args[:len(args)-1]
	// Global flags may come first; the socket flag's value is a path the shell completes.
	var words []string
	for i := 0; i < len(before); i++ {
		w := before[i]
		if len(words) == 0 && strings.HasPrefix(w, "-") {
			if (w == "--socket" || w == "-socket") && i+1 < len(before) {
				a.socket = before[i+1]
				i++
			} else if v, ok := strings.CutPrefix(w, "--socket="); ok {
				a.socket = v
			}
			continue
		}
		words = append(words, w)
	}
	var cands []string
	switch {
	case len(words) == 0 && strings.HasPrefix(cur, "-"):
		cands = []string{"--json", "--socket", "--help"}
	case len(words) == 0:
		for _, c := range commands {
			cands = append(cands, c.name)
		}
	default:
		cands = a.completeArgs(ctx, words[0], words[1:], cur)
	}
	for _, c := range cands {
		if strings.HasPrefix(c, cur) {
			fmt.Fprintln(a.stdout, c)
		}
	}
	return nil
}

// completeArgs returns candidates for the word after cmd's words typed so far.
func (a helpVerbs) completeArgs(ctx context.Context, name string, typed []string, cur string) []string {
	cmd := lookup(name)
	if cmd == nil || cmd.name == "__complete" {
		return nil
	}
	if strings.HasPrefix(cur, "-") {
		return slices.Compact(slices.Sorted(slices.Values(append(flagInArgs.FindAllString(cmd.args, -1), "--json", "--help"))))
	}
	var pos []string
	for _, w := range typed {
		if !strings.HasPrefix(w, "-") {
			pos = append(pos, w)
		}
	}
	switch {
	case cmd.name == "help" || cmd.name == "completion":
		if len(pos) > 0 {
			return nil
		}
		if cmd.name == "completion" {
			return []string{"bash", "fish", "zsh"}
		}
		var names []string
		for _, c := range commands {
			names = append(names, c.name)
		}
		return names
	case cmd.name == "policy" && len(pos) == 1:
		return []string{"add", "allow", "deny", "revoke", "rm", "test"}
	case cmd.name == "policy" && len(pos) == 2 && pos[1] == "rm":
		return []string{"allow", "deny"}
	case len(pos) == 0 && (strings.HasPrefix(cmd.args, "AGENT") || strings.HasPrefix(cmd.args, "[AGENT]")):
		return a.agentNames(ctx)
	}
	return nil
}

// agentNames asks the daemon for the agents' names, briefly: a shell must not hang.
func (a helpVerbs) agentNames(ctx context.Context) []string {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var names []string
	err := a.api().EachAgent(ctx, api.AgentQuery{Brief: true}, func(ag api.Agent) error {
		names = append(names, ag.Name)
		return nil
	})
	if err != nil {
		return nil
	}
	slices.Sort(names)
	return names
}
