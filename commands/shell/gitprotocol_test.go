package shell

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentd/agentd/commands"
)

// TestBoundedGitRunsNoRepositoryTransportProgram: unasked (bounded, with +write, and as a
// schedule's check with the network), git runs no program a repository's config names
// for a transport, though the repository allows the file protocol itself
// (protocol.file.allow overrides protocol.allow) or names an ext:: URL: GIT_ALLOW_PROTOCOL
// and the command-scope protocol.NAME.allow keep every transport but https off — with every
// key allowed, so these walls alone, not the allow list that takes none of those keys.
func TestBoundedGitRunsNoRepositoryTransportProgram(t *testing.T) {
	allowEveryKey(t)
	bwrap := bwrapHere(t)
	for _, p := range []struct {
		name    string
		o       Options
		prof    commands.Profile
		allowed string
	}{
		{"bounded", Options{}, commands.Profile{Bounded: true}, "GIT_ALLOW_PROTOCOL=\n"},
		{"bounded_write", Options{}, commands.Profile{Bounded: true, Write: true}, "GIT_ALLOW_PROTOCOL=\n"},
		{"check_with_network", Options{Network: true}, commands.Profile{Bounded: true, Network: true}, "GIT_ALLOW_PROTOCOL=https\n"},
	} {
		t.Run(p.name, func(t *testing.T) {
			p.o.Sandbox, p.o.Bwrap = SandboxBwrap, bwrap
			if p.o.Network {
				slirpHere(t)
			}
			c := mustShell(t, p.o)
			ws := workspace(t)
			gitRepo(t, filepath.Join(ws, "other"))
			gitRepo(t, filepath.Join(ws, "proj"))
			cfg := "[protocol \"file\"]\n\tallow = always\n[protocol \"ext\"]\n\tallow = always\n" +
				"[remote \"origin\"]\n\turl = ../other\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n" +
				"\tuploadpack = \"echo AGENT-CODE-RAN >&2; touch ../pwned; git-upload-pack\"\n" +
				"[remote \"ext\"]\n\turl = \"ext::sh -c touch% ../pwned-ext\"\n"
			f, err := os.OpenFile(filepath.Join(ws, "proj", ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(cfg)
			f.Close()
			line := "cd proj && env | grep GIT_ALLOW_PROTOCOL; git ls-remote origin; git fetch origin; git fetch ext"
			r, err := c.(Checker).Check(context.Background(), commands.Env{Workspace: ws, AgentID: "a-test", Profile: p.prof}, line)
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, r.Output, "", []string{p.allowed, "transport 'file' not allowed", "transport 'ext' not allowed"}, []string{"AGENT-CODE-RAN"})
			for _, name := range []string{"pwned", "pwned-ext"} {
				if _, err := os.Stat(filepath.Join(ws, name)); err == nil {
					t.Errorf("a transport program of the repository's wrote %s:\n%s", name, r.Output)
				}
			}
		})
	}
}
