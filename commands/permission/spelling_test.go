package permission

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOptionSpellings: a risky option is risky however the program lets it be spelled —
// an abbreviated --long option (getopt_long and git take any unambiguous prefix), a
// one-letter option in a cluster or with its value attached, or a value in the next word
// that is not the script — while the everyday spellings still run unasked.
func TestOptionSpellings(t *testing.T) {
	tests := []struct {
		name, line string
		want       Effect
	}{
		{"git_fetch_upload_pack_abbreviated", "git fetch --upload-pa='touch /tmp/p' .", Ask},
		{"git_ls_remote_upload_pack_abbreviated", "git ls-remote --upload-pac=x .", Ask},
		{"git_clone_upload_pack_abbreviated", "git clone --upload=x a b", Ask},
		{"git_push_receive_pack_abbreviated", "git push --receive-pac=x origin", Ask},
		{"git_push_exec_abbreviated", "git push --ex=x origin", Ask},
		{"git_rebase_exec_abbreviated", "git rebase --exe=id main", Ask},
		{"git_rebase_exec_attached", "git rebase -xid main", Ask},
		{"git_rebase_exec_clustered", "git rebase -ix id main", Ask},
		{"git_grep_pager_attached", "git grep -Ovim foo", Ask},
		{"git_grep_pager_abbreviated", "git grep --open-files-in-p foo", Ask},
		{"git_grep_pager_abbreviated_value", "git grep --open-files=vim foo", Ask},
		{"git_log_output_abbreviated", "git log --outp=/tmp/x", Ask},
		{"git_diff_output_abbreviated", "git diff --outpu=/tmp/x", Ask},
		{"git_diff_ext_diff_abbreviated", "git diff --ext-dif", Ask},
		{"git_clone_config_attached", "git clone -ccore.sshCommand=x a b", Ask},
		{"git_clone_config_abbreviated", "git clone --conf core.x=y a b", Ask},
		{"git_clone_template_abbreviated", "git clone --templ=/tmp/t a b", Ask},
		{"git_clone_separate_git_dir_abbreviated", "git clone --separate=/tmp/x a b", Ask},
		{"git_clone_reference_abbreviated", "git clone --refere=x a b", Ask},
		{"git_clone_reference_if_able", "git clone --reference-if-able=/x a b", Ask},
		{"git_clone_recursive", "git clone --recursive a b", Ask},
		{"git_clone_upload_attached", "git clone -uid a b", Ask},
		{"git_fetch_upload_attached", "git fetch -uid .", Ask},
		{"git_archive_remote_abbreviated", "git archive --rem=/tmp/r HEAD", Ask},
		{"sed_expression_abbreviated", "sed --expr='1e id' 1p", Ask},
		{"sed_expression_attached", "sed -e1eid 1p", Ask},
		{"sed_expression_attached_cluster", "sed -ne'1e id' 1p", Ask},
		{"sed_line_length_value", "sed -l 5 '1e id' f", Ask},
		{"sed_line_length_long_value", "sed --line-len 5 '1e id' f", Ask},
		{"sed_file_abbreviated", "sed --fil=s.sed f", Ask},
		{"tar_to_command_abbreviated", "tar -xf a.tar --to-comm=sh", Ask},
		{"tar_compress_program_abbreviated", "tar -xf a.tar --use-comp=sh", Ask},
		{"tar_checkpoint_action_abbreviated", "tar -cf - . --checkpoint-act=exec=id", Ask},
		{"tar_info_script_abbreviated", "tar --info-scr=x -cf a docs", Ask},
		{"tar_rsh_command_abbreviated", "tar --rsh-comm=x -xf h:a", Ask},
		{"sort_compress_program_abbreviated", "sort --compress=sh -S 1 big", Ask},
		{"rsync_rsh_abbreviated", "rsync --rs=x a b:", Ask},
		{"awk_exec_abbreviated", "awk --exe x", Ask},
		{"awk_load_directive", `awk '@load "x"'`, Ask},
		{"npm_script_shell_abbreviated", "npm test --script-sh=x", Ask},
		{"go_vettool", "go vet -vettool=/tmp/x ./...", Ask},
		{"go_vettool_two_dashes_next_word", "go vet --vettool /tmp/x ./...", Ask},
		{"go_test_vettool", "go test -vettool=x ./...", Ask},
		{"go_ldflags_extld", "go build -ldflags='-linkmode=external -extld=./evil' .", Ask},
		{"go_ldflags_extldflags_next_word", "go build -ldflags '-extldflags=-wrapper=./x' .", Ask},
		{"awk_include_directive", `awk '@include "x.awk"'`, Ask},
		{"rg_preprocessor", "rg --pre ./x foo", Ask},
		{"rg_preprocessor_abbreviated", "rg --pr=./x foo", Ask},
		{"rg_hostname_bin", "rg --hostname-bin=./x foo", Ask},
		{"fd_exec", "fd -e go -x sh -c id", Ask},
		{"fd_exec_batch_long", "fd --exec-batch=wc .", Ask},
		{"ack_pager", "ack --pager=./x foo", Ask},
		{"bat_pager", "bat --pager './x' f", Ask},
		{"diff3_diff_program", "diff3 --diff-program=./x a b c", Ask},
		{"sdiff_diff_program_abbreviated", "sdiff --diff-prog=./x a b", Ask},
		{"rg_plain", "rg -n TODO commands", Allow},
		{"fd_plain", "fd -e go handler", Allow},
		{"bat_plain", "bat -n main.go", Allow},

		// The everyday spellings still run unasked.
		{"git_commit_all_message", "git commit -am 'fix: typo'", Allow},
		{"git_ls_files_others", "git ls-files -o --exclude-standard", Allow},
		{"git_status_short_branch", "git status -sb", Allow},
		{"git_push_force_with_lease", "git push origin HEAD --force-with-lease", Allow},
		{"git_pull_rebase", "git pull --rebase origin main", Allow},
		{"git_fetch_all_prune", "git fetch --all --prune", Allow},
		{"git_log_pretty", "git log --pretty=format:%h", Allow},
		{"git_remote_verbose", "git remote -v", Allow},
		{"sed_quiet_expression", "sed -ne 's/a/b/p' f", Allow},
		{"sed_in_place", "sed -i 's/a/b/' f", Allow},
		{"sed_in_place_suffix_expression", "sed -i.bak -e 's/a/b/' f", Allow},
		{"go_build_ldflags_strip", "go build -ldflags='-s -w' -o bin/x .", Allow},
		{"go_test_verbose_run", "go test -v -run TestX ./...", Allow},
	}
	more := rules("agent", []string{"execute_shell(rg *)", "execute_shell(fd *)", "execute_shell(ack *)",
		"execute_shell(bat *)", "execute_shell(diff3 *)", "execute_shell(sdiff *)"}, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := Explain(shellSpec, shellArgs(tt.line), Options{AutoRead: true}, shellRules, more)
			if e.Verdict.Effect != tt.want {
				t.Errorf("%q: %+v, want %s", tt.line, e.Verdict, tt.want)
			}
		})
	}
}

// TestDenyComputedPrograms: a deny rule also refuses a program the shell computes when it
// runs, an alias and option values of a runner; a shell reading code from its standard
// input asks, as no deny rule can read it.
func TestDenyComputedPrograms(t *testing.T) {
	rs := rules("agent", []string{"execute_shell(**)"}, []string{"execute_shell(rm *)", "execute_shell(git push *)"})
	tests := []struct {
		name, line string
		want       Effect
	}{
		{"which_substitution", "$(which rm) -rf x", Deny},
		{"default_value_expansion", `"${x:-rm}" x`, Deny},
		{"variable_program", "x=rm; $x -rf y", Deny},
		{"ifs_split_variable", "IFS=,; x=rm,x; $x", Deny},
		{"backquoted_program", "`echo rm` x", Deny},
		{"printf_substitution", `"$(printf rm)" x`, Deny},
		{"dollar_single_quotes", "$'rm' x", Deny},
		{"ifs_joined_word", "rm${IFS}x", Deny},
		{"alias_next_line", "alias r=rm\nr x", Deny},
		{"alias_same_line", "alias r=rm; r x", Deny},
		{"env_split_string_long", "env --split-string='rm x'", Deny},
		{"env_split_string_attached", "env -S'rm x'", Deny},
		{"pipe_into_sh", "echo rm x | sh", Ask},
		{"here_string_into_bash", "bash <<< 'rm x'", Ask},
		{"sh_reading_stdin_flag", "sh -s < x", Ask},
		{"computed_program_push", "$g push origin main", Deny},

		{"computed_program_any_args_for_rm", "$g status", Deny}, // rm * takes any arguments

		// A script operand is the script's business, and plain lines still run.
		{"sh_script_operand", "sh build.sh", Allow},
		{"git_status", "git status", Allow},
		{"echo_into_file", "echo hi > out.txt", Allow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := Explain(shellSpec, shellArgs(tt.line), Options{AutoRead: true}, rs)
			if e.Verdict.Effect != tt.want {
				t.Errorf("%q: %+v, want %s", tt.line, e.Verdict, tt.want)
			}
		})
	}

	onlyPush := rules("agent", []string{"execute_shell(**)"}, []string{"execute_shell(git push *)"})
	e := Explain(shellSpec, shellArgs("$g status"), Options{AutoRead: true}, onlyPush)
	if e.Verdict.Effect != Allow {
		t.Errorf("$g status under a deny of git push only: %+v, want allow (its arguments match no deny)", e.Verdict)
	}
}

// TestShellReadsLikeDash: where the parser and /bin/sh (dash) read a line differently, the
// line is not plain and deny rules see what dash runs. A differential run against dash
// found these.
func TestShellReadsLikeDash(t *testing.T) {
	tests := []struct {
		name, line string
		want       Effect
		rules      Rules
	}{
		{"comment_backslash_hides_next_line", "git status #\\\ntouch /tmp/p", Ask, shellRules},
		{"comment_text_backslash_hides_next_line", "git status # see \\\nrm -rf docs", Deny, shellRules},
		{"comment_backslash_evades_deny", "ls #\\\nrm -rf x", Deny, rules("agent", []string{"execute_shell(**)"}, []string{"execute_shell(rm *)"})},
		{"comment_backslash_mid_comment_is_plain", "git status # a\\b\ngit log -n 1", Allow, shellRules},
		{"line_continuation_still_plain", "git log \\\n  --oneline", Allow, shellRules},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := Explain(shellSpec, shellArgs(tt.line), Options{AutoRead: true}, tt.rules)
			if e.Verdict.Effect != tt.want {
				t.Errorf("%q: %+v, want %s", tt.line, e.Verdict, tt.want)
			}
		})
	}

	words := []struct{ name, line, want string }{
		{"trailing_backslash_kept", `cat x\`, `x\`},
		{"continuation_at_end_dropped", "cat x\\\n", "x"},
	}
	for _, tt := range words {
		t.Run(tt.name, func(t *testing.T) {
			sl := parseShell(tt.line)
			if sl.problem != "" || len(sl.cmds) != 1 || len(sl.cmds[0].args) != 1 || sl.cmds[0].args[0] != tt.want {
				t.Errorf("%q: %+v, want cat with the one argument %q, as dash reads it", tt.line, sl, tt.want)
			}
		})
	}
}

// TestDenyCodeInOptions: a deny rule also refuses its program run by a wrapper (prlimit,
// setarch, fakeroot, ...) or named in the code of an option that runs commands (rsync -e,
// tar --to-command, git --exec or a ! alias, awk system(), sed e, vim -c '!…', less +!…).
func TestDenyCodeInOptions(t *testing.T) {
	rs := rules("agent", []string{"execute_shell(**)"}, []string{"execute_shell(rm *)"})
	tests := []struct {
		name, line string
		want       Effect
	}{
		{"prlimit", "prlimit --nofile=10 rm x", Deny},
		{"setarch", "setarch x86_64 rm x", Deny},
		{"fakeroot", "fakeroot rm x", Deny},
		{"faketime", "faketime '1 day ago' rm x", Deny},
		{"numactl", "numactl -C 0 rm x", Deny},
		{"ip_netns_exec", "ip netns exec n rm x", Deny},
		{"gosu", "gosu nobody rm x", Deny},
		{"git_bang_alias", "git -c alias.x='!rm -rf y' x", Deny},
		{"git_rebase_exec", "git rebase --exec 'rm x' main", Deny},
		{"rsync_e", "rsync -e 'rm x' a b:", Deny},
		{"tar_to_command", "tar --to-command='rm x' -xf a", Deny},
		{"awk_system", `awk 'BEGIN{system("rm x")}'`, Deny},
		{"sed_e_command", "sed -n '1e rm x' f", Deny},
		{"less_bang", "less +'!rm x' f", Deny},
		{"vim_c_bang", "vim -c '!rm x'", Deny},

		// Words that only mention the program still run.
		{"commit_message_mentions_rm", "git commit -m 'rm old files'", Allow},
		{"echo_mentions_rm", "echo rm x", Allow},
		{"grep_for_rm", "grep -rn 'rm -rf' scripts", Allow},
		{"sort_compress_program_other", "sort --compress-program=gzip big.txt", Allow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := Explain(shellSpec, shellArgs(tt.line), Options{AutoRead: true}, rs)
			if e.Verdict.Effect != tt.want {
				t.Errorf("%q: %+v, want %s", tt.line, e.Verdict, tt.want)
			}
		})
	}
}

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
