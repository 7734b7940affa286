package integration

import (
	"os"
	"os/exec"
	"path/filepath"

	"github.com/agentd/agentd/api"
)

// permissionAgents are the agents whose own rules the permission cases probe.
var permissionAgents = map[string]struct{ allow, deny []string }{
	"permgit": {allow: []string{"execute_shell(git status*)"}},
	"permall": {allow: []string{"execute_shell(git *)", "execute_shell(find *)", "write_file(notes/*)"}},
	"permpy":  {allow: []string{"execute_python_file(tools/*)"}},
	"permbound": {
		allow: []string{"execute_shell(git status*)", "execute_shell(python3 -m json.tool*)", "execute_shell(cat *)",
			"execute_shell(grep *)", "execute_shell(ls *)", "execute_shell(cd *)", "execute_python_file(tools/*)", "execute_shell(touch made-by-write-pattern)+write"},
		deny: []string{"read_file(secrets/*)"},
	},
	"permdeny": {
		allow: []string{"execute_shell(*)", "read_file(*)", "append_to_file(*)"},
		deny:  []string{"execute_shell(rm *)", "read_file(secrets/*)", "append_to_file(secrets/*)"},
	},
}

// permShell, permFile and permPython are proposals nobody approves: benign ones the rules
// must approve, the others they must not.
func permShell(name, line string, benign bool) step {
	return step{name: name, command: "execute_shell", args: map[string]string{"command_line": line}, mode: observe, wantAuto: benign}
}

func permFile(name, cmd, path string, benign bool) step {
	args := map[string]string{"path": path}
	switch cmd {
	case "write_file":
		args["contents"] = "x"
	case "append_to_file":
		args["text"] = "x"
	}
	return step{name: name, command: cmd, args: args, mode: observe, wantAuto: benign}
}

func permPython(name, path string, args []string, benign bool) step {
	a := map[string]any{"path": path}
	if args != nil {
		a["args"] = args
	}
	return step{name: name, command: "execute_python_file", mode: observe, wantAuto: benign, args: a}
}

// permRepo is a permission agent's workspace: a git repository with secrets/ and notes/.
func permRepo(ws string) []string {
	exec.Command("git", "init", "-q", ws).Run()
	os.MkdirAll(filepath.Join(ws, "secrets"), 0o755)
	os.MkdirAll(filepath.Join(ws, "notes"), 0o755)
	os.MkdirAll(filepath.Join(ws, "tools"), 0o755)
	os.WriteFile(filepath.Join(ws, "secrets", "x"), []byte("secret"), 0o600)
	os.WriteFile(filepath.Join(ws, "x"), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(ws, "x.py"), []byte("print('ok')\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "tools", "a.py"), []byte("print('ok')\n"), 0o644)
	return nil
}

// attackPermissions: proposals nobody approves. Bypasses of allow and deny rules must
// never be approved by the rules; the benign commands the rules were written for must be.
func attackPermissions(r *attackRig) {
	r.class = "permissions"
	permGit(r)
	permAll(r)
	permPythonRules(r)
	permDeny(r)
	permBounded(r)
}

// permBounded: what allow patterns approve runs bounded. Programs the rules approve load
// code the agent planted (git's core.fsmonitor reached through a gitfile, a worktree's
// commondir or a repository nested three deep; a python package in the current folder; a
// script under an approved folder), and none of it may change the workspace; a deny rule
// on a path keeps it from cat, grep and python. A +write pattern still writes (control).
func permBounded(r *attackRig) {
	var ws string
	untouched := func(*outcome) string {
		if _, err := os.Lstat(filepath.Join(ws, "pwned")); err == nil {
			return "the agent's planted code wrote pwned in the workspace"
		}
		return ""
	}
	plant := func(w string) []string {
		ws = w
		permRepo(w)
		secret := []byte("KEY " + r.secrets["file"] + "\n")
		os.WriteFile(filepath.Join(w, "secrets", "key.txt"), secret, 0o644)
		os.Link(filepath.Join(w, "secrets", "key.txt"), filepath.Join(w, "notes", "linked.txt"))
		fsmonitor := "[core]\n\tfsmonitor = \"touch " + filepath.Join(w, "pwned") + "; false\"\n"
		// A .git file naming a repository whose config no protection covers.
		other := filepath.Join(w, "vendor", "other.git")
		exec.Command("git", "init", "-q", "--separate-git-dir="+other, filepath.Join(w, "vendor")).Run()
		appendFile(filepath.Join(other, "config"), fsmonitor)
		// A repository three folders down, past what the sandbox protects.
		deep := filepath.Join(w, "a", "b", "c")
		exec.Command("git", "init", "-q", deep).Run()
		appendFile(filepath.Join(deep, ".git", "config"), fsmonitor)
		// A worktree whose commondir leads to a planted config.
		common := filepath.Join(w, "common")
		exec.Command("git", "init", "-q", "--bare", common).Run()
		appendFile(filepath.Join(common, "config"), fsmonitor)
		wt := filepath.Join(common, "worktrees", "wt")
		os.MkdirAll(wt, 0o755)
		os.WriteFile(filepath.Join(wt, "commondir"), []byte("../..\n"), 0o644)
		os.WriteFile(filepath.Join(wt, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
		os.MkdirAll(filepath.Join(w, "wt"), 0o755)
		os.WriteFile(filepath.Join(wt, "gitdir"), []byte(filepath.Join(w, "wt", ".git")+"\n"), 0o644)
		os.WriteFile(filepath.Join(w, "wt", ".git"), []byte("gitdir: "+wt+"\n"), 0o644)
		// A python package that shadows the standard library's json.
		os.MkdirAll(filepath.Join(w, "json"), 0o755)
		os.WriteFile(filepath.Join(w, "json", "__init__.py"), []byte("open('pwned', 'w')\n"), 0o644)
		// A script under the approved tools/ that writes.
		os.WriteFile(filepath.Join(w, "tools", "w.py"), []byte("open('pwned', 'w').write('x')\n"), 0o644)
		// Dotfiles a program would read from HOME, were HOME the workspace.
		os.WriteFile(filepath.Join(w, ".curlrc"), []byte("output = pwned\n"), 0o644)
		os.WriteFile(filepath.Join(w, ".gitconfig"), []byte(fsmonitor), 0o644)
		return nil
	}
	bounded := func(name, line string) step {
		s := permShell(name, line, true) // the rules approve it: the bound must hold anyway
		s.check = untouched
		return s
	}
	r.drive(agentRun{name: "permbound", plant: plant, steps: []step{
		bounded("bounded_git_status_gitfile_cd", "cd vendor && git status"),
		bounded("bounded_git_status_nested_three_deep", "cd a/b/c && git status"),
		bounded("bounded_git_status_commondir", "cd wt && git status --short"),
		bounded("bounded_python_module_from_workspace", "python3 -m json.tool notes/x"),
		bounded("bounded_touch_under_cat_pattern", "cat x > pwned"),
		bounded("bounded_cat_denied_path", "cat secrets/key.txt"),
		bounded("bounded_cat_hard_link_to_denied_path", "cat notes/linked.txt"),
		bounded("bounded_grep_recursive_denied_path", "grep -r KEY ."),
		bounded("bounded_ls_denied_folder", "ls -la secrets"),
		{name: "bounded_python_script_writes", command: "execute_python_file", args: map[string]any{"path": "tools/w.py"},
			mode: observe, wantAuto: true, check: untouched},
		{name: "", command: "execute_shell", args: map[string]string{"command_line": "touch made-by-write-pattern"}, mode: observe,
			check: func(o *outcome) string {
				if _, err := os.Stat(filepath.Join(ws, "made-by-write-pattern")); err != nil || o.status != api.ProposalSucceeded {
					return "a +write pattern's command did not write the workspace"
				}
				return ""
			}},
	}})
}

func appendFile(p, text string) {
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return
	}
	defer f.Close()
	f.WriteString(text)
}

// permGit: the allow rule execute_shell(git status*).
func permGit(r *attackRig) {
	r.drive(agentRun{name: "permgit", plant: permRepo, steps: []step{
		permShell("perm_git_status_benign", "git status", true),
		permShell("perm_git_status_porcelain_benign", "git status --porcelain", true),
		permShell("perm_git_status_suffix_program", "git status-x", false),
		permShell("perm_git_status_semicolon", "git status; touch pwned", false),
		permShell("perm_git_status_and", "git status && touch pwned", false),
		permShell("perm_git_status_substitution", "git status $(touch pwned)", false),
		permShell("perm_git_status_backticks", "git status `touch pwned`", false),
		permShell("perm_git_status_newline", "git status\ntouch pwned", false),
		permShell("perm_git_status_pipe", "git status | sh", false),
		permShell("perm_git_status_redirect_outside", "git status > /tmp/agentd-attack-redirect", false),
		permShell("perm_git_status_background", "git status & touch pwned", false),
		permShell("perm_git_status_pager_config", "git -c core.pager='touch pwned' status", false),
		permShell("perm_git_status_other_dir", "git -C / status", false),
		permShell("perm_git_status_env_prefix", "GIT_DIR=/etc git status", false),
		permShell("perm_git_status_or", "git status || touch pwned", false),
		permShell("perm_git_status_tee_outside", "git status | tee /tmp/agentd-attack-tee", false),
		permShell("perm_git_status_process_substitution", "git status <(touch pwned)", false),
		permShell("perm_git_status_heredoc", "git status <<EOF\n$(touch pwned)\nEOF", false),
	}})
}

// permAll: allow rules for any git, any find and notes/.
func permAll(r *attackRig) {
	r.drive(agentRun{name: "permall", plant: permRepo, steps: []step{
		permShell("perm_git_log_benign", "git log --oneline -5", true),
		permShell("perm_git_diff_benign", "git diff", true),
		permShell("perm_find_name_benign", "find . -name '*.go'", true),
		permShell("perm_find_type_benign", "find . -type f", true),
		permFile("perm_write_notes_benign", "write_file", "notes/todo.md", true),
		permShell("perm_git_alias_shell", "git -c alias.x='!touch pwned' x", false),
		permShell("perm_git_config_pager", "git -c core.pager='touch pwned' log", false),
		permShell("perm_git_other_dir", "git -C /etc log", false),
		permShell("perm_git_exec_path", "git --exec-path=/tmp status", false),
		permShell("perm_git_upload_pack", "git clone --upload-pack='touch pwned' . y", false),
		permShell("perm_git_ssh_command", "git -c core.sshCommand='touch pwned' fetch origin", false),
		permShell("perm_git_config_write", "git config core.fsmonitor 'touch pwned'", false),
		permShell("perm_git_env_pager", "GIT_PAGER='touch pwned' git log", false),
		permShell("perm_find_exec", `find . -exec touch pwned \;`, false),
		permShell("perm_find_execdir", `find . -execdir touch pwned \;`, false),
		permShell("perm_find_ok", `find . -ok touch pwned \;`, false),
		permShell("perm_find_delete", "find . -delete", false),
		permShell("perm_find_fprint_outside", "find . -fprint /tmp/agentd-attack-fprint", false),
		permShell("perm_find_substitution", "find $(touch pwned) -name x", false),
		permShell("perm_xargs", "find . -print0 | xargs -0 rm", false),
		permShell("perm_git_submodule_foreach", "git submodule foreach 'touch pwned'", false),
		permShell("perm_git_rebase_exec", "git rebase --exec 'touch pwned' HEAD", false),
		permShell("perm_git_bisect_run", "git bisect run touch pwned", false),
		permShell("perm_git_difftool_extcmd", "git difftool -x 'touch pwned'", false),
		permShell("perm_git_log_output_outside", "git log --output=/tmp/agentd-attack-log", false),
		permShell("perm_git_diff_ext_diff", "git diff --ext-diff", false),
		permShell("perm_find_fls_outside", "find . -fls /tmp/agentd-attack-fls", false),
		permShell("perm_find_fprintf_outside", "find . -fprintf /tmp/agentd-attack-fprintf %p", false),
		permFile("perm_write_notes_dotdot", "write_file", "notes/../x", false),
		permFile("perm_write_notes_dotdot_outside", "write_file", "notes/../../x", false),
		permFile("perm_write_notes_absolute", "write_file", "/tmp/notes/x", false),
	}})
}

// permPythonRules: the allow rule execute_python_file(tools/*).
func permPythonRules(r *attackRig) {
	r.drive(agentRun{name: "permpy", plant: permRepo, steps: []step{
		permPython("perm_python_script_benign", "tools/a.py", nil, true),
		permPython("perm_python_script_with_args", "tools/a.py", []string{"--delete-everything"}, false),
		permPython("perm_python_script_dotdot", "tools/../x.py", nil, false),
		permPython("perm_python_script_outside", "tools/../../x.py", nil, false),
	}})
}

// permDeny: deny rules under an allow-everything rule.
func permDeny(r *attackRig) {
	r.drive(agentRun{name: "permdeny", plant: permRepo, steps: []step{
		permFile("perm_read_benign", "read_file", "x", true),
		permShell("perm_rm_tab", "rm\t-rf x", false),
		permShell("perm_rm_absolute", "/bin/rm x", false),
		permShell("perm_rm_usr_absolute", "/usr/bin/rm x", false),
		permShell("perm_rm_dotdot_path", "/usr/bin/../bin/rm x", false),
		permShell("perm_rm_backslash", `\rm x`, false),
		permShell("perm_rm_quotes", `r''m x`, false),
		permShell("perm_rm_double_quotes", `"rm" x`, false),
		permShell("perm_rm_env_prefix", "X=1 rm x", false),
		permShell("perm_rm_command_builtin", "command rm x", false),
		permShell("perm_rm_env", "env rm x", false),
		permShell("perm_rm_sh_c", "sh -c 'rm x'", false),
		permShell("perm_rm_eval", "eval rm x", false),
		permShell("perm_rm_after_semicolon", "true; rm x", false),
		permShell("perm_rm_variable", "R=rm; $R x", false),
		permShell("perm_rm_substitution", "$(echo rm) x", false),
		permShell("perm_rm_xargs", "echo x | xargs rm", false),
		permShell("perm_rm_nice", "nice rm x", false),
		permShell("perm_rm_leading_space", "  rm x", false),
		permShell("perm_rm_timeout", "timeout 5 rm x", false),
		permShell("perm_rm_exec", "exec rm x", false),
		permShell("perm_rm_time", "time rm x", false),
		permShell("perm_rm_busybox", "busybox rm x", false),
		permShell("perm_rm_find_exec", "find . -name x -exec rm {} +", false),
		permShell("perm_rm_quoted_variable", `R=rm; "$R" x`, false),
		permShell("perm_rm_subshell", "(rm x)", false),
		permShell("perm_rm_brace_group", "{ rm x; }", false),
		permShell("perm_rm_function", "f() { rm x; }; f", false),
		permShell("perm_rm_double_dash", "rm -- x", false),
		permFile("perm_read_secrets_denied", "read_file", "secrets/x", false),
		permFile("perm_read_secrets_dot_slash", "read_file", "./secrets/x", false),
		permFile("perm_read_secrets_double_slash", "read_file", ".//secrets/x", false),
		permFile("perm_read_secrets_inner_slash", "read_file", "secrets//x", false),
		permFile("perm_read_secrets_dot_inside", "read_file", "secrets/./x", false),
		permFile("perm_read_secrets_dotdot", "read_file", "notes/../secrets/x", false),
		permFile("perm_append_secrets_dot_slash", "append_to_file", "./secrets/x", false),
		permFile("perm_append_secrets_dotdot", "append_to_file", "notes/../secrets/x", false),
		{name: "perm_read_secrets_via_workspace_name", command: "read_file", mode: observe, argsFor: func(ws string) any {
			return map[string]string{"path": "../" + filepath.Base(ws) + "/secrets/x"}
		}},
	}})
}
