package permission

import (
	"fmt"
	"strings"
	"testing"
)

// TestRisksFlagEachProgramsRule: each program rule of risks, one case a rule (and a name of
// each alias group), flags the arguments it names, with the rule's reason, and nothing in a
// plain call of the same program.
func TestRisksFlagEachProgramsRule(t *testing.T) {
	never := "a wildcard never approves "
	cases := []struct {
		name, line string
		want       string // "ARG:REASON" per risk, joined by " | "; "" for none
	}{
		{"runner_is_risky_whatever_its_args", "env ls", "-1:" + never + "env, which runs other commands or code"},
		{"interpreter_code_flag", "python3 -c print(1)", "0:" + never + "python3 running code given on its command line | 1:" + never + "python3 running code given on its command line"},
		{"interpreter_script_is_plain", "python3 main.py", ""},
		{"git_plain", "git status -s", ""},
		{"git_unknown_subcommand", "git lg", "0:git lg is not one of git's builtin commands: an alias or a git-lg program could run anything"},
		{"go_generate", "go generate ./...", "0:" + never + "go generate, which runs the commands its comments name"},
		{"sed_write_command", "sed w/tmp/x f", "0:" + never + "a sed script that runs commands (e) or writes files (w)"},
		{"tar_long_option", "tar --to-command=sh -xf a.tar", "0:" + never + "tar running a program (--to-command, -I, --checkpoint-action, …) | 1:" + never + "tar running a program (--to-command, -I, --checkpoint-action, …)"},
		{"tar_old_style_letters", "tar xIf prog a.tar", "0:" + never + "tar running a program (--to-command, -I, --checkpoint-action, …) | 1:" + never + "tar running a program (--to-command, -I, --checkpoint-action, …)"},
		{"tar_plain", "tar -xzf a.tar", ""},
		{"find_exec", "find . -exec rm {} ;", "1:" + never + "find's -exec, -ok, -delete or -fprint actions | 2:" + never + "find's -exec, -ok, -delete or -fprint actions"},
		{"rsync_rsh", "rsync -e sh a b", "0:" + never + "rsync's -e or --rsync-path, which run a program | 1:" + never + "rsync's -e or --rsync-path, which run a program"},
		{"sftp_names_itself", "sftp -S prog host", "0:" + never + "sftp's -S, -o or -F, which run a program | 1:" + never + "sftp's -S, -o or -F, which run a program"},
		{"zip_tt", "zip -TT cmd a.zip", "0:" + never + "zip's -TT, which runs a program | 1:" + never + "zip's -TT, which runs a program"},
		{"gawk_system", "gawk {system(x)}", "0:" + never + "an awk program that runs commands, writes files or loads code"},
		{"awk_plain", "awk {print}", ""},
		{"more_plus_command", "more +!sh f", "0:" + never + "more's +command, which can run a shell | 1:" + never + "more's +command, which can run a shell"},
		{"man_pager", "man --pager=sh ls", "0:" + never + "man's pager or browser options | 1:" + never + "man's pager or browser options"},
		{"gmake_variable", "gmake CC=sh", "0:" + never + "make given variables, --eval or another makefile or folder, which can run any command"},
		{"make_plain", "make test", ""},
		{"sort_compress_program", "sort --compress-program=sh f", "0:" + never + "sort's --compress-program, which runs a program | 1:" + never + "sort's --compress-program, which runs a program"},
		{"pnpm_exec", "pnpm exec y", "0:" + never + "pnpm running a command or shell it is given (exec, --call, --script-shell) | 1:" + never + "pnpm running a command or shell it is given (exec, --call, --script-shell)"},
		{"patch_ed", "patch -e f", "0:" + never + "patch's ed scripts, which can run commands | 1:" + never + "patch's ed scripts, which can run commands"},
		{"clang_plugin", "clang -fplugin=x.so a.c", "0:" + never + "a compiler option that runs or loads another program (-wrapper, -fplugin, -B, -specs) | 1:" + never + "a compiler option that runs or loads another program (-wrapper, -fplugin, -B, -specs)"},
		{"cargo_config", "cargo -Zunstable build", "0:" + never + "cargo's --config, which can name a program to run | 1:" + never + "cargo's --config, which can name a program to run"},
		{"sqlite3_dot_command", "sqlite3 db .shell", "1:" + never + "sqlite3 dot-commands, which can run a shell or write files"},
		{"rg_pre", "rg --pre sh x", "0:" + never + "rg's --pre or --hostname-bin, which run a program | 1:" + never + "rg's --pre or --hostname-bin, which run a program"},
		{"fdfind_exec", "fdfind -x rm", "0:" + never + "fdfind's -x or -X, which run a command for the files found | 1:" + never + "fdfind's -x or -X, which run a command for the files found"},
		{"batcat_pager", "batcat --pager=sh f", "0:" + never + "batcat's --pager, which runs a program | 1:" + never + "batcat's --pager, which runs a program"},
		{"sdiff_diff_program", "sdiff --diff-program=sh a b", "0:" + never + "sdiff's --diff-program, which runs a program | 1:" + never + "sdiff's --diff-program, which runs a program"},
		{"curl_config_file", "curl -K f", "0:" + never + "curl reading its options from a file or loading an engine | 1:" + never + "curl reading its options from a file or loading an engine"},
		{"curl_plain", "curl -s https://example.com", ""},
		{"wget_execute", "wget -e x", "0:" + never + "wget's -e, --config or --use-askpass | 1:" + never + "wget's -e, --config or --use-askpass"},
		{"openssl_double_dash_engine", "openssl --engine x", "0:" + never + "openssl loading an engine, a provider or a config file, which load code | 1:" + never + "openssl loading an engine, a provider or a config file, which load code"},
		{"unknown_program_is_plain", "ls -la --exec", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := strings.Fields(c.line)
			var got []string
			for _, r := range risks(simpleCmd{prog: w[0], args: w[1:]}) {
				got = append(got, fmt.Sprintf("%d:%s", r.arg, r.reason))
			}
			if g := strings.Join(got, " | "); g != c.want {
				t.Fatalf("risks(%q)\n got %s\nwant %s", c.line, g, c.want)
			}
		})
	}
}

// TestOptionRulesNameEachProgramOnce: every program of an option rule finds its rule, and
// none is also a runner or interpreter (whose check comes first and would hide the rule).
func TestOptionRulesNameEachProgramOnce(t *testing.T) {
	for _, r := range optionRules {
		for _, p := range strings.Fields(r.progs) {
			if runners[p] || interpreters[p] {
				t.Errorf("%s has an option rule but is a runner or interpreter: the rule is never used", p)
			}
			if got := optionRuleOf[p]; got.reason != r.reason {
				t.Errorf("optionRuleOf[%q] is another rule's: %q", p, got.reason)
			}
		}
	}
}
