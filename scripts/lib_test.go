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
