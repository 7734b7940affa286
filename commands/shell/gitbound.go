package shell

import (
	"cmp"
	_ "embed"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentd/agentd/api"
)

// gitBoundScript is the body of the git a bounded run's programs find in place of the
// real one: it gives git a value for every driver the repository's config names that runs
// none of them (see the script).
//
//go:embed gitbound.sh
var gitBoundScript string

// realGitAt is where a bounded run sees the real git, which only the script runs.
const realGitAt = "/agentd-git/git"

// boundGit is how a bounded run reaches git through the script: the real git's path on
// the host, and the paths the script is bound over — git on programPath, and git's own
// copy in its exec path, which it runs for the git commands it starts itself. Zero when
// git is not installed: there is nothing to bound.
type boundGit struct {
	real string
	over []string
	// held is the script's function held, set per run: heldConfigs.
	held string
}

// findGit finds the host's git and where the sandbox must show the script instead.
func findGit() boundGit {
	real, err := lookProgram("", "git")
	if err != nil {
		return boundGit{}
	}
	g := boundGit{real: real, over: []string{real}}
	cmd := exec.Command(real, "--exec-path")
	cmd.Env = []string{"PATH=" + programPath, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	if out, err := cmd.Output(); err == nil {
		if p := filepath.Join(strings.TrimSpace(string(out)), "git"); p != real && executable(p) {
			g.over = append(g.over, p)
		}
	}
	return g
}

// script is the script's text for a run that may (write) or may not write the workspace.
func (g boundGit) script(write bool) []byte {
	return []byte("#!/bin/sh\nreal=" + realGitAt + " write=" + strconv.FormatBool(write) + "\n" +
		allowedKeys(boundedGitKeys) + cmp.Or(g.held, "held() { return 1; }\n") + gitBoundScript)
}

// heldConfigs is the script's function held FILE, for a run as v shows it: whether FILE
// is a git config file that neither the run's programs nor a helper's, running meanwhile,
// can change, as the sandbox shows it: the local and worktree config of each repository
// prepare protected (bound read-only, each folder leading to them pinned, so their paths
// name those files for the whole run) that has no other name to write it by, and in a
// read-only run every file of the workspace but the helpers' folder, which their own
// runs write.
func (v view) heldConfigs(workspace string) string {
	in := func(p string) string { return api.QuoteWord(v.inside(workspace, p)) }
	pats := []string{}
	for _, p := range v.configs {
		pats = append(pats, in(p))
	}
	if v.readOnly {
		pats = append(pats, in(workspace)+"/*")
	}
	if len(pats) == 0 {
		return ""
	}
	return "held() {\n\tcase $1 in " + in(filepath.Join(workspace, helpersDir)) + "/*) return 1 ;; " +
		strings.Join(pats, " | ") + ") ;; *) return 1 ;; esac\n}\n"
}

// allowedKeys is the script's function allowed KEY: whether KEY matches one of patterns.
func allowedKeys(patterns []string) string {
	return "allowed() {\n\tcase $1 in " + strings.Join(patterns, " | ") + ") ;; *) return 1 ;; esac\n}\n"
}

// files are the pipes bwrap reads the script from, one per path it is bound over, in
// the order of args.
func (g boundGit) files(write bool) ([]*os.File, error) {
	var out []*os.File
	for range g.over {
		f, err := dataPipe(g.script(write)) // a few kilobytes
		if err != nil {
			closeAll(out)
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// args binds the real git at realGitAt and the script, read from descriptors fd, fd+1...,
// over git's paths.
func (g boundGit) args(a, bound []string, fd int) []string {
	a = append(dirsTo(a, realGitAt, bound), "--ro-bind", g.real, realGitAt)
	for i, p := range g.over {
		a = append(a, "--perms", "0555", "--ro-bind-data", strconv.Itoa(fd+i), p)
	}
	return a
}
