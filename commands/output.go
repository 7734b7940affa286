package commands

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentd/agentd/internal/randid"
)

// outputsDir is the workspace folder that keeps outputs too long for the model's prompt.
const outputsDir = ".outputs"

const (
	maxSavedBytes   = 4 << 20 // of one output; a runaway command must not fill the disk
	maxSavedOutputs = 50      // kept in outputsDir; older ones are removed
	// outputTimeFormat sorts as it reads and has no characters a file name may not hold.
	outputTimeFormat = "20060102T150405Z"
)

// workspaceOutputs names commands whose output already is a workspace file: a saved copy
// would read back cut at the same place and only take disk.
var workspaceOutputs = map[string]bool{"read_file": true}

// capOrSave is Run's output cap. Output over limit is cut on a UTF-8 boundary; when the
// command has a workspace, the whole output is first saved there and the notice says where,
// so the model can still get at the part it was not shown.
func capOrSave(env Env, command, out string, limit int) string {
	if len(out) <= limit || env.Workspace == "" {
		return capOutput(out, limit)
	}
	if workspaceOutputs[command] {
		return capOutput(out, limit) + "\n[read the rest with read_file start_line and end_line]"
	}
	cut := limit // the same cut capOutput makes, so both notices agree
	for cut > 0 && cut > limit-utf8.UTFMax+1 && !utf8.RuneStart(out[cut]) {
		cut--
	}
	notice := fmt.Sprintf("output cut at %d of %d bytes", cut, len(out))
	rel, err := saveOutput(env.Workspace, command, out, time.Now())
	switch {
	case err != nil:
		notice += "; the full output could not be saved: " + err.Error()
	case len(out) > maxSavedBytes:
		notice += fmt.Sprintf("; its first %d MiB saved to %s", maxSavedBytes>>20, rel)
	default:
		notice += "; full output saved to " + rel
	}
	return out[:cut] + "\n[" + notice + "]"
}

// saveOutput writes out (at most maxSavedBytes of it) to a new private file in the
// workspace's outputsDir and returns its workspace-relative path. The write is atomic and
// goes through an os.Root, so a link planted at outputsDir cannot send it elsewhere.
func saveOutput(workspace, command, out string, now time.Time) (string, error) {
	root, err := OpenWorkspace(workspace)
	if err != nil {
		return "", err
	}
	defer root.Close()
	if err := root.Mkdir(outputsDir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("cannot make %s: %s", outputsDir, errText(err))
	}
	if fi, err := root.Lstat(outputsDir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%s is not a folder", outputsDir)
	}
	if len(out) > maxSavedBytes {
		out = string(trimPartialRune([]byte(out[:maxSavedBytes])))
	}
	name := fmt.Sprintf("%s-%s-%s.txt", fileSafe(command), now.UTC().Format(outputTimeFormat), randid.Hex(4))
	rel := path.Join(outputsDir, name)
	// Background: the command's own context may have timed out, and its output is still wanted.
	if err := writeAtomic(context.Background(), root, rel, []byte(out), 0o600); err != nil {
		return "", fmt.Errorf("cannot write %s: %s", rel, errText(err))
	}
	pruneOutputs(root, maxSavedOutputs, name)
	return rel, nil
}

// fileSafe turns a command name (MCP names carry dots and more) into a short file name part.
func fileSafe(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) > 64 {
		b = b[:64]
	}
	if len(b) == 0 {
		return "output"
	}
	return string(b)
}

// pruneOutputs removes the oldest saved outputs beyond keep, never just, so a long-running
// agent's workspace does not grow without bound. Best effort: a failure only leaves files.
func pruneOutputs(root *os.Root, keep int, just string) {
	d, err := root.Open(outputsDir)
	if err != nil {
		return
	}
	entries, err := d.ReadDir(-1)
	d.Close()
	if err != nil || len(entries) <= keep {
		return
	}
	type saved struct {
		name string
		at   time.Time
	}
	var all []saved
	for _, e := range entries {
		// Only files saveOutput named: whatever else the agent keeps there is its own.
		if at, ok := savedAt(e.Name()); ok && e.Type().IsRegular() {
			all = append(all, saved{e.Name(), at})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].at.After(all[j].at) })
	for _, s := range all[min(keep, len(all)):] {
		if s.name != just {
			root.Remove(path.Join(outputsDir, s.name))
		}
	}
}

// savedAt parses the time out of a name saveOutput made: COMMAND-TIME-RANDOM.txt.
func savedAt(name string) (time.Time, bool) {
	base, ok := strings.CutSuffix(name, ".txt")
	parts := strings.Split(base, "-")
	if !ok || len(parts) < 3 || len(parts[len(parts)-1]) != 8 {
		return time.Time{}, false
	}
	if _, err := hex.DecodeString(parts[len(parts)-1]); err != nil {
		return time.Time{}, false
	}
	at, err := time.Parse(outputTimeFormat, parts[len(parts)-2])
	return at, err == nil
}
