package shell

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/internal/testutil"
)

func TestSpecs(t *testing.T) {
	shell := mustShell(t, Options{Sandbox: SandboxNone})
	clone, err := NewCloneRepository(Options{})
	if err != nil {
		t.Skipf("git missing: %v", err)
	}
	all := []commands.Command{shell, clone}
	if py, err := NewExecutePythonFile(Options{Sandbox: SandboxNone}); err == nil {
		all = append(all, py)
	}
	want := map[string]struct {
		class   commands.Class
		subject string
	}{
		"execute_shell":       {commands.ClassExecute, "command_line"},
		"execute_python_file": {commands.ClassExecute, "path"},
		"clone_repository":    {commands.ClassNetwork, "url"},
	}
	for _, c := range all {
		s := c.Spec()
		t.Run(s.Name, func(t *testing.T) {
			w := want[s.Name]
			if s.Class != w.class || s.Subject != w.subject || s.Idempotent {
				t.Errorf("class %s subject %q idempotent %v; want %s, %q, false", s.Class, s.Subject, s.Idempotent, w.class, w.subject)
			}
			if s.Params.Type != "object" || s.Params.CheckGrammarLimits() != nil {
				t.Errorf("params unfit for a command set: %v", s.Params.CheckGrammarLimits())
			}
			if s.Params.Properties.Get(s.Subject) == nil {
				t.Errorf("subject %q is not a param", s.Subject)
			}
			if len(s.Description) > 30 {
				t.Errorf("description %q is long for the prompt budget", s.Description)
			}
			testutil.GoldenJSON(t, filepath.Join("testdata", "schemas", s.Name+".json"), s.Params)
		})
	}
}

func TestExecuteShell(t *testing.T) {
	t.Setenv("AGENTD_TEST_SECRET", "hunter2-do-not-leak")
	t.Setenv("AGENTD_TEST_PASSED", "passed-on")
	tests := []struct {
		name      string
		line      string
		opts      Options
		want      []string // substrings of the result
		notWant   []string
		wantEnd   string
		wantFiles []string // created in the workspace
	}{
		{name: "runs_in_workspace", line: "pwd; echo hi > made.txt", want: []string{"{ws}\n"}, wantEnd: "exit status 0", wantFiles: []string{"made.txt"}},
		{name: "env_scrubbed", line: "env | sort", opts: Options{PassEnv: []string{"AGENTD_TEST_PASSED", "AGENTD_TEST_UNSET"}},
			want:    []string{"PATH=/usr/local/bin:/usr/bin:/bin\n", "HOME=", "LANG=C.UTF-8\n", "TERM=dumb\n", "AGENTD_TEST_PASSED=passed-on\n"},
			notWant: []string{"hunter2", "AGENTD_TEST_SECRET", "AGENTD_TEST_UNSET", "GOPATH", "USER=", "HOME={ws}\n"}},
		// HOME is an empty folder of the run's own, never the workspace: no dotfile the
		// agent wrote (.curlrc, .wgetrc, .netrc…) is found there, and none outlives the run.
		{name: "home_is_empty_and_not_the_workspace", line: `echo planted > .curlrc; ls -A "$HOME" | sed 's/^/in home: /'; test "$HOME" -ef . && echo home-is-workspace; echo x > "$HOME/f" && cat "$HOME/f"`,
			want: []string{"x\n"}, notWant: []string{"in home:", "home-is-workspace"}, wantEnd: "exit status 0"},
		{name: "exit_status_reported", line: "echo to-stdout; echo to-stderr >&2; exit 2",
			want: []string{"to-stdout\nto-stderr\n"}, wantEnd: "\nexit status 2"},
		{name: "stdin_is_dev_null", line: "cat; echo read-eof", want: []string{"read-eof\n"}, wantEnd: "exit status 0"},
		{name: "no_output", line: "true", want: []string{"(no output)\n"}, wantEnd: "exit status 0"},
		{name: "output_capped", line: "head -c 100000 /dev/zero | tr '\\0' a; echo tail-marker", opts: Options{OutputCap: 1000},
			want: []string{strings.Repeat("a", 1000) + "\n[output cut at 1000 of 100012 bytes]\n"}, notWant: []string{"tail-marker"}, wantEnd: "exit status 0"},
		{name: "cap_keeps_whole_characters", line: "printf 'ab\\342\\202\\254cd'", opts: Options{OutputCap: 4},
			want: []string{"ab\n[output cut at 2 of 7 bytes]"}},
		{name: "endless_output_killed", line: "yes", opts: Options{OutputCap: 100},
			want: []string{"[output cut at 100 bytes; killed after writing more than"}, wantEnd: "signal: killed"},
		{name: "background_left_running_is_killed", line: "sleep 1000.4242 & echo started",
			want: []string{"started\n"}, wantEnd: "exit status 0"},
	}
	for _, mode := range modes(t) {
		for _, tt := range tests {
			t.Run(mode+"/"+tt.name, func(t *testing.T) {
				ws := workspace(t)
				o := tt.opts
				o.Sandbox = mode
				// A command that waited for what it left in the background would time out.
				got, err := run(context.Background(), t, mustShell(t, o), ws, shellLine(tt.line), 20*time.Second)
				if err != nil {
					t.Fatalf("error %v; output:\n%s", err, got)
				}
				checkResult(t, got, ws, tt.want, tt.notWant)
				if !strings.HasSuffix(got, tt.wantEnd) {
					t.Errorf("result does not end with %q:\n%s", tt.wantEnd, got)
				}
				for _, f := range tt.wantFiles {
					if _, err := os.Stat(filepath.Join(ws, f)); err != nil {
						t.Error(err)
					}
				}
				waitGone(t, "1000.4242")
			})
		}
	}
}

// TestExecuteShellStops checks that a timeout or a cancel kills the shell and every process
// it started, and returns promptly with what was written so far.
//
// The line's last program is a sleep of its own (marker+"9"): once it runs, "started" has
// been written, so the cancel waits for it rather than for a time a loaded machine may
// not have reached yet.
func TestExecuteShellStops(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration
		cancel  string // "": never; "started": once the line has written its output; "before": before it runs
		wantErr error
	}{
		{"timeout_kills_children", 700 * time.Millisecond, "", context.DeadlineExceeded},
		{"cancel_kills_children", time.Minute, "started", context.Canceled},
		{"already_cancelled_does_not_start", time.Minute, "before", context.Canceled},
	}
	for _, mode := range modes(t) {
		for i, tt := range tests {
			t.Run(mode+"/"+tt.name, func(t *testing.T) {
				marker := fmt.Sprintf("100.%d%d", os.Getpid(), i)
				last := "sleep " + marker + "9"
				line := fmt.Sprintf("sleep %s & sh -c 'sleep %s' & echo started; %s", marker, marker, last)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var wrote atomic.Bool                // the line reached its last sleep: "started" is written
				var stopAt atomic.Pointer[time.Time] // when the cancel or the timeout came
				begin := time.Now()
				if tt.cancel == "" {
					at := begin.Add(tt.timeout)
					stopAt.Store(&at)
				}
				watched := make(chan struct{})
				go func() {
					defer close(watched)
					if testutil.Wait(time.Minute, func() bool { return ctx.Err() != nil || len(processesRunning(last)) > 0 }) && ctx.Err() == nil {
						wrote.Store(true)
						if tt.cancel == "started" {
							now := time.Now()
							stopAt.Store(&now)
							cancel() // the person cancels the run
						}
					}
				}()
				if tt.cancel == "before" {
					stopAt.Store(&begin)
					cancel()
				}
				got, err := run(ctx, t, mustShell(t, Options{Sandbox: mode}), workspace(t), shellLine(line), tt.timeout)
				returned := time.Now()
				cancel()
				<-watched
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error %v; want %v", err, tt.wantErr)
				}
				// commands.Run keeps the output only if Execute returned within its short
				// grace, which a loaded machine may miss; the kill check below still holds.
				// A timeout may fire before the line wrote anything: then there is nothing to keep.
				if strings.Contains(err.Error(), "killed with everything") && wrote.Load() &&
					!strings.Contains(got, "started\n") {
					t.Errorf("partial output lost: %q", got)
				}
				// A hang bound, not a speed bound: the sleeps last 100 s, so a stop that
				// waited for them shows, while a loaded machine's slow start does not count.
				if at := stopAt.Load(); at == nil {
					t.Errorf("Run returned before it was stopped: %v", err)
				} else if d := returned.Sub(*at); d > 30*time.Second {
					t.Errorf("took %s to stop", d)
				}
				waitGone(t, marker)
			})
		}
	}
}

func TestExecuteShellRefusals(t *testing.T) {
	c := mustShell(t, Options{Sandbox: SandboxNone})
	tests := []struct {
		name string
		ws   string
		line string
		want string
	}{
		{"empty_line", "{ws}", "  ", "empty command_line"},
		{"nul_byte", "{ws}", "echo a\x00b", "NUL byte"},
		{"no_workspace", "", "true", "no workspace folder"},
		{"missing_workspace", "/nonexistent/agentd-ws", "true", "not usable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := strings.ReplaceAll(tt.ws, "{ws}", workspace(t))
			_, err := run(context.Background(), t, c, ws, shellLine(tt.line), time.Minute)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v; want one saying %q", err, tt.want)
			}
		})
	}
}

func TestOptions(t *testing.T) {
	failing := filepath.Join(t.TempDir(), "bwrap")
	os.WriteFile(failing, []byte("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"), 0o755)
	tests := []struct {
		name     string
		opts     Options
		wantErr  string // "" for success
		sentinel error
	}{
		{"bad_mode", Options{Sandbox: "docker"}, `sandbox "docker"`, nil},
		{"pass_env_fixed", Options{PassEnv: []string{"PATH"}}, "PATH is set by agentd", nil},
		{"pass_env_bad_name", Options{PassEnv: []string{"A=B"}}, "not a variable name", nil},
		{"read_only_relative", Options{ReadOnlyPaths: []string{"opt"}}, "clean absolute path", nil},
		{"read_only_missing", Options{ReadOnlyPaths: []string{"/nonexistent/agentd"}}, "no such file", nil},
		{"hide_root", Options{HidePaths: []string{"/"}}, "other than /", nil},
		{"bwrap_required_missing", Options{Sandbox: SandboxBwrap, Bwrap: "/nonexistent/bwrap"}, "not an executable", ErrNoSandbox},
		{"bwrap_required_broken", Options{Sandbox: SandboxBwrap, Bwrap: failing}, "No permissions to create new namespace", ErrNoSandbox},
		{"auto_broken_builds_a_refusing_command", Options{Sandbox: SandboxAuto, Bwrap: failing}, "", nil},
		{"none_ignores_bwrap", Options{Sandbox: SandboxNone, Bwrap: "/nonexistent/bwrap"}, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewExecuteShell(tt.opts)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v; want one saying %q", err, tt.wantErr)
			}
			if tt.sentinel != nil && !errors.Is(err, tt.sentinel) {
				t.Errorf("error %v is not %v", err, tt.sentinel)
			}
		})
	}
}

// TestAutoWithoutSandbox checks that mode auto never falls back: without a working
// sandbox the commands are built, say in their description that they are unavailable, and
// refuse to run with an error that names the fixes; nothing runs.
func TestAutoWithoutSandbox(t *testing.T) {
	failing := filepath.Join(t.TempDir(), "bwrap")
	os.WriteFile(failing, []byte("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"), 0o755)
	for _, tt := range []struct {
		name   string
		bwrap  string
		reason string
	}{
		{"bwrap_missing", "/nonexistent/bwrap", "bwrap /nonexistent/bwrap is not an executable file"},
		{"bwrap_broken", failing, "No permissions to create new namespace"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := Options{Bwrap: tt.bwrap}
			if _, err := CheckSandbox(o); !errors.Is(err, ErrNoSandbox) || !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("CheckSandbox: %v; want ErrNoSandbox saying %q", err, tt.reason)
			}
			if line, ok := DescribeSandbox(o); ok || !strings.Contains(line, "refused") {
				t.Errorf("DescribeSandbox = %q, %v; want it to say the commands are refused", line, ok)
			}
			c := mustShell(t, o)
			if d := c.Spec().Description; d != "Unavailable: no sandbox" {
				t.Errorf("description %q; want it to say the command is unavailable", d)
			}
			ws := workspace(t)
			got, err := run(context.Background(), t, c, ws, shellLine("echo ran > ran.txt"), time.Minute)
			for _, w := range []string{"refused", tt.reason, "apt-get install bubblewrap", `sandbox = "none"`, "user namespaces"} {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("result %q, error %v; want an error saying %q", got, err, w)
				}
			}
			if _, err := os.Stat(filepath.Join(ws, "ran.txt")); err == nil {
				t.Error("the command ran unsandboxed")
			}
			if py, err := NewExecutePythonFile(o); err == nil {
				os.WriteFile(filepath.Join(ws, "x.py"), []byte("open('ran.txt', 'w')\n"), 0o644)
				if _, err := run(context.Background(), t, py, ws, map[string]any{"path": "x.py"}, time.Minute); err == nil || !strings.Contains(err.Error(), "refused") {
					t.Errorf("execute_python_file: %v; want it refused", err)
				}
			}
			if _, err := os.Stat(filepath.Join(ws, "ran.txt")); err == nil {
				t.Error("the python file ran unsandboxed")
			}
		})
	}
	if b, err := CheckSandbox(Options{Sandbox: SandboxNone}); b != "" || err != nil {
		t.Errorf("CheckSandbox(none) = %q, %v", b, err)
	}
}

func TestExecutePythonFile(t *testing.T) {
	if _, err := lookProgram("", "python3"); err != nil {
		t.Skipf("python3 not installed, execute_python_file not tested: %v", err)
	}
	if _, err := NewExecutePythonFile(Options{Python: "/nonexistent/python3"}); !errors.Is(err, ErrNoPython) {
		t.Errorf("missing python: %v; want ErrNoPython", err)
	}
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "evil.py"), []byte("print('escaped')\n"), 0o644)
	tests := []struct {
		name    string
		args    map[string]any
		want    string // in the result, or in the error when wantErr
		wantErr bool
	}{
		{name: "runs_with_args", args: map[string]any{"path": "tools/hello.py", "args": []string{"one", "two words"}},
			want: "cwd={ws}\nargv=['one', 'two words']\nhome-is-workspace=False\nexit status 0"},
		{name: "exit_status_reported", args: map[string]any{"path": "fail.py"}, want: "boom\nexit status 3"},
		{name: "dot_slash_path", args: map[string]any{"path": "./fail.py"}, want: "exit status 3"},
		{name: "parent_refused", args: map[string]any{"path": "../evil.py"}, want: "leaves the workspace", wantErr: true},
		{name: "absolute_refused", args: map[string]any{"path": filepath.Join(outside, "evil.py")}, want: "is absolute", wantErr: true},
		{name: "symlink_out_refused", args: map[string]any{"path": "link.py"}, want: "leads outside the workspace", wantErr: true},
		{name: "not_py_refused", args: map[string]any{"path": "notes.txt"}, want: "not a .py file", wantErr: true},
		{name: "missing_file", args: map[string]any{"path": "missing.py"}, want: "write it first", wantErr: true},
		{name: "folder_refused", args: map[string]any{"path": "pkg.py"}, want: "write it first", wantErr: true},
	}
	for _, mode := range modes(t) {
		c, err := NewExecutePythonFile(Options{Sandbox: mode})
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range tests {
			t.Run(mode+"/"+tt.name, func(t *testing.T) {
				ws := workspace(t)
				os.MkdirAll(filepath.Join(ws, "tools"), 0o755)
				os.MkdirAll(filepath.Join(ws, "pkg.py"), 0o755)
				os.WriteFile(filepath.Join(ws, "tools/hello.py"), []byte(
					"import os, sys\nprint('cwd=' + os.getcwd())\nprint('argv=' + repr(sys.argv[1:]))\nprint('home-is-workspace=' + str(os.path.samefile(os.environ['HOME'], '.')))\n"), 0o644)
				os.WriteFile(filepath.Join(ws, "fail.py"), []byte("import sys\nprint('boom', file=sys.stderr)\nsys.exit(3)\n"), 0o644)
				os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("print(1)\n"), 0o644)
				os.Symlink(filepath.Join(outside, "evil.py"), filepath.Join(ws, "link.py"))
				got, err := run(context.Background(), t, c, ws, tt.args, 30*time.Second)
				want := strings.ReplaceAll(tt.want, "{ws}", ws)
				if tt.wantErr {
					if err == nil || !strings.Contains(err.Error(), want) {
						t.Fatalf("error %v (output %q); want one saying %q", err, got, want)
					}
					return
				}
				if err != nil || !strings.Contains(got, want) {
					t.Errorf("got %q, %v; want %q in it", got, err, want)
				}
			})
		}
	}
}

// TestCheckGivesExitStatusAndOutput: a check line runs as execute_shell does and its exit
// status comes back as a number beside its output; one killed says why.
func TestCheckGivesExitStatusAndOutput(t *testing.T) {
	bwrap := bwrapHere(t)
	c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrap, OutputCap: 64}).(Checker)
	ws := workspace(t)
	env := commands.Env{Workspace: ws, AgentID: "a-test", Profile: commands.Profile{Bounded: true}}
	tests := []struct {
		name    string
		line    string
		timeout time.Duration
		exit    int
		output  string // in Output
		stopped string // in Stopped
	}{
		{"exit_zero_with_output", "echo found it", time.Minute, 0, "found it\n", ""},
		{"exit_one", "echo nothing; exit 1", time.Minute, 1, "nothing\n", ""},
		{"exit_status_kept", "exit 7", time.Minute, 7, "", ""},
		{"output_capped", "printf '%01000d' 0", time.Minute, 0, strings.Repeat("0", 64), ""},
		{"hang_is_cut", "echo started; sleep 600", 3 * time.Second, -1, "started", "time ran out"},
		{"flood_is_cut", "yes", time.Minute, -1, "y\ny\n", "more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
			defer cancel()
			r, err := c.Check(ctx, env, tt.line)
			if err != nil {
				t.Fatal(err)
			}
			if r.Exit != tt.exit || !strings.Contains(r.Output, tt.output) || !strings.Contains(r.Stopped, tt.stopped) ||
				(tt.stopped == "") != (r.Stopped == "") || len(r.Output) > 64 {
				t.Errorf("got exit %d, output %q, stopped %q; want exit %d, output with %q, stopped with %q",
					r.Exit, r.Output, r.Stopped, tt.exit, tt.output, tt.stopped)
			}
		})
	}
}

// TestCheckRefusals: an empty line or a NUL is refused before anything runs, and without
// a sandbox a bounded check is refused rather than run unconfined.
func TestCheckRefusals(t *testing.T) {
	ws := workspace(t)
	c := mustShell(t, Options{Sandbox: SandboxNone}).(Checker)
	for _, line := range []string{"", "  ", "true\x00"} {
		if r, err := c.Check(context.Background(), commands.Env{Workspace: ws}, line); err == nil {
			t.Errorf("line %q: got %+v, want a refusal", line, r)
		}
	}
	r, err := c.Check(context.Background(), commands.Env{Workspace: ws, Profile: commands.Profile{Bounded: true}}, "touch x")
	if err == nil || !strings.Contains(err.Error(), "sandbox") {
		t.Errorf("bounded check without a sandbox: got %+v, %v; want a refusal naming the sandbox", r, err)
	}
	if _, err := os.Stat(filepath.Join(ws, "x")); err == nil {
		t.Error("the refused check ran")
	}
}

// TestCheckNetworkOnlyWhereConfigGrantsIt: Profile.Network keeps the network the config
// grants, and grants none the config does not.
func TestCheckNetworkOnlyWhereConfigGrantsIt(t *testing.T) {
	bwrap := slirpHere(t)
	ws := workspace(t)
	env := commands.Env{Workspace: ws, Profile: commands.Profile{Bounded: true, Network: true}}
	for _, granted := range []bool{true, false} {
		c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrap, Network: granted}).(Checker)
		r, err := c.Check(context.Background(), env, onlineLine)
		if err != nil {
			t.Fatal(err)
		}
		if online := strings.Contains(r.Output, "online"); online != granted {
			t.Errorf("config network %v: online %v (%+v)", granted, online, r)
		}
	}
}
