package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/agentd/agentd/api"
)

// appendToFile adds text at the end of a workspace file, creating it (and its folders) if
// missing. The text is added as given: a model that wants a new line sends the "\n".
type appendToFile struct{}

type appendToFileArgs struct {
	Path string `json:"path" desc:"file path" max:"256"`
	Text string `json:"text" desc:"text to add at the end" max:"2000"`
}

var appendToFileSpec = Spec{
	Name:        "append_to_file",
	Description: "Add text at the end of a workspace file",
	Params:      FromStruct(appendToFileArgs{}),
	Subject:     "path",
	Class:       ClassWriteWorkspace,
	Idempotent:  false, // a re-run after a crash would add the text twice
}

func init() { Register(appendToFile{}) }

func (appendToFile) Spec() Spec { return appendToFileSpec }

func (appendToFile) Execute(ctx context.Context, env Env, raw json.RawMessage) (string, error) {
	var a appendToFileArgs
	if err := DecodeArgs("append_to_file", raw, &a); err != nil {
		return "", err
	}
	if strings.IndexByte(a.Text, 0) >= 0 {
		// read_file refuses files holding NUL, so this would lock the model out of its own file.
		return "", fmt.Errorf("append_to_file: text contains a NUL byte; send plain text")
	}
	root, _, rel, err := openIn(env.Workspace, a.Path)
	if err != nil {
		return "", err
	}
	defer root.Close()
	if rel == "." {
		return "", badPath(a.Path, "is the workspace folder itself; give a file name")
	}
	if err := refuseGitWrite(root, a.Path, filepath.Clean(a.Path), rel); err != nil {
		return "", err
	}
	if fi, err := root.Lstat(rel); err == nil {
		if fi.IsDir() {
			return "", badPath(a.Path, "is a folder; give a file name")
		}
		if !fi.Mode().IsRegular() {
			return "", badPath(a.Path, "is not a regular file")
		}
		if err := refuseHardLinked(a.Path, fi); err != nil {
			return "", err
		}
	}
	if dir := filepath.Dir(rel); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return "", fsError(env.Workspace, a.Path, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	// O_NONBLOCK: a FIFO swapped in after the check must fail the open, not hang it.
	f, err := root.OpenFile(rel, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return "", fsError(env.Workspace, a.Path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fsError(env.Workspace, a.Path, err)
	}
	if !fi.Mode().IsRegular() {
		return "", badPath(a.Path, "is not a regular file")
	}
	// Checked again on what was opened: a link made since the check must not be written through.
	if err := refuseHardLinked(a.Path, fi); err != nil {
		return "", err
	}
	// One write: O_APPEND puts it at the end even if another writer appended meanwhile.
	if _, err := f.WriteString(a.Text); err != nil {
		return "", fsError(env.Workspace, a.Path, err)
	}
	if err := f.Sync(); err != nil {
		return "", fsError(env.Workspace, a.Path, err)
	}
	if err := f.Close(); err != nil {
		return "", fsError(env.Workspace, a.Path, err)
	}
	size := fi.Size() + int64(len(a.Text))
	return fmt.Sprintf("appended %d bytes to %s (now %d bytes)", len(a.Text), filepath.Clean(a.Path), size), nil
}

// Preview implements Previewer: the diff of the file against it with the text added.
func (appendToFile) Preview(_ context.Context, env Env, raw json.RawMessage) *api.Preview {
	var a appendToFileArgs
	if json.Unmarshal(raw, &a) != nil || a.Path == "" {
		return nil
	}
	return filePreview(env, a.Path, false, func(before string, _ bool) string { return before + a.Text })
}
