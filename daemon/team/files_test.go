package team

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/daemon/client"
)

// Chat names a workflow by bare name (in the teams directory) or absolute path; `..`
// tricks and relative paths are refused with what to give instead.
func TestResolveWorkflow(t *testing.T) {
	for _, tc := range []struct {
		name, dir, file, want, err string
	}{
		{"bare_name", "/srv/teams", "software_company", "/srv/teams/software_company.toml", ""},
		{"bare_name_with_ext", "/srv/teams", "software_company.toml", "/srv/teams/software_company.toml", ""},
		{"absolute_path", "", "/etc/agentd/flow.toml", "/etc/agentd/flow.toml", ""},
		{"absolute_path_with_dir", "/srv/teams", "/etc/agentd/flow.toml", "/etc/agentd/flow.toml", ""},
		{"dot_dot_name", "/srv/teams", "..", "", `"..\" is refused`},
		{"dot_dot_up", "/srv/teams", "../../etc/passwd", "", `"..\" is refused`},
		{"dot_dot_in_absolute", "", "/srv/teams/../../etc/passwd", "", `"..\" is refused`},
		{"dot_dot_backslash", "/srv/teams", `..\x`, "", `"..\" is refused`},
		{"relative_path_in_dir", "/srv/teams", "sub/x", "", "give a bare name"},
		{"bare_name_without_dir", "", "software_company", "", "no teams directory is configured"},
		{"empty", "/srv/teams", "  ", "", "no workflow named"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveWorkflow(tc.dir, tc.file)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), strings.ReplaceAll(tc.err, `\"`, `"`)) || !errors.Is(err, client.ErrBadRequest) {
					t.Fatalf("ResolveWorkflow(%q, %q) = %q, %v; want an error with %q", tc.dir, tc.file, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ResolveWorkflow(%q, %q) = %q, %v; want %q", tc.dir, tc.file, got, err, tc.want)
			}
		})
	}
}

func TestReadWorkflowAndList(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"b.toml", "a.toml", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("name = \"x\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(filepath.Join(dir, "d.toml"), 0o755)
	names, err := Workflows(dir)
	if err != nil || !slices.Equal(names, []string{"a", "b"}) {
		t.Fatalf("Workflows = %v, %v; want [a b]", names, err)
	}
	path, src, err := ReadWorkflow(dir, "a")
	if err != nil || path != filepath.Join(dir, "a.toml") || string(src) != "name = \"x\"\n" {
		t.Fatalf("ReadWorkflow(a) = %q %q %v", path, src, err)
	}
	if _, _, err := ReadWorkflow(dir, "missing"); !errors.Is(err, client.ErrNotFound) || !strings.Contains(err.Error(), `no workflow "missing" in the teams directory`) {
		t.Errorf("missing name: %v", err)
	}
	if _, _, err := ReadWorkflow(dir, filepath.Join(dir, "none.toml")); !errors.Is(err, client.ErrNotFound) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing path: %v", err)
	}
	if _, _, err := ReadWorkflow(dir, "d"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory: %v", err)
	}
	if got, err := Workflows(""); err != nil || got != nil {
		t.Errorf("no dir: %v %v", got, err)
	}
}
