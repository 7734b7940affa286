package team

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentd/agentd/daemon/client"
)

// Workflow files named from chat (/agent team FILE TASK). Chat has no file to upload, so
// FILE names one on the daemon's machine: an absolute path, or a bare name looked up in
// the configured directory ([teams] dir). A chat message is untrusted text, so `..`
// anywhere is refused rather than cleaned away.

// maxWorkflowFile is the largest workflow file read, as StartTeam takes.
const maxWorkflowFile = 256 << 10

// ResolveWorkflow returns the file a chat's FILE names: an absolute path as is, or
// NAME (NAME.toml) in dir. Errors say what to give instead.
func ResolveWorkflow(dir, name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", badRequest("no workflow named: give a workflow name or file path")
	}
	if strings.ContainsRune(name, 0) || slices.Contains(strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == '\\' }), "..") {
		return "", badRequest("workflow %q: a name with \"..\" is refused; give a name from the teams directory or an absolute path", name)
	}
	if filepath.IsAbs(name) {
		return filepath.Clean(name), nil
	}
	if dir == "" {
		return "", badRequest("workflow %q: no teams directory is configured, so give the workflow file's absolute path (or set [teams] dir in agentd's config)", name)
	}
	if strings.ContainsAny(name, `/\`) {
		return "", badRequest("workflow %q: give a bare name from the teams directory (like software_company) or an absolute path", name)
	}
	if !strings.HasSuffix(name, ".toml") {
		name += ".toml"
	}
	return filepath.Join(dir, name), nil
}

// ReadWorkflow reads the workflow file a chat's FILE names (ResolveWorkflow).
func ReadWorkflow(dir, name string) (path string, src []byte, err error) {
	if path, err = ResolveWorkflow(dir, name); err != nil {
		return "", nil, err
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil && errorsIsNotExist(err) && dir != "" && !filepath.IsAbs(strings.TrimSpace(name)):
		return "", nil, client.Errorf(client.ErrNotFound, "no workflow %q in the teams directory: `/agent team` lists them", strings.TrimSuffix(strings.TrimSpace(name), ".toml"))
	case err != nil && errorsIsNotExist(err):
		return "", nil, client.Errorf(client.ErrNotFound, "workflow file %s does not exist", path)
	case err != nil:
		return "", nil, fmt.Errorf("workflow file %s: %w", path, err)
	case !fi.Mode().IsRegular():
		return "", nil, badRequest("workflow file %s is not a regular file", path)
	case fi.Size() > maxWorkflowFile:
		return "", nil, badRequest("workflow file %s is %d bytes: at most 256 KiB", path, fi.Size())
	}
	src, err = os.ReadFile(path)
	if err != nil {
		return "", nil, fmt.Errorf("workflow file %s: %w", path, err)
	}
	return path, src, nil
}

func errorsIsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// Workflows lists the workflow names (files NAME.toml) in dir, sorted.
func Workflows(dir string) ([]string, error) {
	if dir == "" {
		return nil, nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("teams directory: %w", err)
	}
	var out []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".toml"); ok && !e.IsDir() && n != "" {
			out = append(out, n)
		}
	}
	return out, nil
}

// Shelf starts team runs from workflow files named in chat: the engine, and the
// configured directory of workflows.
type Shelf struct {
	*Engine
	Dir string
}

// StartTeamFile starts a run of the workflow file FILE names (ResolveWorkflow) for task.
func (l Shelf) StartTeamFile(ctx context.Context, file, task, by string) (*client.TeamRun, error) {
	path, src, err := ReadWorkflow(l.Dir, file)
	if err != nil {
		return nil, err
	}
	return l.StartTeam(ctx, client.TeamRunRequest{Workflow: string(src), File: path, Task: task, By: by})
}

// Workflows lists the workflows in the directory.
func (l Shelf) Workflows(context.Context) ([]string, error) { return Workflows(l.Dir) }
