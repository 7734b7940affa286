package scripts_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/testutil"
)

// TestQuietlyBeatsWhileItRuns: a quiet step keeps its output in its log, says it still runs
// while it takes long (so the screen is never silent for a beat), and shows its output and
// status when it fails.
//
// A slow step runs until the screen shows the beats it waits for (it reads the screen,
// $SCREEN), not for a time; a step that must say nothing gets a beat longer than any test.
func TestQuietlyBeatsWhileItRuns(t *testing.T) {
	t.Parallel()
	// untilBeats is a step that echoes what, runs until the screen shows n beats, and
	// exits with rc.
	untilBeats := func(what string, n, rc int) string {
		return fmt.Sprintf(`sh -c 'echo %s; until [ "$(grep -c "still running" "$SCREEN")" -ge %d ]; do sleep 0.05; done; exit %d'`, what, n, rc)
	}
	tests := []struct {
		name    string
		cmd     string
		beat    string // AGENTD_BEAT_SECONDS
		wantRC  int
		want    []string // each must be on the screen
		wantRE  string   // and this must match it
		notWant []string
		inLog   string
	}{
		{"slow_step_says_it_still_runs", "quietly t.log " + untilBeats("noise", 2, 0), "1", 0,
			nil, `==> still running \((\d+)s so far\): sh -c echo noise; until .*\n(.*\n)*==> still running \((\d+)s so far\)`, []string{"noise\n"}, "noise"},
		{"quick_step_says_nothing", `quietly t.log echo noise`, "3600", 0, nil, "", []string{"noise", "still running"}, "noise"},
		{"failing_step_shows_its_output_and_status", `quietly t.log sh -c 'echo why; exit 3'`, "3600", 3,
			[]string{"error: `sh -c echo why; exit 3` failed (exit 3)", "why"}, "", []string{"still running"}, "why"},
		{"beating_shows_the_output_and_keeps_the_status", `beating "a slow step" ` + untilBeats("shown", 1, 4), "1", 4,
			[]string{"shown\n", "==> still running ("}, `still running \(\d+s so far\): a slow step\n`, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			logs := t.TempDir()
			screen := filepath.Join(logs, "screen")
			f, err := os.Create(screen)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			cmd := exec.Command("bash", "-c", ". ./lib.sh && "+tt.cmd)
			cmd.Env = append(os.Environ(), "AGENTD_LOGS="+logs, "AGENTD_BEAT_SECONDS="+tt.beat, "SCREEN="+screen)
			cmd.Stdout, cmd.Stderr = f, f
			err = cmd.Run()
			rc := 0
			if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
				rc = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(screen)
			if err != nil {
				t.Fatal(err)
			}
			out := string(b)
			if rc != tt.wantRC {
				t.Errorf("exit %d, want %d; output:\n%s", rc, tt.wantRC, out)
			}
			testutil.CheckContains(t, "output", out, tt.want, tt.notWant)
			if tt.wantRE != "" {
				m := regexp.MustCompile(tt.wantRE).FindStringSubmatch(out)
				if m == nil {
					t.Errorf("output does not match %q:\n%s", tt.wantRE, out)
				} else if len(m) == 4 && atoi(m[1]) >= atoi(m[3]) {
					t.Errorf("the beats do not count up (%ss, then %ss):\n%s", m[1], m[3], out)
				}
			}
			if tt.inLog != "" {
				if b, _ := os.ReadFile(filepath.Join(logs, "t.log")); !strings.Contains(string(b), tt.inLog) {
					t.Errorf("the log lacks %q:\n%s", tt.inLog, b)
				}
			}
		})
	}
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// TestGoBuildSaysHowFarItGot: a long build's beats count the packages built of those it
// needs, and its own output (go: downloading, the package list, compiler warnings) goes
// to the log, not the screen. The build is a stand-in go that builds two of its three
// packages, then waits until the screen has said so.
func TestGoBuildSaysHowFarItGot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	stub := `#!/bin/sh
case "$1" in
list) printf 'example.com/a\nexample.com/b/c\nexample.com/d\n' ;;
build)
	echo 'go: downloading example.com/x v1.0.0' >&2
	printf 'example.com/a\n# example.com/b/c\ncgo-gcc-prolog: warning: noise\nexample.com/b/c\n' >&2
	until grep -q '2 of 3 packages built' "$SCREEN"; do sleep 0.05; done ;;
*) exit 2 ;;
esac
`
	out := goBuildWithStub(t, dir, stub, `go_build b.log "building the example" build -o out/ example.com/d`)
	if !regexp.MustCompile(`==> still running \(\d+s so far\): building the example — 2 of 3 packages built\n`).MatchString(out) {
		t.Errorf("no beat says 2 of 3 packages built:\n%s", out)
	}
	for _, noise := range []string{"go: downloading", "example.com/a\n", "cgo-gcc-prolog"} {
		if strings.Contains(out, noise) {
			t.Errorf("the screen shows the build's own output %q:\n%s", noise, out)
		}
	}
	if log := readFile(t, filepath.Join(dir, "b.log")); !strings.Contains(log, "go: downloading example.com/x") || !strings.Contains(log, "$ go build -v -o out/ example.com/d") {
		t.Errorf("the log lacks the build's output:\n%s", log)
	}
}

// TestGoInstallCountsInTheModulesOwnVersions: go install MODULE@VERSION builds with that
// module's go.mod, not this one's, so its total is listed there (in this module's
// versions the Ollama build's total came out a quarter short: "503 of 402 built").
func TestGoInstallCountsInTheModulesOwnVersions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	if err := os.Mkdir(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	stub := `#!/bin/sh
case "$1" in
mod) printf '{\n\t"Path": "example.com/m",\n\t"Dir": "%s"\n}\n' "$MODDIR" ;;
list) if [ "$PWD" = "$MODDIR" ]; then printf 'm/a\nm/b\nm/c\nm/d\n'; else printf 'example.com/a\n'; fi ;;
install)
	printf 'm/a\nm/b\n' >&2
	i=0
	until grep -q 'packages built' "$SCREEN" || [ $i -gt 600 ]; do sleep 0.05; i=$((i+1)); done ;;
*) exit 2 ;;
esac
`
	if out := goBuildWithStub(t, dir, stub, `go_build m.log "building m" install -ldflags "-X=a.b=c" example.com/m@v1.2.3`, "MODDIR="+mod); !strings.Contains(out, "2 of 4 packages built") {
		t.Errorf("the beats do not count the module's own 4 packages:\n%s", out)
	}
}

// goBuildWithStub runs line (a go_build call) after lib.sh with stub as the go on PATH
// and env added, its logs in dir, and returns what it showed on the screen (the file
// SCREEN, which the stub may wait on).
func goBuildWithStub(t *testing.T, dir, stub, line string, env ...string) string {
	t.Helper()
	screen := filepath.Join(dir, "screen")
	if err := os.WriteFile(filepath.Join(dir, "go"), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(screen)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command("bash", "-c", ". ./lib.sh && "+line)
	cmd.Env = append(os.Environ(), append([]string{"PATH=" + dir + ":" + os.Getenv("PATH"), "AGENTD_LOGS=" + dir, "AGENTD_BEAT_SECONDS=1", "SCREEN=" + screen}, env...)...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Run(); err != nil {
		t.Fatalf("go_build: %v; screen:\n%s", err, readFile(t, screen))
	}
	return readFile(t, screen)
}

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
