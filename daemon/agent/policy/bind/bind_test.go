package bind

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentd/agentd/api"
)

// An exact grant binds every regular workspace file its line names, however it names
// it — a program, an argument, an option's value, an input redirection, a path after a
// cd, an absolute path or ~ into the workspace, a link inside it — and nothing outside.
// A name whose file is not known for sure makes the line unbindable, saying why.
func TestBindFilesNamesWhatTheLineRuns(t *testing.T) {
	ws := t.TempDir()
	put := func(name, body string) {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"check.py", "build.sh", "run.sh", "build.mk", "sub/x.sh", "data.csv"} {
		put(f, "contents of "+f)
	}
	os.Mkdir(filepath.Join(ws, "dir"), 0o700)
	if err := os.Symlink("/etc/hostname", filepath.Join(ws, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("check.py", filepath.Join(ws, "in")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(ws, "build.sh"), filepath.Join(ws, "abs-in")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(ws, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(ws, "data.csv"), filepath.Join(ws, "hard.csv")); err != nil {
		t.Fatal(err)
	}
	shell := func(line string) *api.Proposal {
		b, _ := json.Marshal(map[string]string{"command_line": line})
		return &api.Proposal{Command: "execute_shell", Args: b}
	}
	python := func(path string, args ...string) *api.Proposal {
		b, _ := json.Marshal(map[string]any{"path": path, "args": args})
		return &api.Proposal{Command: "execute_python_file", Args: b}
	}
	for _, c := range []struct {
		name string
		p    *api.Proposal
		want string // the bound paths, or "problem: " and a part of it
	}{
		{"interpreter_and_script", shell("python3 check.py"), "check.py"},
		{"shell_script", shell("sh build.sh"), "build.sh"},
		{"program_in_workspace", shell("./run.sh"), "run.sh"},
		{"makefile_option", shell("make -f build.mk"), "build.mk"},
		{"option_value", shell("make --file=build.mk"), "build.mk"},
		{"input_redirection", shell("sh < build.sh"), "build.sh"},
		{"every_command_of_the_line", shell("sh build.sh && ./run.sh | cat data.csv"), "build.sh data.csv run.sh"},
		{"after_cd", shell("cd sub && sh x.sh"), "sub/x.sh"},
		{"cd_that_may_fail", shell("cd sub || sh build.sh"), "build.sh"},
		{"cd_home", shell("cd sub; cd; sh build.sh"), "build.sh"},
		{"cd_up_and_back", shell("cd sub && cd .. && sh build.sh"), "build.sh"},
		{"absolute_into_workspace", shell("python3 " + filepath.Join(ws, "check.py")), "check.py"},
		{"home_is_not_the_workspace", shell("python3 ~/check.py"), ""},
		{"cd_home_may_fail_and_stay", shell("cd ~; python3 check.py"), "check.py"},
		{"link_inside", shell("python3 in"), "in"},
		{"absolute_link_inside", shell("sh abs-in"), "abs-in"},
		{"hard_linked_file", shell("cat hard.csv"), "hard.csv"},
		{"link_out_is_no_workspace_file", shell("cat out"), ""},
		{"folder_and_missing_names_nothing", shell("ls dir nothing.txt /etc/hostname"), ""},
		{"python_path_and_args", python("check.py", "data.csv", "-v"), "check.py data.csv"},
		{"dot_dot_is_unknown", shell("python3 sub/../check.py"), "problem: goes up a folder"},
		{"proc_is_unknown", shell("python3 /proc/self/cwd/check.py"), "problem: through /proc"},
		{"cd_dash_is_unknown", shell("cd - && sh build.sh"), "problem: cd -"},
		{"fifo_is_unknown", shell("sh pipe"), "problem: pipe is not a regular file"},
		{"not_plain_commands", shell("sh $(echo build.sh)"), "problem: it is not plain commands"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := Files(ws, c.p)
			var got string
			if b.Problem != "" {
				got = "problem: " + b.Problem
			} else {
				var names []string
				for _, f := range b.Files {
					names = append(names, f.Path)
					if body, _ := os.ReadFile(filepath.Join(ws, f.Path)); f.SHA256 != sha(string(body)) {
						t.Errorf("%s bound with sha %s, want the sha of what it holds (%q)", f.Path, f.SHA256, body)
					}
				}
				got = strings.Join(names, " ")
			}
			if strings.HasPrefix(c.want, "problem: ") && strings.HasPrefix(got, "problem: ") {
				if !strings.Contains(got, strings.TrimPrefix(c.want, "problem: ")) {
					t.Errorf("got %q, want a problem saying %q", got, c.want)
				}
				return
			}
			if got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

// Binding is bounded: past the files or the bytes one grant binds, the line is unbindable.
func TestBindFilesIsBounded(t *testing.T) {
	ws := t.TempDir()
	var names []string
	for i := range maxBoundFiles + 1 {
		n := fmt.Sprintf("f%d.sh", i)
		os.WriteFile(filepath.Join(ws, n), []byte(n), 0o600)
		names = append(names, n)
	}
	line := func(s string) *api.Proposal {
		b, _ := json.Marshal(map[string]string{"command_line": s})
		return &api.Proposal{Command: "execute_shell", Args: b}
	}
	if b := Files(ws, line("cat "+strings.Join(names[:maxBoundFiles], " "))); b.Problem != "" || len(b.Files) != maxBoundFiles {
		t.Errorf("%d files: %+v, want them bound", maxBoundFiles, b)
	}
	if b := Files(ws, line("cat "+strings.Join(names, " "))); !strings.Contains(b.Problem, fmt.Sprintf("more than %d workspace files", maxBoundFiles)) {
		t.Errorf("%d files: %+v, want the bound named", maxBoundFiles+1, b)
	}
	f, err := os.Create(filepath.Join(ws, "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(MaxBoundBytes + 1)
	f.Close()
	if b := Files(ws, line("./big.bin")); !strings.Contains(b.Problem, "big.bin: the files the line names hold more than 16 MiB") {
		t.Errorf("a file past the byte bound: %+v, want the bound named", b)
	}
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
