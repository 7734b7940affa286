package permission

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/agentd/agentd/commands"
)

// shellRules is a realistic layer for execute_shell: wildcard rules for everyday programs,
// and the runners and risky forms a wildcard must never reach through them.
var shellRules = rules("agent", []string{
	"execute_shell(git status*)", "execute_shell(git *)", "execute_shell(find *)",
	"execute_shell(ls *)", "execute_shell(cat *)", "execute_shell(head *)", "execute_shell(tail *)",
	"execute_shell(go test *)", "execute_shell(go build *)", "execute_shell(go vet *)", "execute_shell(go *)",
	"execute_shell(make *)", "execute_shell(grep *)", "execute_shell(wc *)", "execute_shell(echo *)",
	"execute_shell(sed *)", "execute_shell(awk *)", "execute_shell(tar *)", "execute_shell(rsync *)",
	"execute_shell(python3 *)", "execute_shell(env *)", "execute_shell(xargs *)", "execute_shell(sh *)",
	"execute_shell(sort *)", "execute_shell(mkdir *)", "execute_shell(touch *)", "execute_shell(npm test*)",
	"execute_shell(less *)", "execute_shell(timeout *)", "execute_shell(nice *)", "execute_shell(scp *)",
	"execute_shell(node *)",
	"execute_shell(git -c core.pager=cat log)", // exact: approves exactly that line
	"execute_shell(echo $HOME)",                // exact, not plain: still exactly that line
	"execute_shell(./build.sh *)",              // a workspace script, named by its path
}, []string{"execute_shell(rm *)", "execute_shell(curl *)", "execute_shell(git clean*)"})

// fileRules is a realistic layer for the file commands.
var fileRules = rules("agent", []string{
	"read_file(*)", "open_file(*)", "list_folder(*)", "open_folder(*)", "search_files(*)",
	"write_file(notes/*)", "append_to_file(notes/*)", "delete_file(tmp/*)",
	"execute_python_file(scripts/build.py *)", "execute_python_file(tools/*)",
}, []string{"read_file(secrets/*)", "write_file(.git/*)"})

// Specs shaped like the remaining real file commands.
var (
	appendSpec     = pathSpec("append_to_file", commands.ClassWriteWorkspace)
	deleteSpec     = pathSpec("delete_file", commands.ClassWriteWorkspace)
	openFileSpec   = pathSpec("open_file", commands.ClassRead)
	listFolderSpec = pathSpec("list_folder", commands.ClassRead)
	openFolderSpec = pathSpec("open_folder", commands.ClassRead)
	searchSpec     = commands.Spec{Name: "search_files", Class: commands.ClassRead, Subject: "pattern",
		Params: commands.Object(commands.Prop{Name: "pattern", Schema: commands.String("glob", 256)},
			commands.Prop{Name: "text", Schema: commands.String("text", 200)})}
	pythonArgsSpec = commands.Spec{Name: "execute_python_file", Class: commands.ClassExecute, Subject: "path",
		Params: commands.Object(commands.Prop{Name: "path", Schema: commands.String("script", 256)},
			commands.Prop{Name: "args", Schema: &commands.Schema{Type: "array"}})}
)

func pathSpec(name string, c commands.Class) commands.Spec {
	return commands.Spec{Name: name, Class: c, Subject: "path",
		Params: commands.Object(commands.Prop{Name: "path", Schema: commands.String("path", 256)})}
}

// TestShellCorpus is the corpus of command lines under shellRules: the everyday commands
// that must still run unasked, and the bypass attempts that must ask or be denied.
func TestShellCorpus(t *testing.T) {
	tests := []struct {
		name, line string
		want       Effect
		reason     string // a part of the verdict's reason, when it matters
	}{
		// Everyday commands stay auto-approved.
		{"git_status", "git status", Allow, "git status*"},
		{"git_status_short", "git status --short", Allow, ""},
		{"git_log_oneline", "git log --oneline -n 5", Allow, ""},
		{"git_log_range", "git log main..dev", Allow, ""},
		{"git_diff_path", "git diff HEAD~1 -- README.md", Allow, ""},
		{"git_show_blob", "git show HEAD:README.md", Allow, ""},
		{"git_branch", "git branch -a", Allow, ""},
		{"git_add", "git add notes/a.md", Allow, ""},
		{"git_commit_quoted", "git commit -m 'fix: a typo; and more'", Allow, ""},
		{"git_no_pager", "git --no-pager log -n 3", Allow, ""},
		{"git_push_set_upstream", "git push -u origin main", Allow, ""},
		{"git_status_then_log", "git status && git log -n 1", Allow, ""},
		{"git_status_semicolon", "git status;", Allow, ""},
		{"git_status_comment", "git status # what changed", Allow, ""},
		{"git_path_resolved", "/usr/bin/git status", Allow, ""},
		{"git_quoted_program", `"git" status`, Allow, ""},
		{"git_backslash_program", `\git status`, Allow, ""},
		{"ls_la_docs", "ls -la docs", Allow, ""},
		{"ls_alone", "ls", Allow, ""},
		{"ls_stderr_null", "ls docs 2>/dev/null", Allow, ""},
		{"ls_stderr_to_stdout", "ls docs 2>&1", Allow, ""},
		{"cat_pipe_head", "cat README.md | head -20", Allow, ""},
		{"cat_two_files_sorted", "cat a.txt b.txt | sort -u", Allow, ""},
		{"go_test_all", "go test ./...", Allow, ""},
		{"go_test_run", "go test -run 'TestX$' ./commands/...", Allow, ""},
		{"go_build", "go build -o build/agentd ./cmd/agentd", Allow, ""},
		{"go_vet", "go vet ./...", Allow, ""},
		{"mkdir_and_build", "mkdir -p build && go build -o build/x ./cmd/x", Allow, ""},
		{"make_build", "make build", Allow, ""},
		{"make_alone", "make", Allow, ""},
		{"make_jobs", "make -j4 test", Allow, ""},
		{"grep_recursive", "grep -rn TODO commands", Allow, ""},
		{"grep_quoted_pattern", "grep -c 'func (' main.go", Allow, ""},
		{"wc_lines", "wc -l README.md", Allow, ""},
		{"find_by_name", "find . -name '*.go' -type f", Allow, ""},
		{"find_newer", "find docs -newer README.md", Allow, ""},
		{"sed_print_range", "sed -n 1,20p README.md", Allow, ""},
		{"sed_substitute", "sed 's/hello/world/g' notes/a.txt", Allow, ""},
		{"sed_expression", "sed -e 's/a/b/' -e '/^#/d' f.txt", Allow, ""},
		{"awk_print", "awk '{print $1}' f.txt", Allow, ""},
		{"tar_create", "tar -czf out.tgz docs", Allow, ""},
		{"tar_extract", "tar -xf a.tar", Allow, ""},
		{"echo_redirect_file", "echo hello > out.txt", Allow, ""},
		{"echo_append_notes", "echo hi >> notes/log.txt", Allow, ""},
		{"echo_dot_slash_redirect", "echo hi > ./notes/x", Allow, ""},
		{"python_script", "python3 scripts/build.py --fast", Allow, ""},
		{"python_module", "python3 -m pytest -q", Allow, ""},
		{"npm_test", "npm test", Allow, ""},
		{"touch_file", "touch notes/new.md", Allow, ""},
		{"workspace_script", "./build.sh release", Allow, ""},
		{"workspace_script_dot_slash_twice", ".//build.sh release", Allow, ""},
		{"exact_risky_line", "git -c core.pager=cat log", Allow, "git -c core.pager=cat log"},
		{"exact_not_plain_line", "echo $HOME", Allow, ""},
		{"newline_separated", "git status\ngit log -n 1", Allow, ""},
		{"non_ascii_argument", "grep café notes.txt", Allow, ""},
		{"scp_plain", "scp a.txt b.txt", Allow, ""},

		// git: options and subcommands that run other programs.
		{"git_c_pager", "git -c core.pager=sh status", Ask, "git's global option -c"},
		{"git_c_alias", "git -c alias.x='!touch /tmp/p' x", Ask, "-c"},
		{"git_c_joined", "git -ccore.pager=sh status", Ask, ""},
		{"git_upload_pack_global", "git --upload-pack=touch ls-remote x", Ask, ""},
		{"git_upload_pack", "git ls-remote --upload-pack='touch /tmp/p' origin", Ask, "--upload-pack"},
		{"git_fetch_u", "git fetch -u 'sh -c id' origin", Ask, "-u"},
		{"git_clone_u", "git clone -u x https://example.com/r.git", Ask, ""},
		{"git_receive_pack", "git push --receive-pack=x origin", Ask, ""},
		{"git_C_elsewhere", "git -C /elsewhere status", Ask, "-C"},
		{"git_git_dir", "git --git-dir=/tmp/g log", Ask, ""},
		{"git_work_tree", "git --work-tree=/ status", Ask, ""},
		{"git_exec_path", "git --exec-path=/tmp status", Ask, ""},
		{"git_config_env", "git --config-env=core.pager=X status", Ask, ""},
		{"git_namespace", "git --namespace=x log", Ask, ""},
		{"git_paginate", "git -p log", Ask, ""},
		{"git_status_suffix", "git status-x", Ask, "not one of git's builtin"},
		{"git_alias", "git x", Ask, "alias"},
		{"git_config", "git config core.pager 'sh -c id'", Ask, ""},
		{"git_config_global", "git config --global alias.st status", Ask, ""},
		{"git_clone_ext", "git clone 'ext::sh -c touch% /tmp/p' d", Ask, "remote-helper"},
		{"git_remote_add_ext", "git remote add x 'ext::sh -c id'", Ask, ""},
		{"git_clone_template", "git clone --template=/tmp/t https://example.com/r.git", Ask, ""},
		{"git_clone_config", "git clone --config core.hooksPath=/tmp https://example.com/r.git", Ask, ""},
		{"git_rebase_exec", "git rebase -x 'touch /tmp/p' main", Ask, ""},
		{"git_rebase_exec_long", "git rebase --exec=id main", Ask, ""},
		{"git_diff_ext", "git diff --ext-diff", Ask, ""},
		{"git_cherry_pick_strategy", "git cherry-pick --strategy=foo other", Ask, "--strategy"},
		{"git_revert_strategy_abbreviated", "git revert --strat foo HEAD", Ask, "--strat"},
		{"git_rebase_strategy_short", "git rebase -s foo main", Ask, "-s"},
		{"git_merge_strategy_joined", "git merge -sfoo other", Ask, ""},
		{"git_pull_strategy_option", "git pull -X ours", Ask, "-X"},
		{"git_merge_strategy_option_long", "git merge --strategy-option=ours other", Ask, ""},
		{"git_rebase_continue", "git rebase --continue", Ask, "--continue"},
		{"git_rebase_skip", "git rebase --skip", Ask, ""},
		{"git_rebase_edit_todo", "git rebase --edit-todo", Ask, ""},
		{"git_cherry_pick_continue", "git cherry-pick --continue", Ask, ""},
		{"git_revert_continue", "git revert --continue", Ask, ""},
		{"git_am_continue", "git am --continue", Ask, ""},
		{"git_am_skip", "git am --skip", Ask, ""},
		{"git_cherry_pick_exec", "git cherry-pick -x other", Ask, ""},
		{"git_grep_pager", "git grep -O foo", Ask, ""},
		{"git_grep_pager_long", "git grep --open-files-in-pager=sh foo", Ask, ""},
		{"git_log_output", "git log --output=/tmp/x", Ask, ""},
		{"git_submodule_foreach", "git submodule foreach 'touch /tmp/p'", Ask, ""},
		{"git_bisect_run", "git bisect run ./x", Ask, ""},
		{"git_filter_branch", "git filter-branch --tree-filter id HEAD", Ask, ""},
		{"git_difftool", "git difftool -x sh", Ask, ""},
		{"git_archive_exec", "git archive --remote=x --exec=y HEAD", Ask, ""},
		{"git_hook_run", "git hook run pre-commit", Ask, ""},
		{"git_maintenance", "git maintenance start", Ask, ""},

		// find: actions that run, delete or write.
		{"find_exec", "find . -exec cat {} +", Ask, "find's -exec"},
		{"find_braces_not_expansion", "echo stash@{0}", Allow, ""},
		{"find_exec_rm", "find . -exec rm {} ';'", Deny, "rm *"},
		{"find_exec_bin_rm", `find . -exec /bin/rm {} \;`, Deny, ""},
		{"find_execdir", "find . -execdir sh -c id ';'", Ask, ""},
		{"find_delete", "find . -delete", Ask, ""},
		{"find_ok", "find . -ok cat {} ';'", Ask, ""},
		{"find_fprint", "find . -fprint /tmp/x", Ask, ""},
		{"find_fls", "find . -fls x", Ask, ""},

		// deny rm: every spelling of the program, every way of running it.
		{"rm_plain", "rm -rf x", Deny, "rm *"},
		{"rm_alone", "rm", Deny, ""},
		{"rm_tab", "rm\t-rf x", Deny, ""},
		{"rm_bin_path", "/bin/rm -rf x", Deny, ""},
		{"rm_usr_bin_dotdot", "/usr/bin/../bin/rm x", Deny, ""},
		{"rm_double_slash", "//bin//rm x", Deny, ""},
		{"rm_backslash", `\rm -rf x`, Deny, ""},
		{"rm_empty_quotes", "r''m -rf x", Deny, ""},
		{"rm_double_quoted", `"rm" -rf x`, Deny, ""},
		{"rm_split_quotes", `r"m" x`, Deny, ""},
		{"rm_env_prefix", "X=1 rm -rf x", Deny, ""},
		{"rm_env", "env rm -rf x", Deny, ""},
		{"rm_env_assign", "env A=1 rm x", Deny, ""},
		{"rm_sudo", "sudo rm -rf /", Deny, ""},
		{"rm_xargs", "xargs rm < list.txt", Deny, ""},
		{"rm_sh_c", "sh -c 'rm -rf x'", Deny, ""},
		{"rm_bash_c", `bash -c "rm -rf x"`, Deny, ""},
		{"rm_sh_c_nested", `sh -c "sh -c 'rm x'"`, Deny, ""},
		{"rm_substitution", "echo $(rm -rf x)", Deny, ""},
		{"rm_backticks", "echo `rm -rf x`", Deny, ""},
		{"rm_eval", "eval 'rm -rf x'", Deny, ""},
		{"rm_after_semicolon", "ls; rm -rf x", Deny, ""},
		{"rm_after_and", "ls && rm x", Deny, ""},
		{"rm_in_pipe", "ls | rm x", Deny, ""},
		{"rm_background", "nohup rm x &", Deny, ""},
		{"rm_timeout", "timeout 5 rm x", Deny, ""},
		{"rm_command", "command rm x", Deny, ""},
		{"rm_exec", "exec rm x", Deny, ""},
		{"rm_busybox", "busybox rm x", Deny, ""},
		{"rm_workspace_path", "./rm x", Deny, ""},
		{"rm_subshell", "(rm x)", Deny, ""},
		{"rm_loop", "for f in a b; do rm $f; done", Deny, ""},
		{"rm_function", "f() { rm x; }; f", Deny, ""},
		{"rm_unparsable", "rm x; (", Deny, ""},
		{"rmdir_not_rm", "rmdir x", Ask, noMatch},
		{"curl_denied", "curl http://127.0.0.1/", Deny, "curl *"},
		{"git_clean_denied", "git clean -fdx", Deny, "git clean"},
		{"git_clean_denied_after_global_option", "git -C sub clean -f", Deny, "git clean"},
		{"git_clean_denied_after_no_pager", "git --no-pager clean", Deny, ""},

		// Lines that are not plain commands always ask.
		{"variable", "echo $HOME/x", Ask, "variable"},
		{"braced_variable", "echo ${PATH}", Ask, ""},
		{"ifs_variable", "git status ${IFS}x", Ask, ""},
		{"substitution", "cat $(ls)", Ask, "output"},
		{"backticks", "cat `ls`", Ask, ""},
		{"arithmetic", "echo $((1+2))", Ask, ""},
		{"quoted_substitution", `echo "$(id)"`, Ask, "inside double quotes"},
		{"unquoted_glob_star", "wc -l *.go", Ask, "file-name pattern"},
		{"unquoted_glob_question", "ls ?", Ask, ""},
		{"unquoted_glob_bracket", "ls [ab]", Ask, ""},
		{"brace_expansion", "echo {a,b}", Ask, "brace"},
		{"background", "ls &", Ask, "background"},
		{"subshell", "(ls)", Ask, "subshell"},
		{"block", "{ ls; }", Ask, ""},
		{"loop", "for f in a; do cat f; done", Ask, ""},
		{"if_clause", "if true; then ls; fi", Ask, ""},
		{"function", "f() { ls; }; f", Ask, ""},
		{"here_doc", "cat <<EOF\nx\nEOF", Ask, ""},
		{"here_string", "cat <<< x", Ask, ""},
		{"redirect_absolute", "ls > /etc/x", Ask, "outside"},
		{"redirect_parent", "ls > ../x", Ask, "leaves"},
		{"redirect_home", "ls > ~/x", Ask, ""},
		{"redirect_git_hook", "echo x > .git/hooks/pre-commit", Ask, "git"},
		{"redirect_git_config", "echo x >> .git/config", Ask, ""},
		{"redirect_odd_fd", "ls >&3", Ask, ""},
		{"redirect_fd_three", "ls 3>x", Ask, ""},
		{"redirect_read_write", "ls <> x", Ask, ""},
		{"negation", "! ls", Ask, ""},
		{"env_prefix", "LC_ALL=C ls", Ask, "sets a variable"},
		{"assignment_only", "PATH=./bin", Ask, ""},
		{"tilde_user", "ls ~root", Ask, ""},
		{"dollar_single_quote", "echo $'\\x41'", Ask, ""},
		{"bidi_override", "ls \u202e", Ask, "U+202E"},
		{"zero_width_space", "ls a\u200bb", Ask, ""},
		{"no_break_space", "git status\u00a0-x", Ask, "U+00A0"},
		{"ideographic_space", "cat a\u3000b", Ask, ""},
		{"tab_separated", "git status\t-s", Ask, ""},
		{"carriage_return", "ls\rrm", Ask, ""},
		{"nul", "ls\x00", Ask, ""},
		{"invalid_utf8", "ls \xff", Ask, ""},
		{"replacement_char", "ls \ufffd", Ask, ""},
		{"parse_error", "ls )", Ask, "parse"},
		{"empty_line", "", Ask, ""},
		{"only_comment", "# nothing", Ask, ""},
		{"parent_dir_argument", "ls ..", Ask, noMatch},
		{"parent_dir_in_path", "cat notes/../../etc/passwd", Ask, ""},

		// Runners and risky forms: a wildcard never approves them.
		{"env_runs", "env FOO=1 ls", Ask, "env"},
		{"env_alone", "env", Ask, ""},
		{"xargs_runs", "xargs cat < list.txt", Ask, "xargs"},
		{"sh_script", "sh script.sh", Ask, ""},
		{"sh_c", "sh -c ls", Ask, ""},
		{"sh_stdin_pipe", "echo id | sh", Ask, ""},
		{"timeout_runs", "timeout 5 ls", Ask, ""},
		{"nice_runs", "nice ls", Ask, ""},
		{"python_c", "python3 -c 'import os'", Ask, "code given on its command line"},
		{"python_cluster_c", "python3 -Sc 'import os'", Ask, ""},
		{"awk_system", `awk 'BEGIN{system("id")}'`, Ask, "awk"},
		{"awk_redirect", `awk '{print > "/tmp/x"}' f`, Ask, ""},
		{"awk_pipe", `awk '{print | "sh"}' f`, Ask, ""},
		{"awk_getline", `awk 'BEGIN{"id" | getline x}'`, Ask, ""},
		{"awk_file", "awk -f prog.awk f", Ask, ""},
		{"sed_e_flag", "sed 's/x/id/e' f", Ask, "sed"},
		{"sed_w_command", "sed 'w /tmp/x' f", Ask, ""},
		{"sed_w_flag", "sed 's/a/b/w /tmp/x' f", Ask, ""},
		{"sed_e_command", "sed '1e id' f", Ask, ""},
		{"sed_script_file", "sed -f script.sed f", Ask, ""},
		{"sed_expression_e", "sed -e 's/a/b/' -e '1e id' f", Ask, ""},
		{"tar_to_command", "tar --to-command=sh -xf a.tar", Ask, "tar"},
		{"tar_compress_program", "tar -I 'sh -c id' -xf a.tar", Ask, ""},
		{"tar_checkpoint_action", "tar --checkpoint=1 --checkpoint-action=exec=sh -cf x.tar docs", Ask, ""},
		{"tar_use_compress_program", "tar --use-compress-program=sh -xf a.tar", Ask, ""},
		{"rsync_e", "rsync -e 'sh -c id' a b:", Ask, "rsync"},
		{"rsync_path", "rsync --rsync-path=id a b:", Ask, ""},
		{"less_command", "less +!id f", Ask, ""},
		{"go_toolexec", "go build -toolexec=/tmp/x ./...", Ask, ""},
		{"go_test_exec", "go test -exec 'sh -c id' ./...", Ask, ""},
		{"go_env_w", "go env -w GOFLAGS=-toolexec=x", Ask, ""},
		{"go_generate", "go generate ./...", Ask, ""},
		{"scp_S", "scp -S ./x a b:", Ask, ""},
		{"make_variable", "make CC='sh -c id' build", Ask, "make"},
		{"make_eval", "make --eval='x: ; id' x", Ask, ""},
		{"make_other_dir", "make -C /elsewhere", Ask, ""},
		{"make_other_file", "make -f /tmp/Makefile", Ask, ""},
		{"go_run_remote", "go run example.com/x@latest", Ask, "network"},
		{"node_print", "node -p 'process.exit()'", Ask, ""},
		{"sort_compress_program", "sort --compress-program=sh big.txt", Ask, "sort"},
		{"npm_script_shell", "npm test --script-shell=./evil", Ask, "npm"},
		{"npm_test_args", "npm test -- --watch=false", Allow, ""},
		{"sort_plain", "sort -n -k2 data.txt", Allow, ""},
		{"npm_test_suffix", "npm test-x", Ask, noMatch},
		{"workspace_program_not_bare", "./ls", Ask, noMatch},
		{"other_program", "perl -e 'print 1'", Ask, noMatch},
		{"unlisted_in_pipe", "cat README.md | perl -ne print", Ask, noMatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := Explain(shellSpec, shellArgs(tt.line), Options{AutoRead: true}, shellRules)
			if e.Verdict.Effect != tt.want || !strings.Contains(e.Verdict.Reason, tt.reason) {
				t.Errorf("%q: %+v, want %s with %q\ncommands: %+v", tt.line, e.Verdict, tt.want, tt.reason, e.Commands)
			}
		})
	}
}

// TestProgramResolution: a bare-name rule matches the program by its resolved name, never
// a program found by a path into the workspace or elsewhere.
func TestProgramResolution(t *testing.T) {
	layer := rules("agent", []string{"execute_shell(rm *)", "execute_shell(/opt/tool/bin/x *)"}, nil)
	tests := []struct {
		name, line string
		want       Effect
	}{
		{"bare", "rm x", Allow},
		{"bin", "/bin/rm x", Allow},
		{"usr_bin", "/usr/bin/rm x", Allow},
		{"backslash", `\rm x`, Allow},
		{"quoted", `'rm' x`, Allow},
		{"workspace_path", "./rm x", Ask},
		{"workspace_subdir", "bin/rm x", Ask},
		{"other_absolute", "/tmp/rm x", Ask},
		{"named_path", "/opt/tool/bin/x a", Allow},
		{"named_path_bare", "x a", Ask},
		{"named_path_other", "/opt/tool/bin/../../evil/x a", Ask},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if v := Evaluate(shellSpec, shellArgs(tt.line), Options{}, layer); v.Effect != tt.want {
				t.Errorf("%q: %+v, want %s", tt.line, v, tt.want)
			}
		})
	}
}

// TestWordGlobs pins the word-level meaning of an execute_shell glob.
func TestWordGlobs(t *testing.T) {
	tests := []struct {
		name, pattern, line string
		want                bool
	}{
		{"prefix_star_is_more_words", "git status*", "git status -s -b", true},
		{"prefix_star_not_within_word", "git status*", "git status-x", false},
		{"lone_star_any_words", "git *", "git log -n 1", true},
		{"lone_star_no_words", "git *", "git", true},
		{"inner_star_one_word", "cat notes/*", "cat notes/a.md", true},
		{"inner_star_not_two_words", "cat notes/*", "cat notes/a.md /etc/passwd", false},
		{"inner_star_not_slash_other_dir", "cat notes/*", "cat secrets/a", false},
		{"star_in_middle_word", "go test -run Test* ./...", "go test -run TestFoo ./...", true},
		{"star_in_middle_word_not_across", "go test -run Test* ./...", "go test -run Test Foo ./...", false},
		{"star_word_in_middle", "make * install", "make -j4 -k install", true},
		{"question_one_char", "ls ?", "ls a", true},
		{"question_not_two", "ls ?", "ls ab", false},
		{"quoted_pattern_word", `git commit -m "*"`, "git commit -m 'a b c'", true},
		{"quoted_pattern_word_one", `git commit -m "*"`, "git commit -m a b", false},
		{"multi_command_pattern", "make * && make install", "make -j4 && make install", true},
		{"multi_command_pattern_other", "make * && make install", "make x; rm y && make install", false},
		{"exact_pattern_exact_text", "git status", "git status", true},
		{"exact_pattern_not_other_spacing", "git status", "git  status", false},
		{"wildcard_program_bare", "* --version", "go --version", true},
		{"wildcard_program_not_path", "* --version", "./go --version", false},
		{"dotdot_not_by_wildcard", "cat *", "cat ../x", false},
		{"dotdot_literal_ok", "cat ../x", "cat ../x", true},
		{"revision_range_ok", "git log *", "git log a..b", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := MustParse("execute_shell(" + tt.pattern + ")")
			if got := p.Allows(shellSpec, tt.line); got != tt.want {
				t.Errorf("%s.Allows(%q) = %v, want %v", p, tt.line, got, tt.want)
			}
		})
	}
}

// TestFileCorpus: path rules see the cleaned workspace path, for every file command.
func TestFileCorpus(t *testing.T) {
	tests := []struct {
		name string
		spec commands.Spec
		args string
		want Effect
	}{
		{"read_secret", readSpec, `{"path":"secrets/k"}`, Deny},
		{"read_secret_dot_slash", readSpec, `{"path":"./secrets/k"}`, Deny},
		{"read_secret_double_slash", readSpec, `{"path":".//secrets/k"}`, Deny},
		{"read_secret_trailing_dot", readSpec, `{"path":"secrets/./k"}`, Deny},
		{"read_secret_dotdot_back", readSpec, `{"path":"secrets/../secrets/k"}`, Deny},
		{"read_secret_via_notes", readSpec, `{"path":"notes/../secrets/k"}`, Deny},
		{"read_secret_via_workspace_name", readSpec, `{"path":"../WS/secrets/k"}`, Ask},
		{"read_absolute", readSpec, `{"path":"/work/ws/secrets/k"}`, Ask},
		{"read_parent", readSpec, `{"path":"../../etc/passwd"}`, Ask},
		{"read_notes", readSpec, `{"path":"notes/a.md"}`, Allow},
		{"read_notes_dot_slash", readSpec, `{"path":"./notes/a.md"}`, Allow},
		{"open_file_secret", openFileSpec, `{"path":"secrets/k"}`, Deny},
		{"open_file_secret_dot_slash", openFileSpec, `{"path":"./secrets//k"}`, Deny},
		{"open_file_notes", openFileSpec, `{"path":"notes/a.md"}`, Allow},
		{"open_file_outside", openFileSpec, `{"path":"../x"}`, Ask},
		{"list_secrets", listFolderSpec, `{"path":"secrets"}`, Deny},
		{"list_secrets_dot_slash", listFolderSpec, `{"path":"./secrets/"}`, Deny},
		{"list_top", listFolderSpec, `{"path":"."}`, Allow},
		{"list_notes", listFolderSpec, `{"path":"notes"}`, Allow},
		{"open_folder_secrets", openFolderSpec, `{"path":"secrets"}`, Deny},
		{"search_everything", searchSpec, `{"pattern":"**","text":"key"}`, Deny},
		{"search_secrets", searchSpec, `{"pattern":"secrets/**"}`, Deny},
		{"search_any_dir", searchSpec, `{"pattern":"*/k"}`, Deny},
		{"search_prefix_glob", searchSpec, `{"pattern":"sec*/k"}`, Deny},
		{"search_question", searchSpec, `{"pattern":"s?crets/k"}`, Deny},
		{"search_class", searchSpec, `{"pattern":"[s]ecrets/k"}`, Deny},
		{"search_dot_slash", searchSpec, `{"pattern":"./secrets/*"}`, Deny},
		{"search_deep_md", searchSpec, `{"pattern":"**/*.md"}`, Deny},
		{"search_folder_itself", searchSpec, `{"pattern":"secrets"}`, Deny},
		{"search_notes", searchSpec, `{"pattern":"notes/**/*.md","text":"todo"}`, Allow},
		{"search_top_level", searchSpec, `{"pattern":"*.md"}`, Allow},
		{"search_other_dir", searchSpec, `{"pattern":"docs/*/x"}`, Allow},
		{"search_outside", searchSpec, `{"pattern":"../**"}`, Ask},
		{"write_git_config", writeSpec, `{"path":".git/config","content":"x"}`, Deny},
		{"write_git_config_dot_slash", writeSpec, `{"path":"./.git/config","content":"x"}`, Deny},
		{"append_git_hook", appendSpec, `{"path":".git/hooks/pre-commit"}`, Deny},
		{"delete_git_head", deleteSpec, `{"path":".git/HEAD"}`, Deny},
		{"write_notes", writeSpec, `{"path":"notes/a","content":"x"}`, Allow},
		{"write_notes_cleaned", writeSpec, `{"path":"./notes//a","content":"x"}`, Allow},
		{"write_notes_escape", writeSpec, `{"path":"notes/../x","content":"x"}`, Ask},
		{"write_parent", writeSpec, `{"path":"../x","content":"x"}`, Ask},
		{"append_notes", appendSpec, `{"path":"notes/log"}`, Allow},
		{"append_outside_notes", appendSpec, `{"path":"other/log"}`, Ask},
		{"delete_tmp", deleteSpec, `{"path":"tmp/x"}`, Allow},
		{"delete_tmp_escape", deleteSpec, `{"path":"tmp/../notes/x"}`, Ask},
		{"python_build", pythonArgsSpec, `{"path":"scripts/build.py"}`, Allow},
		{"python_build_args", pythonArgsSpec, `{"path":"scripts/build.py","args":["--fast","-v"]}`, Allow},
		{"python_build_dot_slash", pythonArgsSpec, `{"path":"./scripts/build.py","args":["x"]}`, Allow},
		{"python_build_dotdot_arg", pythonArgsSpec, `{"path":"scripts/build.py","args":["../x"]}`, Ask},
		{"python_build_bidi_arg", pythonArgsSpec, `{"path":"scripts/build.py","args":["a\u202eb"]}`, Ask},
		{"python_other", pythonArgsSpec, `{"path":"scripts/other.py"}`, Ask},
		{"python_tools", pythonArgsSpec, `{"path":"tools/x.py"}`, Allow},
		{"python_tools_args_unchecked_before", pythonArgsSpec, `{"path":"tools/x.py","args":["--delete-all"]}`, Ask},
		{"python_tools_escape", pythonArgsSpec, `{"path":"tools/../scripts/evil.py"}`, Ask},
		{"python_outside", pythonArgsSpec, `{"path":"../x.py"}`, Ask},
		{"python_args_not_strings", pythonArgsSpec, `{"path":"scripts/build.py","args":[1]}`, Ask},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Evaluate(tt.spec, json.RawMessage(tt.args), Options{AutoRead: true}, fileRules)
			if v.Effect != tt.want {
				t.Errorf("%s %s: %+v, want %s", tt.spec.Name, tt.args, v, tt.want)
			}
		})
	}
}

// TestPythonAlwaysPattern: "approve always" on a script with args stores them too.
func TestPythonAlwaysPattern(t *testing.T) {
	args := json.RawMessage(`{"path":"./s.py","args":["a b","-v"]}`)
	p, err := AlwaysPattern(pythonArgsSpec, args)
	if err != nil {
		t.Fatal(err)
	}
	if want := "execute_python_file(s.py 'a b' -v)"; p.String() != want {
		t.Fatalf("AlwaysPattern = %s, want %s", p, want)
	}
	layer := rules("agent", []string{p.String()}, nil)
	if v := Evaluate(pythonArgsSpec, args, Options{}, layer); v.Effect != Allow {
		t.Errorf("the stored pattern does not approve its proposal: %+v", v)
	}
	other := json.RawMessage(`{"path":"s.py","args":["a b","-v","--rm"]}`)
	if v := Evaluate(pythonArgsSpec, other, Options{}, layer); v.Effect != Ask {
		t.Errorf("the stored pattern approves other args: %+v", v)
	}
}

// TestOverlap checks the glob intersection against brute force over a small alphabet.
func TestOverlap(t *testing.T) {
	tests := []struct {
		deny, search string
		want         bool
	}{
		{"secrets/*", "**", true},
		{"secrets/*", "*", false},
		{"secrets/*", "*/x", true},
		{"secrets/*", "notes/*", false},
		{"*.key", "notes/*.md", false},
		{"*.key", "notes/**", true},
		{"secrets/?", "secrets/ab", true}, // ? is taken as a rune of one or more bytes: wider, never narrower
		{"secrets/?", "secrets/a", true},
		{"a*b", "a/b", true},
		{"a", "a/**", false},
	}
	for _, tt := range tests {
		p := MustParse("x(" + tt.deny + ")")
		if got := overlap(denyElems(p.subj), searchElems(tt.search)); got != tt.want {
			t.Errorf("overlap(%q, %q) = %v, want %v", tt.deny, tt.search, got, tt.want)
		}
	}
}

// BenchmarkExplainShell measures deciding an everyday line and a long hostile one.
func BenchmarkExplainShell(b *testing.B) {
	for _, line := range []string{
		"cat README.md | head -20 && git log --oneline -n 5",
		strings.Repeat("env ", 400) + "rm -rf x; " + strings.Repeat("sh -c 'eval \"ls\"' ; ", 40),
	} {
		b.Run(strconv.Itoa(len(line)), func(b *testing.B) {
			args := shellArgs(line)
			for b.Loop() {
				Explain(shellSpec, args, Options{}, shellRules)
			}
		})
	}
}

// TestCodeLoadingOptionsAsk: options that make an allowed program load code or options
// from a file of the agent's choosing (an engine, a provider, a config file) are never
// approved through a wildcard; the same programs' everyday forms still are.
func TestCodeLoadingOptionsAsk(t *testing.T) {
	layer := rules("agent", []string{"execute_shell(curl *)", "execute_shell(wget *)", "execute_shell(openssl *)"}, nil)
	tests := []struct {
		name, line string
		want       Effect
	}{
		{"curl_plain", "curl -s https://example.com/x", Allow},
		{"curl_engine", "curl --engine ./x.so https://example.com/", Ask},
		{"curl_engine_attached", "curl --engine=./x.so https://example.com/", Ask},
		{"curl_engine_abbreviated", "curl --eng ./x.so https://example.com/", Ask},
		{"curl_config_file", "curl -K ./opts https://example.com/", Ask},
		{"wget_plain", "wget -q https://example.com/x", Allow},
		{"wget_config_file", "wget --config=./w.rc https://example.com/", Ask},
		{"wget_askpass", "wget --use-askpass=./p.sh https://example.com/", Ask},
		{"openssl_dgst", "openssl dgst -sha256 file.txt", Allow},
		{"openssl_engine", "openssl dgst -engine ./x.so file.txt", Ask},
		{"openssl_engine_double_dash", "openssl dgst --engine ./x.so file.txt", Ask},
		{"openssl_provider_path", "openssl list -provider-path . -provider x", Ask},
		{"openssl_config", "openssl req -config ./evil.cnf -new", Ask},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args, _ := json.Marshal(map[string]string{"command_line": tt.line})
			if v := Evaluate(shellSpec, args, Options{}, layer); v.Effect != tt.want {
				t.Errorf("%q: %s (%s); want %s", tt.line, v.Effect, v.Reason, tt.want)
			}
		})
	}
}

// MustParse is Parse for patterns known when the test is written; it panics on an error.
func MustParse(s string) Pattern {
	p, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return p
}
