package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentd/agentd/internal/display"
)

// ContextItems is the context component (AutoGPT 0.5's): open_file and open_folder keep
// a file's or folder's current content in the agent's prompt, refreshed every step, until
// close_context_item closes it. What is open is kept in the agent's State, so it survives
// restarts. The items share the prompt budget the history leaves them.
type ContextItems struct{}

// contextKey is the State key of the open items.
const contextKey = "context.items"

// Bounds on open items: how many, and the most characters one shows.
const (
	maxContextItems = 5
	maxItemChars    = 4000
)

// contextItem is one open file or folder.
type contextItem struct {
	Kind string `json:"kind"` // "file" or "folder"
	Path string `json:"path"` // cleaned, workspace-relative
	// Target is Path with the workspace's symlinks resolved when it was opened, what was
	// approved then: Path is shown only while it still leads there (items stored before
	// have none, and are shown as they are).
	Target string `json:"target,omitempty"`
}

// filePathArgs are the args of a command that takes one file path of the workspace.
type filePathArgs struct {
	Path string `json:"path" desc:"file path" max:"256"`
}

var (
	openFileSpec = Spec{
		Name: "open_file", Description: "Keep a file's current content in your context until closed",
		Params: FromStruct(filePathArgs{}), Subject: "path", Class: ClassRead, Idempotent: true,
	}
	openFolderSpec = Spec{
		Name: "open_folder", Description: "Keep a folder's current listing in your context until closed",
		Params: FromStruct(listFolderArgs{}), Subject: "path", Class: ClassRead, Idempotent: true,
	}
	closeItemSpec = Spec{
		Name: "close_context_item", Description: "Close an open file or folder",
		Params: FromStruct(filePathArgs{}), Subject: "path", Class: ClassRead, Idempotent: true,
	}
)

// Name implements Component.
func (ContextItems) Name() string { return "context" }

// Budgeted implements Budgeted: open items take what the prompt has left, before history.
func (ContextItems) Budgeted() {}

// Commands implements CommandProvider: close_context_item is offered only while
// something is open.
func (ContextItems) Commands(ctx context.Context, s *Step) ([]Command, error) {
	cmds := []Command{openItem{openFileSpec, "file"}, openItem{openFolderSpec, "folder"}}
	items, err := loadItems(ctx, s.State)
	if err != nil {
		return cmds, err
	}
	if len(items) > 0 {
		cmds = append(cmds, closeItemCommand)
	}
	return cmds, nil
}

// Messages implements MessageProvider: every open item with its current content.
func (ContextItems) Messages(ctx context.Context, s *Step) ([]string, error) {
	items, err := loadItems(ctx, s.State)
	if err != nil || len(items) == 0 {
		return nil, err
	}
	const head = "Open files and folders (current content; close what you no longer need):"
	per := min(maxItemChars, (s.Budget-len(head))/len(items)-40)
	if per < 100 {
		return []string{head + "\n(no room left in the prompt to show them)"}, nil
	}
	var b strings.Builder
	b.WriteString(head)
	env := Env{Workspace: s.Workspace}
	for _, it := range items {
		var out string
		var err error
		shown := it.Path
		if it.Target != "" {
			shown = it.Target // what was approved, even should Path be relinked as it is read
		}
		if now, rerr := resolve(s.Workspace, it.Path); it.Target != "" && rerr == nil && now != it.Target {
			out = fmt.Sprintf("(not shown: it now leads to %s through a symlink, not to %s as when it was opened; close it and open it again)",
				display.Escape(now, display.Line), display.Escape(it.Target, display.Line))
		} else if it.Kind == "folder" {
			out, err = listFolder(ctx, env, listFolderArgs{Path: shown})
		} else {
			out, err = readFile(ctx, env, readFileArgs{Path: shown})
		}
		if err != nil {
			out = "(cannot show it: " + err.Error() + ")"
		}
		fmt.Fprintf(&b, "\n## %s %s\n%s", it.Kind, it.Path, cutItem(out, per))
	}
	return []string{b.String()}, nil
}

// cutItem shortens s to at most n bytes, the marker included, and says how to see the rest.
func cutItem(s string, n int) string {
	const mark = "\n[cut: close and read_file it to see the rest]"
	if len(s) <= n {
		return s
	}
	return display.Cut(s, max(0, n-len(mark)), mark)
}

func loadItems(ctx context.Context, st State) ([]contextItem, error) {
	if st == nil {
		return nil, nil
	}
	raw, err := st.Get(ctx, contextKey)
	if err != nil || raw == nil {
		return nil, err
	}
	var items []contextItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("open items: %w", err)
	}
	return items, nil
}

func saveItems(ctx context.Context, st State, items []contextItem) error {
	raw, err := json.Marshal(items)
	if err != nil {
		return err
	}
	return st.Put(ctx, contextKey, raw)
}

var errNoState = errors.New("this agent keeps no context state")

// openItem is open_file or open_folder.
type openItem struct {
	spec Spec
	kind string
}

func (o openItem) Spec() Spec { return o.spec }

func (o openItem) Execute(ctx context.Context, env Env, raw json.RawMessage) (string, error) {
	var a filePathArgs
	if err := DecodeArgs(o.spec.Name, raw, &a); err != nil {
		return "", err
	}
	if env.State == nil {
		return "", errNoState
	}
	f, err := openRead(env.Workspace, a.Path)
	if err != nil {
		return "", err
	}
	fi, err := f.Stat()
	f.Close()
	if err != nil {
		return "", fsError(env.Workspace, a.Path, err)
	}
	switch {
	case o.kind == "file" && fi.IsDir():
		return "", badPath(a.Path, "is a folder; use open_folder")
	case o.kind == "file" && !fi.Mode().IsRegular():
		return "", badPath(a.Path, "is not a regular file")
	case o.kind == "folder" && !fi.IsDir():
		return "", badPath(a.Path, "is a file; use open_file")
	}
	items, err := loadItems(ctx, env.State)
	if err != nil {
		return "", err
	}
	target, err := resolve(env.Workspace, a.Path)
	if err != nil {
		return "", err
	}
	it := contextItem{Kind: o.kind, Path: filepath.Clean(a.Path), Target: target}
	if slices.ContainsFunc(items, func(x contextItem) bool { return x.Kind == it.Kind && x.Path == it.Path }) {
		return fmt.Sprintf("%s %s is already open", o.kind, it.Path), nil
	}
	if len(items) >= maxContextItems {
		return "", fmt.Errorf("%d items are open, the most there can be: close one with close_context_item first", len(items))
	}
	if err := saveItems(ctx, env.State, append(items, it)); err != nil {
		return "", err
	}
	return fmt.Sprintf("opened %s %s: its current content is shown in your context until you close it", o.kind, it.Path), nil
}

var closeItemCommand = &funcCommand[filePathArgs]{closeItemSpec, closeItem}

// closeItem is close_context_item.
func closeItem(ctx context.Context, env Env, a filePathArgs) (string, error) {
	if env.State == nil {
		return "", errNoState
	}
	items, err := loadItems(ctx, env.State)
	if err != nil {
		return "", err
	}
	p := filepath.Clean(a.Path)
	var open []string
	kept := items[:0]
	for _, it := range items {
		open = append(open, it.Path)
		if it.Path != p {
			kept = append(kept, it)
		}
	}
	if len(kept) == len(items) {
		return "", fmt.Errorf("%s is not open; open items: %s", a.Path, strings.Join(open, ", "))
	}
	if err := saveItems(ctx, env.State, kept); err != nil {
		return "", err
	}
	return "closed " + p, nil
}

var (
	_ CommandProvider = ContextItems{}
	_ Budgeted        = ContextItems{}
)
