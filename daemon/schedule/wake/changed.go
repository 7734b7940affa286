package wake

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentd/agentd/api"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/checkpoint"
	"github.com/agentd/agentd/internal/display"
)

// watch is where a changed path is watched: folder is the checkpoint store's root (no
// symlink on its path) and name the entry in it, or "" for the folder itself.
type watch struct {
	folder, name string
	// denied are the deny rules over the workspace, for a watch in it (nil otherwise),
	// tested on paths under rel: folder's own path in the workspace, links resolved.
	denied commands.PathRules
	rel    string
}

// locate resolves a changed path as the file commands resolve a path (commands.ResolveLinks:
// no "..", no symlink leading out), in the workspace or, for an absolute path, in the
// read-only path that holds it.
func locate(p string, t Target) (watch, error) {
	base, rel := t.Workspace, p
	if filepath.IsAbs(p) {
		base = ""
		for _, ro := range t.ReadOnly {
			if ro = filepath.Clean(ro); ro != "/" && (p == ro || strings.HasPrefix(p, ro+"/")) {
				base, rel = ro, strings.TrimPrefix(strings.TrimPrefix(p, ro), "/")
				break
			}
		}
		if base == "" {
			return watch{}, fmt.Errorf("%s is outside the agent's workspace and under none of its read-only paths (%s): add its folder to the agent's read-only paths, or watch a path in the workspace",
				display.Escape(p, display.Line), display.Escape(strings.Join(t.ReadOnly, ", "), display.Line))
		}
		rel = cmp.Or(rel, ".")
	} else if base == "" {
		return watch{}, fmt.Errorf("%s is relative to the agent's workspace, and this schedule makes a fresh agent (and workspace) per run: watch an absolute path under a read-only path, or target an agent",
			display.Escape(p, display.Line))
	}
	res, err := commands.ResolveLinks(base, rel)
	if err != nil {
		return watch{}, err
	}
	var denied commands.PathRules
	if base == t.Workspace {
		denied = t.Denied
	}
	if denied != nil {
		if read, _ := denied.Deny(res); read {
			return watch{}, fmt.Errorf("%s is kept from the agent's programs by its deny rules (%s): watch a path they do not cover",
				display.Escape(p, display.Line), display.Escape(denied.String(), display.Line))
		}
	}
	abs := filepath.Join(filepath.Clean(base), res)
	for _, h := range t.Hidden {
		if h = filepath.Clean(h); h == abs || strings.HasPrefix(h, abs+"/") || strings.HasPrefix(abs, h+"/") {
			return watch{}, fmt.Errorf("%s is or holds %s, which the agent's sandbox hides (agentd's config, tokens): watch a path that holds none",
				display.Escape(p, display.Line), display.Escape(h, display.Line))
		}
	}
	if fi, err := os.Lstat(abs); res == "." || err == nil && fi.IsDir() {
		return watch{folder: abs, denied: denied, rel: res}, nil
	}
	return watch{folder: filepath.Dir(abs), name: filepath.Base(abs), denied: denied, rel: path.Dir(res)}, nil
}

// pathSeen is what a changed path's check saw: the checkpoint of its folder, and when it
// was taken (a store made anew numbers its checkpoints from 1 again).
type pathSeen struct {
	Folder     string `json:"folder"`
	Checkpoint uint64 `json:"checkpoint"`
	Taken      int64  `json:"taken"` // ns
}

// checkChanged checks the changed condition: every path is looked at (so the run is told
// of each change, and Started records each), and any change wakes.
func (e *Engine) checkChanged(ctx context.Context, scheduleID string, paths []string, t Target, prev seen, since string) result {
	words := make([]string, len(paths))
	for i, p := range paths {
		words[i] = api.QuoteWord(p)
	}
	r := result{cond: "--when-changed " + strings.Join(words, " ")}
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	var lines, texts []string
	for _, p := range paths {
		shown := display.Escape(p, display.Line)
		d, first, err := e.changedPath(ctx, scheduleID, p, t, prev, &r)
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			r.err = fmt.Errorf("%s: looking at it took longer than %v: watch a smaller folder", shown, e.timeout)
		case errors.Is(err, commands.ErrBadPath):
			r.err = err // it names the path
		case err != nil:
			r.err = fmt.Errorf("%s: %w", shown, err)
		case first != "":
			lines = append(lines, shown+": "+first)
			texts = append(texts, shown+": "+first)
		case d != nil:
			lines = append(lines, shown+": "+d.Summary())
			texts = append(texts, shown+" changed "+since+":\n"+strings.TrimSuffix(d.Text(), "\n"))
		}
		if r.err != nil {
			return r
		}
	}
	if len(lines) == 0 {
		r.line = "nothing changed in " + display.Escape(strings.Join(paths, ", "), display.Line) + " " + since
		return r
	}
	r.wake, r.line, r.text = true, strings.Join(lines, "; "), strings.Join(texts, "\n\n")
	return r
}

// changedPath checkpoints one path's folder and compares it with what the last run saw:
// the changes to the path (nil when none), or first, why it is looked at anew.
func (e *Engine) changedPath(ctx context.Context, scheduleID, p string, t Target, prev seen, r *result) (d *checkpoint.Diff, first string, err error) {
	w, err := locate(p, t)
	if err != nil {
		return nil, "", err
	}
	cs, err := e.checkpoints(scheduleID, w.folder)
	if err != nil {
		return nil, "", err
	}
	info, err := cs.Checkpoint(ctx, w.folder)
	if err != nil {
		return nil, "", err
	}
	key := changedKey(p)
	r.pend(key, pathSeen{Folder: w.folder, Checkpoint: uint64(info.ID), Taken: info.Time.UnixNano()})
	var was pathSeen
	raw, ok := prev[key]
	const lost = "what the last run saw of it is no longer kept: looked at anew"
	switch {
	case !ok || json.Unmarshal(raw, &was) != nil:
		return nil, "first look: no earlier state to compare with", nil
	case was.Folder != w.folder:
		return nil, "it is not the folder the last run saw (moved, removed or replaced): looked at anew", nil
	case checkpoint.ID(was.Checkpoint) == info.ID && was.Taken == info.Time.UnixNano():
		return nil, "", nil
	case checkpoint.ID(was.Checkpoint) == info.ID:
		return nil, lost, nil
	}
	if before, err := cs.Get(ctx, checkpoint.ID(was.Checkpoint)); errors.Is(err, checkpoint.ErrNotFound) || err == nil && before.Time.UnixNano() != was.Taken {
		return nil, lost, nil
	}
	memo := diffMemo{from: was, to: info.ID}
	if d, ok := e.diffs.Load(scheduleID + "\x00" + p); ok && d.(diffMemo).from == memo.from && d.(diffMemo).to == memo.to {
		return d.(diffMemo).d, "", nil
	}
	full, err := cs.Diff(ctx, checkpoint.ID(was.Checkpoint), info.ID)
	if errors.Is(err, checkpoint.ErrNotFound) {
		return nil, lost, nil
	}
	if err != nil {
		return nil, "", err
	}
	if d = narrow(full, w, p); len(d.Changes)+d.Omitted == 0 {
		d = nil
	}
	memo.d = d
	e.diffs.Store(scheduleID+"\x00"+p, memo)
	return d, "", nil
}

// diffMemo is the last diff of a schedule's watched path: the firings after a change the
// run has not yet started from (or, for a file, after a change to its folder's others)
// would diff the same two checkpoints again each time.
type diffMemo struct {
	from pathSeen
	to   checkpoint.ID
	d    *checkpoint.Diff // nil: no change to the path
}

// narrow keeps the changes of a diff of w's folder that are to the watched path, named as
// the schedule names them (p joined with the path in the folder).
func narrow(full *checkpoint.Diff, w watch, p string) *checkpoint.Diff {
	prefix := p
	if w.name != "" {
		prefix = path.Dir(p)
	}
	d := &checkpoint.Diff{From: full.From, To: full.To}
	if w.name == "" {
		d.Omitted = full.Omitted
	}
	for _, c := range full.Changes {
		if w.name != "" && c.Path != w.name && !strings.HasPrefix(c.Path, w.name+"/") {
			continue
		}
		old := c.Path
		c.Path = path.Join(prefix, c.Path)
		c.Unified = renameDiff(c.Unified, old, c.Path)
		if w.denied != nil {
			// Tested where it is, not by the name the schedule reached it by: a watched
			// path that became a link to a denied folder shows nothing of it.
			if read, _ := w.denied.Deny(path.Join(w.rel, old)); read {
				// Named as the schedule names it; its content stays kept.
				c.Unified, c.Added, c.Removed = "", 0, 0
			}
		}
		if (c.OldType == "" || c.OldType == "folder") && (c.NewType == "" || c.NewType == "folder") {
			d.Folders++
		} else {
			d.Files++
		}
		d.Added += c.Added
		d.Removed += c.Removed
		d.Changes = append(d.Changes, c)
	}
	return d
}

// renameDiff names the file in a unified diff's two header lines by the schedule's path.
func renameDiff(u, old, now string) string {
	if u == "" {
		return u
	}
	from, to := display.Escape(old, display.Line), display.Escape(now, display.Line)
	lines := strings.SplitAfterN(u, "\n", 3)
	for i := 0; i < len(lines) && i < 2; i++ {
		lines[i] = strings.Replace(lines[i], " a/"+from, " a/"+to, 1)
		lines[i] = strings.Replace(lines[i], " b/"+from, " b/"+to, 1)
	}
	return strings.Join(lines, "")
}
