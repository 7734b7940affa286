package scripts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/testutil"
)

// TestEnsureSandboxInstallsBubblewrapAndSlirp4netns: ensure_sandbox apt-installs what is
// missing of bubblewrap and slirp4netns, and when it cannot (apt fails, no root and no
// sudo) says what that costs and goes on; with both there it installs nothing. apt-get,
// dpkg and id are stubs on a PATH without the host's bwrap.
func TestEnsureSandboxInstallsBubblewrapAndSlirp4netns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		uid       string
		aptRC     string
		have      []string // programs already installed
		wantApt   []string // in apt-get's calls
		wantSaid  []string
		notWanted []string
	}{
		{"installs_both_as_root", "0", "0", nil, []string{"install -y -qq bubblewrap", "install -y -qq slirp4netns"}, []string{"installing Debian packages: bubblewrap"}, []string{"not installed"}},
		{"installs_what_is_missing", "0", "0", []string{"bwrap"}, []string{"install -y -qq slirp4netns"}, nil, []string{"bubblewrap", "not installed"}},
		{"apt_failing_is_not_fatal", "0", "100", nil, []string{"install -y -qq bubblewrap"},
			[]string{"bubblewrap not installed: agentd refuses shell and python commands until it is (apt-get install bubblewrap)", "slirp4netns not installed"}, nil},
		{"no_root_no_sudo_is_not_fatal", "1000", "0", nil, nil,
			[]string{"need root (or sudo) to apt-get install bubblewrap", "bubblewrap not installed", "slirp4netns not installed"}, nil},
		{"both_there_installs_nothing", "0", "0", []string{"bwrap", "slirp4netns"}, nil, nil, []string{"installing", "not installed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			bin := filepath.Join(dir, "bin")
			os.Mkdir(bin, 0o755)
			for _, tool := range []string{"mkdir", "sleep", "tail", "cat"} {
				p, err := exec.LookPath(tool)
				if err != nil {
					t.Skipf("%s: %v", tool, err)
				}
				os.Symlink(p, filepath.Join(bin, tool))
			}
			stubs := map[string]string{
				"id":      "echo " + tt.uid,
				"dpkg":    "exit 1",
				"apt-get": `echo "$*" >>"$APT_CALLS"; case "$1" in install) exit ` + tt.aptRC + ` ;; esac`,
			}
			for _, p := range tt.have {
				stubs[p] = "exit 0"
			}
			for name, body := range stubs {
				if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			calls := filepath.Join(dir, "apt-calls")
			bash, err := exec.LookPath("bash")
			if err != nil {
				t.Skip(err)
			}
			cmd := exec.Command(bash, "-c", ". ./lib.sh && ensure_sandbox && echo ENSURED")
			cmd.Env = []string{"PATH=" + bin, "AGENTD_LOGS=" + dir, "AGENTD_BEAT_SECONDS=3600", "APT_CALLS=" + calls}
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.HasSuffix(string(out), "ENSURED\n") {
				t.Fatalf("ensure_sandbox failed or stopped the script: %v\n%s", err, out)
			}
			got, _ := os.ReadFile(calls)
			testutil.CheckContains(t, "apt-get's calls", string(got), tt.wantApt, nil)
			if len(tt.wantApt) == 0 && len(got) > 0 {
				t.Errorf("apt-get ran: %s", got)
			}
			testutil.CheckContains(t, "what ensure_sandbox said", string(out), tt.wantSaid, tt.notWanted)
		})
	}
}

// TestRunAndInstallEnsureTheSandbox: the README's Run command and the production install
// both install the sandbox before agentd is built, so that on a fresh machine the demo
// agent's shell commands run instead of being refused.
func TestRunAndInstallEnsureTheSandbox(t *testing.T) {
	t.Parallel()
	for _, script := range []string{"run.sh", "install.sh"} {
		text := readFile(t, script)
		sandbox := regexp.MustCompile(`(?m)^(\[ -n "\$dest" \] \|\| )?ensure_sandbox\b`).FindStringIndex(text)
		build := strings.Index(text, "build_agentd")
		if sandbox == nil {
			t.Errorf("%s does not call ensure_sandbox: a fresh machine gets no bubblewrap or slirp4netns", script)
		} else if build >= 0 && build < sandbox[0] {
			t.Errorf("%s builds agentd before it ensures the sandbox", script)
		}
	}
}
