package checkpoint

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentd/agentd/commands"
)

// DeniedWrite is a path a change wrote that a rule denies writing.
type DeniedWrite struct {
	Path string // as Change.Path names it
	Rule string // the rule, as written; for Link, the folder the rules hold
	// Link says Path is a symlink at or above a folder the rules hold, which would take
	// writes there elsewhere.
	Link bool
}

// String says it for people and the model: "config/app.toml: write_file(config/*.toml)
// denies writing it".
func (w DeniedWrite) String() string {
	if w.Link {
		return displayPath(w.Path) + ": a link there would take writes to " + displayPath(w.Rule) + "/, which the deny rules hold, elsewhere"
	}
	return displayPath(w.Path) + ": " + w.Rule + " denies writing it"
}

// DeniedWrites lists the paths d changed that rules deny writing, d's end being the
// workspace ws as it is now: a path reached through a link to a folder a rule holds is
// matched by the name the rule gives it, and a link made at or above such a folder is
// listed too. A path inside one listed is not listed again (a folder's change comes
// before what it holds). Changes past the listed ones (d.Omitted) are not seen: the
// caller says so.
func (d *Diff) DeniedWrites(ws string, rules commands.PathRules) []DeniedWrite {
	if rules == nil {
		return nil
	}
	var roots []string
	aliases := map[string]string{} // a rule's folder as the workspace's links resolve it → the folder
	for _, r := range rules.WriteRoots() {
		if r == "." {
			continue
		}
		roots = append(roots, r)
		if real, err := commands.ResolveLinks(ws, r); err == nil && real != r {
			aliases[real] = r
		}
	}
	var out []DeniedWrite
	for _, c := range d.Changes {
		if n := len(out); n > 0 && strings.HasPrefix(c.Path, out[n-1].Path+"/") {
			continue
		}
		rel, err := commands.CleanPath(c.Path)
		if err != nil {
			continue
		}
		if c.NewType == "symlink" {
			if i := slices.IndexFunc(roots, func(r string) bool { return r == rel || strings.HasPrefix(r, rel+"/") }); i >= 0 {
				out = append(out, DeniedWrite{Path: c.Path, Rule: roots[i], Link: true})
				continue
			}
		}
		named := rel
		for real, r := range aliases {
			if rel == real || strings.HasPrefix(rel, real+"/") {
				named = r + rel[len(real):]
			}
		}
		rule := rules.WriteRule(named)
		if rule == "" && named != rel {
			rule = rules.WriteRule(rel)
		}
		if rule != "" {
			out = append(out, DeniedWrite{Path: c.Path, Rule: rule})
		}
	}
	return out
}

// PutBack puts the workspace paths named back as checkpoint before holds them, and
// leaves every other path as checkpoint after (the workspace as it is now) holds it: a
// restore limited to those paths, for a step's change to paths it was denied. It writes
// a checkpoint of after with those paths as before had them, then applies the change
// from after to it as RestoreFrom does: path by path, crash-safe through the journal,
// and only to a workspace still exactly at after, else a *ChangedError. A path absent
// from before is removed; its folders missing from after are made again, holding only
// what is put back.
func (s *Store) PutBack(ctx context.Context, ws string, before, after ID, paths []string) (*Restored, error) {
	err := s.begin(ctx)
	defer s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	r, err := readEach(s.readRecord, before, after)
	if err != nil {
		return nil, err
	}
	b, a := r[0], r[1]
	trees, err := readEach(s.readTree, b.root, a.root)
	if err != nil {
		return nil, err
	}
	tb, ta := trees[0], trees[1]
	split := make([][]string, 0, len(paths))
	for _, p := range paths {
		if p = strings.Trim(p, "/"); p != "" && p != "." {
			split = append(split, strings.Split(p, "/"))
		}
	}
	g := grafter{s}
	t, err := g.graft(ta, tb, split)
	if err != nil {
		return nil, fmt.Errorf("put back: %w", err)
	}
	enc := encodeTree(t)
	root := hash(sha256.Sum256(enc))
	if err := g.put(root, enc); err != nil {
		return nil, fmt.Errorf("put back: %w", err)
	}
	info := Info{ID: s.ids[len(s.ids)-1] + 1, Time: time.Now(), Files: a.Files, Bytes: a.Bytes, Partial: a.Partial || b.Partial,
		root: root, links: a.links || b.links}
	if err := s.writeRecord(info); err != nil {
		return nil, err
	}
	return s.restore(ctx, ws, info.ID, &delta{from: after, root: a.root})
}

// grafter makes the tree PutBack restores to, writing the folder trees it changes.
type grafter struct{ s *Store }

// graft is the folder tree now with each of paths (split into names, relative to it)
// as it is in then: replaced by then's entry, or removed when then has none.
func (g grafter) graft(now, then tree, paths [][]string) (tree, error) {
	out := slices.Clone(now)
	byName := map[string][][]string{}
	var names []string
	for _, p := range paths {
		if _, ok := byName[p[0]]; !ok {
			names = append(names, p[0])
		}
		byName[p[0]] = append(byName[p[0]], p[1:])
	}
	for _, name := range names {
		var deeper [][]string
		whole := false
		for _, rest := range byName[name] {
			if len(rest) == 0 {
				whole = true
			}
			deeper = append(deeper, rest)
		}
		n, t := out.find(name), then.find(name)
		if whole {
			out = setEntry(out, name, t)
			continue
		}
		isDir := func(e *entry) bool { return e != nil && e.kind == kindDir && e.captured() }
		if !isDir(n) && !isDir(t) {
			continue // neither side holds a folder there: nothing beneath it to put back
		}
		var sub, subThen tree
		var err error
		base := t
		if isDir(n) {
			base = n
			if sub, err = g.s.subtree(n); err != nil {
				return nil, err
			}
		}
		if isDir(t) {
			if subThen, err = g.s.subtree(t); err != nil {
				return nil, err
			}
		}
		if sub, err = g.graft(sub, subThen, deeper); err != nil {
			return nil, err
		}
		e := *base
		b := encodeTree(sub)
		e.hash, e.inline, e.flags = sha256.Sum256(b), "", e.flags&^flagInline
		if len(b) <= inlineMax {
			e.inline, e.flags = string(b), e.flags|flagInline
		} else if err := g.put(e.hash, b); err != nil {
			return nil, err
		}
		out = setEntry(out, name, &e)
	}
	return out, nil
}

// setEntry is t with name's entry replaced by e (a copy), or removed when e is nil,
// kept in name order.
func setEntry(t tree, name string, e *entry) tree {
	i, found := slices.BinarySearchFunc(t, name, func(x entry, n string) int { return strings.Compare(x.name, n) })
	switch {
	case e == nil && found:
		return slices.Delete(t, i, i+1)
	case e == nil:
		return t
	case found:
		t[i] = *e
		return t
	}
	return slices.Insert(t, i, *e)
}

// put stores the object b (a folder tree) as h, unless the store has it.
func (g grafter) put(h hash, b []byte) error {
	if g.s.hasObject(h) {
		return nil
	}
	if err := g.s.writeDurable(g.s.objects, h.String(), b); err != nil {
		return err
	}
	g.s.bytes += int64(len(b))
	return nil
}
