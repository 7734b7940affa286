package checkpoint

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/internal/display"
)

// DeniedWrite is a path a change wrote that a rule denies writing, or may have.
type DeniedWrite struct {
	Path string // as Change.Path names it
	Rule string // the rule, as written; for Link, the folder the rules hold; for Unseen, the rules
	// Link says Path is a symlink at or above a folder the rules hold, which would take
	// writes there elsewhere.
	Link bool
	// Unseen says the change's end did not capture Path, a folder (or what could not be
	// told) at, in or on the way to a folder the rules hold (Note says why): what was
	// written in it is not known, so it is taken as denied.
	Unseen bool
	Note   string
	// Unknown says the change's start did not capture what Path held (it, or a folder on
	// its way, was past the checkpoints' bounds or could not be read): Path cannot be put
	// back, and a person must look at it.
	Unknown bool
}

// String says it for people and the model: "config/app.toml: write_file(config/*.toml)
// denies writing it".
func (w DeniedWrite) String() string {
	switch {
	case w.Unseen:
		return displayPath(w.Path) + ": the checkpoints could not capture it (" + display.Escape(w.Note, display.Line) +
			"), so what was written in it may be what " + w.Rule + " denies"
	case w.Link:
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
	roots, aliases := writeRoots(ws, rules)
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

// writeRoots are the folders rules hold against writes but the whole workspace, and
// those of them the links in ws resolve elsewhere: the folder they resolve to → the
// folder.
func writeRoots(ws string, rules commands.PathRules) (roots []string, aliases map[string]string) {
	aliases = map[string]string{}
	for _, r := range rules.WriteRoots() {
		if r == "." {
			continue
		}
		roots = append(roots, r)
		if real, err := commands.ResolveLinks(ws, r); err == nil && real != r {
			aliases[real] = r
		}
	}
	return roots, aliases
}

// atOrUnder says whether the workspace path p is dir or inside it ("." holds all).
func atOrUnder(p, dir string) bool {
	return dir == "." || p == dir || strings.HasPrefix(p, dir+"/")
}

// Denied is what d, a change between two checkpoints of the store, wrote that rules
// deny writing, ws being the workspace as d's end holds it (DeniedWrites), whatever
// d.Omitted: past the changes d lists, every change at and on the way to the folders the
// rules hold is walked. It fails closed where the checkpoints could not see: a folder
// d's end did not capture there is listed as Unseen (what was written in it is not
// known) unless d's start held it with the same stamp (stamp.go: nothing in it
// changed), and a path whose state at d's start is not known is marked Unknown (it
// cannot be put back). Moved are the paths a file moved onto a denied path came from (the same
// content and inode there before, nothing there after): a put back of the denied paths
// alone would lose the file, so they are put back too. The names skip in the top
// folder are left out, as by PutBack.
func (d *Diff) Denied(ctx context.Context, ws string, rules commands.PathRules, skip ...string) (denied []DeniedWrite, moved []string, err error) {
	if rules == nil {
		return nil, nil, nil
	}
	if d.src == nil {
		return nil, nil, errors.New("the change was not read from a checkpoint store")
	}
	s := d.src
	err = s.begin(ctx)
	defer s.mu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	t, err := readEach(s.readTree, d.a, d.b)
	if err != nil {
		return nil, nil, err
	}
	for i := range t { // what is left out is neither denied nor where a file moved from
		t[i] = slices.DeleteFunc(slices.Clone(t[i]), func(e entry) bool { return slices.Contains(skip, e.name) })
	}
	var under []string // nil: the whole workspace
	if !slices.Contains(rules.WriteRoots(), ".") {
		roots, aliases := writeRoots(ws, rules)
		under = append(roots, slices.Collect(maps.Keys(aliases))...)
	}
	all := d
	if d.Omitted > 0 || len(skip) > 0 {
		df := &differ{s: s, d: &Diff{}, every: true, under: under}
		if err := df.trees(t[0], t[1]); err != nil {
			return nil, nil, err
		}
		all = df.d
	}
	denied = all.DeniedWrites(ws, rules)
	g := grafter{s}
	if d.partial[1] {
		var unseen []DeniedWrite
		if err := g.unseen(t[1], t[0], under, nil, &unseen); err != nil {
			return nil, nil, err
		}
		denied = withUnseen(denied, unseen, rules.String())
	}
	onto := map[fileID]bool{}
	for i, w := range denied {
		if d.partial[0] {
			if denied[i].Unknown, err = g.unknown(t[0], w.Path); err != nil {
				return nil, nil, err
			}
		}
		if e, err := g.at(t[1], w.Path); err != nil {
			return nil, nil, err
		} else if id, ok := idOf(e); ok && !w.Link && !denied[i].Unknown {
			onto[id] = true
		}
	}
	if len(onto) > 0 {
		err = g.vanished(t[0], t[1], onto, nil, &moved)
	}
	return denied, moved, err
}

// withUnseen is denied with the folders of unseen (rules being what they may break) that
// no path of denied holds, in path order; a path of denied such a folder holds goes, as
// the folder is put back whole.
func withUnseen(denied, unseen []DeniedWrite, rules string) []DeniedWrite {
	holds := func(dir, p string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }
	for _, u := range unseen {
		if slices.ContainsFunc(denied, func(w DeniedWrite) bool { return holds(w.Path, u.Path) }) {
			continue
		}
		denied = slices.DeleteFunc(denied, func(w DeniedWrite) bool { return holds(u.Path, w.Path) })
		u.Rule = rules
		denied = append(denied, u)
	}
	slices.SortFunc(denied, func(a, b DeniedWrite) int { return strings.Compare(a.Path, b.Path) })
	return denied
}

// unseen adds to out the folders of tree t (under path), and the entries of a kind it
// could not tell, that t did not capture, at, in or on the way to a folder of under
// (anywhere when under is nil), but those tree then (the change's start, from the
// workspace's top) holds at the same path with the same stamp: nothing changed in them.
func (g grafter) unseen(t, then tree, under []string, path []byte, out *[]DeniedWrite) error {
	for i := range t {
		e := &t[i]
		p := appendName(slices.Clip(path), e.name)
		if under != nil && !slices.ContainsFunc(under, func(r string) bool { return atOrUnder(string(p), r) || atOrUnder(r, string(p)) }) {
			continue
		}
		switch {
		case e.kind != kindDir && e.kind != kindUnknown:
		case !e.captured():
			if e.flags&flagTreeStamp != 0 {
				if was, err := g.at(then, string(p)); err != nil {
					return err
				} else if was != nil && was.flags&(flagTreeStamp|flagUncaptured) == flagTreeStamp|flagUncaptured && was.hash == e.hash {
					continue
				}
			}
			*out = append(*out, DeniedWrite{Path: string(p), Unseen: true, Note: e.note})
		default:
			sub, err := g.s.subtree(e)
			if err != nil {
				return err
			}
			if err := g.unseen(sub, then, under, p, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// unknown says whether tree t does not tell what it held at the workspace path p: p,
// or a folder on its way, was not captured.
func (g grafter) unknown(t tree, p string) (bool, error) {
	names := strings.Split(p, "/")
	for i, name := range names {
		e := t.find(name)
		switch {
		case e == nil:
			return false, nil // nothing there: a put back removes it
		case !e.captured():
			return true, nil
		case i == len(names)-1 || e.kind != kindDir:
			return false, nil
		}
		var err error
		if t, err = g.s.subtree(e); err != nil {
			return false, err
		}
	}
	return false, nil
}

// fileID is a captured file by content and inode: what a rename keeps.
type fileID struct {
	hash     hash
	ino, dev uint64
}

func idOf(e *entry) (fileID, bool) {
	if e == nil || e.kind != kindFile || !e.captured() || e.ino == 0 {
		return fileID{}, false
	}
	return fileID{e.hash, e.ino, e.dev}, true
}

// at is the entry of tree t at the workspace path p, nil when there is none.
func (g grafter) at(t tree, p string) (*entry, error) {
	names := strings.Split(p, "/")
	for i, name := range names {
		e := t.find(name)
		if e == nil || i == len(names)-1 {
			return e, nil
		}
		if e.kind != kindDir || !e.captured() {
			return nil, nil
		}
		var err error
		if t, err = g.s.subtree(e); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// vanished adds to out the paths (under path) of the files in ids that tree then holds
// and tree now does not hold there.
func (g grafter) vanished(then, now tree, ids map[fileID]bool, path []byte, out *[]string) error {
	for i := range then {
		e := &then[i]
		n := now.find(e.name)
		p := appendName(slices.Clip(path), e.name)
		if id, ok := idOf(e); ok && ids[id] {
			if m, _ := idOf(n); m != id {
				*out = append(*out, string(p))
			}
			continue
		}
		if e.kind != kindDir || !e.captured() || sameFolder(e, n) {
			continue
		}
		sub, err := g.s.subtree(e)
		if err != nil {
			return err
		}
		var subNow tree
		if n != nil && n.kind == kindDir && n.captured() {
			if subNow, err = g.s.subtree(n); err != nil {
				return err
			}
		}
		if err := g.vanished(sub, subNow, ids, p, out); err != nil {
			return err
		}
	}
	return nil
}

// PutBack puts the workspace paths named back as checkpoint before holds them, and
// leaves every other path as checkpoint after (the workspace as it is now) holds it: a
// restore limited to those paths, for a step's change to paths it was denied. It writes
// a checkpoint of after with those paths as before had them, then applies the change
// from after to it as RestoreFrom does: path by path, crash-safe through the journal,
// and only to a workspace still exactly at after, else a *ChangedError. A path absent
// from before is removed; its folders missing from after are made again, holding only
// what is put back. The names skip in the top folder are left out, as by RestoreFrom.
func (s *Store) PutBack(ctx context.Context, ws string, before, after ID, paths []string, skip ...string) (*Restored, error) {
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
	return s.restore(ctx, ws, info.ID, &delta{from: after, root: a.root, skip: skip})
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
