package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/agentd/agentd/api"
)

// deleteFile removes one file from the workspace. Folders are refused: one wrong path
// should not cost a whole tree.
type deleteFile struct{}

var deleteFileSpec = Spec{
	Name:        "delete_file",
	Description: "Delete one file from the workspace",
	Params:      FromStruct(filePathArgs{}),
	Subject:     "path",
	Class:       ClassWriteWorkspace,
	// A re-run finds the file gone and says so without failing.
	Idempotent: true,
}

func init() { Register(deleteFile{}) }

func (deleteFile) Spec() Spec { return deleteFileSpec }

func (deleteFile) Execute(ctx context.Context, env Env, raw json.RawMessage) (string, error) {
	var a filePathArgs
	if err := DecodeArgs("delete_file", raw, &a); err != nil {
		return "", err
	}
	// The full path gets the same refusals as every file command, links out included.
	root, _, rel, err := openIn(env.Workspace, a.Path)
	if err != nil {
		return "", err
	}
	defer root.Close()
	clean := filepath.Clean(a.Path)
	if clean == "." {
		return "", badPath(a.Path, "is the workspace folder itself; delete_file deletes one file")
	}
	// openIn resolved a final symlink to its target; like rm, delete the link itself.
	dir, err := resolve(env.Workspace, filepath.Dir(clean))
	if err != nil {
		return "", err
	}
	rel = filepath.Join(dir, filepath.Base(clean))
	if err := refuseGitWrite(root, a.Path, clean, rel); err != nil {
		return "", err
	}
	fi, err := root.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("nothing to delete: %s does not exist", clean), nil
	case err != nil:
		return "", fsError(env.Workspace, a.Path, err)
	case fi.IsDir():
		return "", badPath(a.Path, "is a folder; delete_file only deletes files")
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if err := root.Remove(rel); err != nil {
		if errors.Is(err, fs.ErrNotExist) { // someone else deleted it first
			return fmt.Sprintf("nothing to delete: %s does not exist", clean), nil
		}
		return "", fsError(env.Workspace, a.Path, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Sprintf("deleted the link %s; the file it pointed to is kept", clean), nil
	}
	return "deleted " + clean, nil
}

// Preview implements Previewer: every line of the file removed. A link is deleted itself,
// not what it points to, so it gets a note and nothing of its target.
func (deleteFile) Preview(_ context.Context, env Env, raw json.RawMessage) *api.Preview {
	var a filePathArgs
	if json.Unmarshal(raw, &a) != nil || a.Path == "" {
		return nil
	}
	pv := &api.Preview{Kind: api.PreviewDiff, Path: a.Path}
	clean := filepath.Clean(a.Path)
	root, _, dir, err := openIn(env.Workspace, filepath.Dir(clean))
	if err != nil {
		pv.Note = "no diff: " + err.Error()
		return pv
	}
	defer root.Close()
	switch fi, err := root.Lstat(filepath.Join(dir, filepath.Base(clean))); {
	case errors.Is(err, fs.ErrNotExist):
		pv.Note = "nothing to delete: the file does not exist"
		return pv
	case err == nil && fi.Mode()&fs.ModeSymlink != 0:
		pv.Note = "it is a link: delete_file removes the link only, not the file it points to"
		return pv
	}
	return filePreview(env, a.Path, true, func(string, bool) string { return "" })
}
