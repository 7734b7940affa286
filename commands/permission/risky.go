package permission

import (
	"fmt"
	"slices"
	"strings"
)

// risk is a form a wildcard never approves: arg is the argument it lies in (an index into
// the command's args), or -1 when the program itself is the risk, whatever its arguments.
type risk struct {
	arg    int
	reason string
}

// runners run another program, shell code or a command they are given, or change how the
// shell finds and runs the next one: whatever follows them is a command of its own, which
// a wildcard cannot vouch for.
var runners = setOf(
	"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "busybox", "toybox",
	"env", "xargs", "sudo", "doas", "su", "runuser", "pkexec", "sg", "newgrp", "nohup", "nice",
	"ionice", "chrt", "taskset", "timeout", "setsid", "stdbuf", "unbuffer", "exec", "eval",
	"command", "builtin", "source", ".", "time", "watch", "chroot", "nsenter", "unshare", "flock",
	"script", "parallel", "strace", "ltrace", "gdb", "valgrind", "perf", "ssh", "expect",
	"systemd-run", "at", "batch", "crontab", "alias", "unalias", "trap", "set", "export",
	"readonly", "unset", "hash", "ulimit", "fc", "npx", "pnpx", "bunx", "socat", "nc", "ncat",
	"vi", "vim", "nvim", "view", "ex", "ed", "emacs", "xdg-open", "open", "docker", "podman",
	"kubectl", "dbus-launch", "ssh-agent", "setpriv", "capsh", "firejail", "bwrap", "proot",
	"systemctl", "service", "launchctl", "telnet", "dc", "tmux", "screen", "sshpass",
	"prlimit", "setarch", "linux32", "linux64", "fakeroot", "faketime", "numactl", "cpulimit",
	"dbus-run-session", "xvfb-run", "torsocks", "proxychains", "proxychains4", "rlwrap", "sem",
	"run-parts", "entr", "catchsegv", "chpst", "systemd-nspawn", "gosu", "su-exec", "tini",
	"dumb-init", "ip", "schroot", "lxc-attach", "flatpak-spawn", "distrobox", "toolbox",
)

// interpreters run code given on their command line with -c, -e and the like.
var interpreters = setOf(
	"python", "python2", "python3", "pypy", "pypy3", "perl", "ruby", "node", "nodejs", "deno",
	"bun", "php", "lua", "luajit", "tclsh", "wish", "Rscript", "R", "julia", "pwsh", "osascript",
	"guile", "racket", "sbcl", "ghci", "irb", "jshell",
)

// gitBuiltins are git's own subcommands that run nothing configured or given on their
// command line. Any other word is an alias or a git-NAME program, which can run anything;
// config, filter-branch, submodule, bisect, difftool, mergetool, hook, maintenance and the
// like are left out on purpose.
var gitBuiltins = setOf(
	"add", "am", "annotate", "apply", "archive", "blame", "branch", "bundle", "cat-file",
	"check-attr", "check-ignore", "check-mailmap", "check-ref-format", "checkout",
	"checkout-index", "cherry", "cherry-pick", "clean", "clone", "commit", "commit-graph",
	"commit-tree", "count-objects", "describe", "diff", "diff-files", "diff-index", "diff-tree",
	"fetch", "for-each-ref", "format-patch", "fsck", "gc", "grep", "hash-object", "init", "log",
	"ls-files", "ls-remote", "ls-tree", "merge", "merge-base", "merge-file", "merge-tree",
	"mktag", "mktree", "mv", "notes", "pull", "push", "range-diff", "read-tree", "rebase",
	"reflog", "remote", "repack", "reset", "restore", "rev-list", "rev-parse", "revert", "rm",
	"shortlog", "show", "show-branch", "show-ref", "sparse-checkout", "stash", "status",
	"stripspace", "switch", "symbolic-ref", "tag", "update-index", "update-ref",
	"verify-commit", "verify-tag", "version", "whatchanged", "worktree",
)

// gitGlobalSafe are the options git takes before its subcommand that change nothing it runs.
var gitGlobalSafe = setOf("--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs",
	"--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs", "--no-replace-objects",
	"--version", "--help")

// gitRiskyLong are subcommand options that name a program to run, a file to write outside
// git's control or configuration, abbreviations included (see hasOpt).
var gitRiskyLong = []string{"--upload-pack", "--receive-pack", "--exec", "--ext-diff",
	"--template", "--config", "--open-files-in-pager", "--output", "--separate-git-dir",
	"--reference", "--reference-if-able", "--recurse-submodules", "--recursive", "--remote"}

// gitRiskyShort are the one-letter forms, alone, in a cluster (-ix) or with their value
// attached (-xid, -ccore.pager=sh); "u" counts only for the commands in gitUpload.
const gitRiskyShort = "cOx"

var gitUpload = setOf("fetch", "pull", "clone", "ls-remote", "archive")

// gitSequencer are the subcommands that start a merge strategy (git merge-NAME, an alias
// if the repository defines one) or go on with a stopped one, whose state files in the
// workspace name commands to run (a rebase's exec lines); gitSequencerLong and
// gitSequencerShort are those options for them (-s is a strategy for merge, pull and
// rebase, a sign-off elsewhere: asked either way).
var gitSequencer = setOf("cherry-pick", "revert", "rebase", "merge", "pull", "am")

var gitSequencerLong = append(gitRiskyLong[:len(gitRiskyLong):len(gitRiskyLong)],
	"--strategy", "--strategy-option", "--continue", "--skip", "--edit-todo")

const gitSequencerShort = "sX"

// findRisky are find's actions that run a program, delete, or write files.
var findRisky = setOf("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0",
	"-fprintf", "-fls")

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// risks lists the risky forms in c; rules with a wildcard never approve them.
func risks(c simpleCmd) []risk {
	switch {
	case runners[c.prog]:
		return []risk{{-1, "a wildcard never approves " + c.prog + ", which runs other commands or code"}}
	case interpreters[c.prog]:
		return optionRisks(c.args, func(o string) bool {
			return shortHas(o, "ceEpr") || hasOpt(o, "--eval", "--command", "--exec", "--execute", "--print")
		}, "a wildcard never approves "+c.prog+" running code given on its command line")
	}
	switch c.prog {
	case "git":
		return gitRisks(c.args)
	case "go":
		return goRisks(c.args)
	case "sed", "gsed":
		return sedRisks(c.args)
	case "tar":
		return tarRisks(c.args)
	}
	if r, ok := optionRuleOf[c.prog]; ok {
		reason := r.reason
		if strings.Contains(reason, "%s") {
			reason = fmt.Sprintf(reason, c.prog)
		}
		return optionRisks(c.args, r.bad, reason)
	}
	return nil
}

// optionRule is what a wildcard never approves in the arguments of a program that takes
// no command of its own: the options bad accepts, for reason ("%s": the program's name).
type optionRule struct {
	progs  string // the program's names, space-separated
	bad    func(o string) bool
	reason string
}

// optionRules are the programs whose options can run or load a program, one rule each.
var optionRules = []optionRule{
	{"find", func(o string) bool { return findRisky[o] },
		"a wildcard never approves find's -exec, -ok, -delete or -fprint actions"},
	{"rsync", func(o string) bool { return shortHas(o, "e") || hasOpt(o, "--rsh", "--rsync-path") },
		"a wildcard never approves rsync's -e or --rsync-path, which run a program"},
	{"scp sftp", func(o string) bool { return shortHas(o, "SoF") },
		"a wildcard never approves %s's -S, -o or -F, which run a program"},
	{"zip", func(o string) bool { return o == "-TT" || hasOpt(o, "--unzip-command") },
		"a wildcard never approves zip's -TT, which runs a program"},
	{"awk gawk mawk nawk busybox-awk", func(o string) bool {
		return strings.Contains(o, "system") || strings.ContainsAny(o, "|>") || strings.Contains(o, "getline") || strings.Contains(o, "@load") || strings.Contains(o, "@include") ||
			shortHas(o, "fEil") || hasOpt(o, "--file", "--exec", "--include", "--load")
	}, "a wildcard never approves an awk program that runs commands, writes files or loads code"},
	{"less more most", func(o string) bool { return strings.HasPrefix(o, "+") },
		"a wildcard never approves %s's +command, which can run a shell"},
	{"man", func(o string) bool { return shortHas(o, "PHB") || hasOpt(o, "--pager", "--html", "--browser") },
		"a wildcard never approves man's pager or browser options"},
	{"make gmake", func(o string) bool {
		return strings.Contains(o, "=") || shortHas(o, "fCEI") || hasOpt(o, "--eval", "--file", "--makefile", "--directory", "--include-dir")
	}, "a wildcard never approves make given variables, --eval or another makefile or folder, which can run any command"},
	{"sort", func(o string) bool { return hasOpt(o, "--compress-program") },
		"a wildcard never approves sort's --compress-program, which runs a program"},
	{"npm yarn pnpm", func(o string) bool {
		return hasOpt(o, "--script-shell", "--node-options", "--call", "--shell") || o == "-c" || o == "exec" || o == "x" || o == "dlx" || o == "explore"
	}, "a wildcard never approves %s running a command or shell it is given (exec, --call, --script-shell)"},
	{"patch", func(o string) bool { return shortHas(o, "e") || hasOpt(o, "--ed") },
		"a wildcard never approves patch's ed scripts, which can run commands"},
	{"cc gcc g++ c++ clang clang++", func(o string) bool {
		return slices.ContainsFunc([]string{"-wrapper", "-fplugin", "-B", "-specs", "--specs", "-fuse-ld"},
			func(p string) bool { return strings.HasPrefix(o, p) })
	}, "a wildcard never approves a compiler option that runs or loads another program (-wrapper, -fplugin, -B, -specs)"},
	{"cargo", func(o string) bool { return hasOpt(o, "--config") || strings.HasPrefix(o, "-Z") },
		"a wildcard never approves cargo's --config, which can name a program to run"},
	{"sqlite3", func(o string) bool {
		return strings.HasPrefix(o, ".") || strings.Contains(o, "\n.") || hasOpt("-"+strings.TrimPrefix(o, "-"), "-cmd", "-init")
	}, "a wildcard never approves sqlite3 dot-commands, which can run a shell or write files"},
	{"rg", func(o string) bool { return hasOpt(o, "--pre", "--hostname-bin") },
		"a wildcard never approves rg's --pre or --hostname-bin, which run a program"},
	{"fd fdfind", func(o string) bool { return shortHas(o, "xX") || hasOpt(o, "--exec", "--exec-batch") },
		"a wildcard never approves %s's -x or -X, which run a command for the files found"},
	{"ack bat batcat", func(o string) bool { return hasOpt(o, "--pager") },
		"a wildcard never approves %s's --pager, which runs a program"},
	{"diff3 sdiff", func(o string) bool { return hasOpt(o, "--diff-program") },
		"a wildcard never approves %s's --diff-program, which runs a program"},
	{"curl", func(o string) bool { return shortHas(o, "K") || hasOpt(o, "--config", "--engine") },
		"a wildcard never approves curl reading its options from a file or loading an engine"},
	{"wget", func(o string) bool { return shortHas(o, "e") || hasOpt(o, "--execute", "--use-askpass", "--config") },
		"a wildcard never approves wget's -e, --config or --use-askpass"},
	{"openssl", func(o string) bool {
		o = "-" + strings.TrimLeft(o, "-") // openssl takes -opt and --opt alike
		return hasOpt(o, "-engine", "-provider", "-provider-path", "-provider_path", "-config")
	}, "a wildcard never approves openssl loading an engine, a provider or a config file, which load code"},
}

// optionRuleOf finds a program's rule by any of its names.
var optionRuleOf = func() map[string]optionRule {
	m := map[string]optionRule{}
	for _, r := range optionRules {
		for _, p := range strings.Fields(r.progs) {
			if _, dup := m[p]; dup {
				panic("permission: two option rules for " + p)
			}
			m[p] = r
		}
	}
	return m
}()

// tarRisks: the options that run a program, also in tar's old style, where the first
// argument is a cluster of option letters without a dash (tar czIf …).
func tarRisks(a []string) []risk {
	return optionRisks(a, func(o string) bool {
		return hasOpt(o, "--to-command", "--checkpoint-action", "--use-compress-program",
			"--info-script", "--new-volume-script", "--rmt-command", "--rsh-command") ||
			shortHas(o, "IF") || (o == a[0] && !strings.HasPrefix(o, "-") && strings.ContainsAny(o, "IF"))
	}, "a wildcard never approves tar running a program (--to-command, -I, --checkpoint-action, …)")
}

// optionRisks marks every argument bad accepts, and the one after it (its value).
func optionRisks(args []string, bad func(string) bool, reason string) []risk {
	var out []risk
	for i, o := range args {
		if bad(o) {
			out = append(out, risk{i, reason})
			if i+1 < len(args) {
				out = append(out, risk{i + 1, reason})
			}
		}
	}
	return out
}

// shortHas reports whether o is a cluster of one-letter options (-xyz) holding one of letters.
func shortHas(o, letters string) bool {
	return len(o) >= 2 && o[0] == '-' && o[1] != '-' && strings.ContainsAny(o[1:], letters)
}

// hasOpt reports whether o is one of the long options, alone or as --opt=value, or an
// abbreviation of one: getopt_long and git's parse-options take any unambiguous prefix of a
// --long option (--upload-pa is --upload-pack), so every prefix counts.
func hasOpt(o string, long ...string) bool {
	name, _, _ := strings.Cut(o, "=")
	for _, l := range long {
		if name == l || (len(name) > 2 && strings.HasPrefix(name, "--") && strings.HasPrefix(l, "--") && strings.HasPrefix(l, name)) {
			return true
		}
	}
	return false
}

// gitRisks: global options other than the harmless ones, a subcommand that is not one of
// git's builtins, options that run a program, and remote-helper URLs (ext::, fd::).
func gitRisks(a []string) []risk {
	var out []risk
	i := 0
	for ; i < len(a) && strings.HasPrefix(a[i], "-"); i++ {
		if !gitGlobalSafe[a[i]] {
			opt, _, _ := strings.Cut(a[i], "=")
			out = append(out, risk{i, "a wildcard never approves git's global option " + opt})
			if i+1 < len(a) {
				out = append(out, risk{i + 1, "a wildcard never approves git's global option " + opt})
			}
		}
	}
	if i == len(a) {
		return out
	}
	sub := a[i]
	if !gitBuiltins[sub] {
		out = append(out, risk{i, "git " + sub + " is not one of git's builtin commands: an alias or a git-" + sub + " program could run anything"})
	}
	for j := i + 1; j < len(a); j++ {
		o := a[j]
		opt, _, _ := strings.Cut(o, "=")
		short, long := gitRiskyShort, gitRiskyLong
		if gitUpload[sub] {
			short += "u"
		}
		if gitSequencer[sub] {
			short, long = short+gitSequencerShort, gitSequencerLong
		}
		switch {
		case hasOpt(o, long...) || shortHas(o, short):
			out = append(out, risk{j, "a wildcard never approves git " + sub + "'s " + opt + " option"})
			if j+1 < len(a) && opt == o {
				out = append(out, risk{j + 1, "a wildcard never approves git " + sub + "'s " + opt + " option"})
			}
		case strings.Contains(o, "::"):
			out = append(out, risk{j, "a wildcard never approves a git remote-helper address (" + quoteWord(o) + ")"})
		}
	}
	return out
}

// goRisks: go env -w, go generate, and the flags that name a program to run.
func goRisks(a []string) []risk {
	var out []risk
	for i, o := range a {
		opt, _, _ := strings.Cut(o, "=")
		switch {
		case goProgramFlags[goFlagName(opt)]:
			out = append(out, risk{i, "a wildcard never approves go's " + opt + " flag, which runs a program"})
		case goLinkFlags[goFlagName(opt)] && goFlagValue(a, i) != "" && strings.Contains(goFlagValue(a, i), "extld"):
			out = append(out, risk{i, "a wildcard never approves go's " + opt + " naming an external linker (-extld, -extldflags), which runs a program"})
			if !strings.Contains(o, "=") && i+1 < len(a) {
				out = append(out, risk{i + 1, "a wildcard never approves go's " + opt + " naming an external linker (-extld, -extldflags), which runs a program"})
			}
		case i == 0 && o == "generate":
			out = append(out, risk{i, "a wildcard never approves go generate, which runs the commands its comments name"})
		case i > 0 && (a[0] == "run" || a[0] == "install") && strings.Contains(o, "@"):
			out = append(out, risk{i, "a wildcard never approves go " + a[0] + " of a module version (pkg@version): code from the network"})
		case i == 1 && a[0] == "env" && (o == "-w" || o == "-u"):
			out = append(out, risk{i, "a wildcard never approves go env -w, which changes how every later go command runs"})
		}
	}
	return out
}

// goProgramFlags are go flags (one dash or two) whose value is a program go runs.
var goProgramFlags = setOf("toolexec", "exec", "vettool")

// goLinkFlags pass flags to the linker, whose -extld and -extldflags run a program.
var goLinkFlags = setOf("ldflags", "gccgoflags")

// goFlagName is a go flag's name without its one or two dashes; "" for an argument.
func goFlagName(opt string) string {
	if !strings.HasPrefix(opt, "-") {
		return ""
	}
	return strings.TrimPrefix(opt[1:], "-")
}

// goFlagValue returns the value of the go flag a[i]: after its = or the next word.
func goFlagValue(a []string, i int) string {
	if _, v, ok := strings.Cut(a[i], "="); ok {
		return v
	}
	if i+1 < len(a) {
		return a[i+1]
	}
	return ""
}

// sedRisks: -f (a script from a file), and scripts whose commands run (e) or write (w, W).
func sedRisks(a []string) []risk {
	const reason = "a wildcard never approves a sed script that runs commands (e) or writes files (w)"
	var out []risk
	script := false // whether a -e or -f gave the script, so no plain argument is one
	for i := 0; i < len(a); i++ {
		o := a[i]
		switch {
		case shortHas(o, "f") || hasOpt(o, "--file"):
			script = true
			out = append(out, risk{i, "a wildcard never approves sed reading its script from a file"})
		case hasOpt(o, "--expression") || shortHas(o, "e"):
			script = true
			text, attached := sedAttached(o)
			if !attached && i+1 < len(a) {
				i++
				text = a[i]
			}
			if sedWrites(text) {
				out = append(out, risk{i, reason})
			}
		case o == "--line-length" || (len(o) > 2 && hasOpt(o, "--line-length") && !strings.Contains(o, "=")) ||
			(shortHas(o, "l") && strings.HasSuffix(o, "l") && !strings.ContainsAny(o, "i")):
			i++ // its value is the next word, not the script
		case strings.HasPrefix(o, "-"):
		case !script:
			script = true
			if sedWrites(o) {
				out = append(out, risk{i, reason})
			}
		}
	}
	return out
}

// sedAttached returns the script written in the same word as its option: --expression=S,
// or -eS and -neS (the rest of a cluster after its e).
func sedAttached(o string) (string, bool) {
	if strings.HasPrefix(o, "--") {
		_, v, ok := strings.Cut(o, "=")
		return v, ok
	}
	_, v, _ := strings.Cut(o[1:], "e")
	return v, v != ""
}

// sedWrites reports whether a sed script may run a command or write a file: an e, w or W
// command, or an s command with the e or w flag. Anything it cannot read counts as yes.
func sedWrites(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case strings.IndexByte(" \t\n;{}!,0123456789$~+", c) >= 0:
			i++
		case c == '/' || c == '\\':
			d := byte('/')
			if c == '\\' {
				if i+1 >= len(s) {
					return true
				}
				d, i = s[i+1], i+1
			}
			j := sedDelim(s, i+1, d)
			if j < 0 {
				return true
			}
			i = j + 1
			if i < len(s) && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		case c == 's' || c == 'y':
			if i+1 >= len(s) {
				return true
			}
			d := s[i+1]
			j := sedDelim(s, i+2, d)
			if j < 0 {
				return true
			}
			k := sedDelim(s, j+1, d)
			if k < 0 {
				return true
			}
			i = k + 1
			for i < len(s) && strings.IndexByte(";}\n", s[i]) < 0 {
				if c == 's' && (s[i] == 'e' || s[i] == 'w' || s[i] == 'W') {
					return true
				}
				i++
			}
		case strings.IndexByte("pPdDnNgGhHxlq=zQ", c) >= 0:
			i++
		case c == 'a' || c == 'i' || c == 'c' || c == ':' || c == 'b' || c == 't' || c == 'T' || c == 'r' || c == 'R' || c == '#':
			for i < len(s) && s[i] != '\n' && (c == 'a' || c == 'i' || c == 'c' || c == '#' || s[i] != ';') {
				i++
			}
		default: // e, w, W, F, v and anything unknown
			return true
		}
	}
	return false
}

// sedDelim returns the index of the next unescaped d in s from i, or -1.
func sedDelim(s string, i int, d byte) int {
	for ; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			continue
		}
		if s[i] == d {
			return i
		}
	}
	return -1
}
