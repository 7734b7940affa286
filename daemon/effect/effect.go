// Package effect is the effect preview of shell and python proposals: before a person
// decides, the daemon runs the proposed command in its sandbox, with the network off,
// against a copy of the workspace, and captures its output and the exact change it made
// there; approving then applies that captured change to the workspace instead of
// running the command a second time, so what a person approves is what lands.
//
// It is built on daemon/checkpoint and adds no tree walker of its own: the workspace is
// checkpointed (From); the command runs in an overlay whose lower layer is the workspace
// itself, which no write reaches, and whose upper layer takes every write, so To is From
// with what the upper layer holds read in (checkpoint.Overlay): a preview costs what the
// command wrote, not the workspace. Root mounts it in the daemon's mount namespace; a
// daemon that is not root, in a user namespace of its own (holder.go). Where neither may
// mount, the copy is From restored into the agent's view folder (reflinked where the
// filesystem can, else copied) and checkpointed again after the command (To), and the
// daemon's first such preview says why (api.Effect.Notice). The change is the
// checkpoint Diff from From to To.
// Applying is checkpoint.RestoreFrom: only the paths that differ from From to To — what
// the diff shows — are written, and only on a workspace still exactly at From (content,
// modes, file times, owners, extended attributes), every path opened beneath it without
// following a link, so a symlink the command left in the copy is written as a symlink and
// never written through. The helpers' folder (agents/) is left out of both.
//
// Each agent's previews have a store of their own, <dir>/<agent id>/store, and one copy,
// <views>/<agent id>, kept between previews: a restore rewrites only what differs
// from the checkpoint it restores (what the last command changed there, and what
// changed in the workspace since), so a preview costs the files that changed, not the
// workspace — creating a thousand files is most of a second on a busy disk. dir is in
// the daemon's state directory, out of every workspace and out of the sandbox's sight
// (the sandbox sees only the copy, bound at the workspace's own path, so $PWD and the
// paths a command prints are the workspace's); views is beside
// the workspaces (<workspace root>/.previews), since a copy holds what they do, with
// their modes.
//
// A preview's disk is bounded (bound.go): the copy and the store together may take what
// the agent's disk budget leaves beside its workspace (a copy is counted even where
// the overlay makes none); a run ahead writing past it is stopped. Under the overlay the
// kernel holds that bound: its upper layer is a tmpfs of the room left, so a write past
// it fails, and unmounting drops it; a watch of the disk is a second wall, and the only
// one for a copy. Approving applies To only while the store holds, under To, the tree whose
// root hash the preview recorded (api.Effect.ToRoot), and From while it holds the tree
// the preview started from (api.Effect.FromRoot).
package effect

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/checkpoint"
	"github.com/agentd/agentd/internal/display"
)

// Options configure the previews. A zero field takes its default.
type Options struct {
	// Dir holds every agent's preview store (<state>/previews).
	Dir string
	// Views holds every agent's copy of its workspace (default Dir).
	Views string
	// MaxBytes is the largest workspace (content bytes) a preview copies; a larger one
	// gets no preview (default 256 MiB).
	MaxBytes int64
	// Timeout bounds the run ahead (default 60 s, or the command's limit if shorter).
	Timeout time.Duration
}

// Defaults for Options.
const (
	DefaultMaxBytes = 256 << 20
	DefaultTimeout  = 60 * time.Second
	// keepCount is how many checkpoints a preview store keeps: three per preview (the
	// workspace, the empty copy, the copy after), and only the latest preview matters.
	keepCount = 12
)

// Previews runs effect previews and applies them, for every agent of a daemon.
type Previews struct {
	opt    Options
	mu     sync.Mutex
	stores map[string]*checkpoint.Store // by agent id, opened on first use
	// toldCopy is set once a preview said why it ran ahead on a copy (api.Effect.Notice).
	toldCopy atomic.Bool
}

// New returns the previews kept under o.Dir.
func New(o Options) *Previews {
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Views == "" {
		o.Views = o.Dir
	}
	return &Previews{opt: o, stores: map[string]*checkpoint.Store{}}
}

// Run runs the command c with args ahead, as env's agent would run it but on a copy of
// env.Workspace with the network off, and returns the effect to show with the proposal
// (the change's unified diff in diff, "" for none). It never fails: when there can be
// no preview, Effect.None says why, and approving runs the command as usual.
//
// room bounds the disk the preview takes (its copy and its store, as commands.DiskUsage
// counts them): what the agent's disk budget leaves beside its workspace, or ≤ 0 for
// none, and then 3 × Options.MaxBytes. A workspace whose copy would not fit gets no
// preview; a run ahead that writes past it is stopped and gets none either.
func (p *Previews) Run(ctx context.Context, c commands.Command, env commands.Env, args json.RawMessage, lim commands.Limits, room int64) (eff *api.Effect, diff string) {
	ep, ok := c.(commands.EffectPreviewer)
	if !ok {
		return nil, ""
	}
	if why := ep.EffectPreview(); why != "" {
		return &api.Effect{None: why}, ""
	}
	if room <= 0 {
		room = 3 * p.opt.MaxBytes
	}
	eff, diff, err := p.run(ctx, c, env, args, lim, room)
	if err != nil {
		return &api.Effect{None: err.Error()}, ""
	}
	return eff, diff
}

func (p *Previews) run(ctx context.Context, c commands.Command, env commands.Env, args json.RawMessage, lim commands.Limits, room int64) (*api.Effect, string, error) {
	s, err := p.store(env.AgentID)
	if err != nil {
		return nil, "", err
	}
	from, err := s.Checkpoint(ctx, env.Workspace)
	switch {
	case err != nil:
		return nil, "", fmt.Errorf("the workspace could not be checkpointed: %w", err)
	case from.Bytes > p.opt.MaxBytes:
		return nil, "", fmt.Errorf("the workspace holds %s, over the %s a preview copies", display.Size(from.Bytes), display.Size(p.opt.MaxBytes))
	case from.Partial:
		return nil, "", fmt.Errorf("the workspace cannot be copied whole: %s", from.Problem())
	case 2*from.Bytes > room:
		return nil, "", fmt.Errorf("a copy of the workspace (%s) and its checkpoint would not fit in the %s of disk its budget leaves a preview", display.Size(from.Bytes), display.Size(room))
	}
	view := p.viewOf(env.AgentID)
	bound, err := p.bound(env.AgentID, view, room, c.(commands.EffectPreviewer).RunAheadMemory())
	if err != nil {
		return nil, "", err
	}
	took, err := bound.place(ctx, s, from, env.Workspace)
	if err != nil {
		return nil, "", err
	}
	defer bound.q.unmount() // after its change is captured, from the overlay
	if lim.Timeout <= 0 || lim.Timeout > p.opt.Timeout {
		lim.Timeout = p.opt.Timeout
	}
	ws, view := env.Workspace, bound.view // where the daemon reaches the run's view
	env.Workspace, env.SeenAt = view, ws  // the copy, where the command sees the workspace
	env.Profile.Offline = true
	out, runErr := bound.run(ctx, took, func(ctx context.Context) (string, error) { return commands.Run(ctx, c, env, args, lim) })
	if bound.over != "" {
		return nil, "", errors.Join(errors.New(bound.over), bound.putBack())
	}
	if runErr != nil {
		return nil, "", errors.Join(fmt.Errorf("its run ahead failed, so there is nothing to apply (%s)", strings.ReplaceAll(runErr.Error(), view, "the copy")),
			bound.putBack())
	}
	if err := bound.stillAt(ctx, s, ws, from); err != nil {
		return nil, "", errors.Join(err, bound.putBack())
	}
	if bound.storeRoom(took) <= 0 {
		return nil, "", errors.Join(errors.New(bound.overBy(took+bound.grew, took)), bound.putBack())
	}
	to, err := bound.capture(ctx, s, from.ID, bound.storeRoom(took))
	switch {
	case err != nil:
		return nil, "", errors.Join(fmt.Errorf("its change could not be captured: %w", err), bound.putBack())
	case to.Partial:
		return nil, "", errors.Join(fmt.Errorf("its change cannot be captured whole: %s", to.Problem()), bound.putBack())
	}
	d, err := s.Diff(ctx, from.ID, to.ID)
	if err != nil {
		return nil, "", fmt.Errorf("its change could not be read: %w", err)
	}
	if err := inHelpers(ctx, s, d); err != nil {
		return nil, "", errors.Join(err, bound.putBack())
	}
	if err := deniedIn(ctx, d, view, env.Profile.Paths); err != nil {
		return nil, "", errors.Join(err, bound.putBack())
	}
	eff := &api.Effect{Output: strings.ReplaceAll(out, view, ws), Summary: strings.Replace(d.Summary(), "changed", "changes", 1),
		From: uint64(from.ID), To: uint64(to.ID), FromRoot: from.Root(), ToRoot: to.Root(), NotShown: strings.Join(d.NotFullyShown(), "; ")}
	if bound.q == nil && p.toldCopy.CompareAndSwap(false, true) {
		eff.Notice = "it ran ahead on a copy of the workspace, as no overlay could be mounted over it here (" + bound.noQuota + ")"
	}
	if len(d.Changes) == 0 {
		return eff, "", nil
	}
	text := d.Text() // its first line is the summary, which eff says
	return eff, text[strings.IndexByte(text, '\n')+1:], nil
}

// stillAt refuses a run ahead during which the workspace ws moved off checkpoint from
// (a person editing, a helper writing) while the run saw it: the overlay's lower layer
// is the workspace itself, so the command saw a mix of both, and a change worked out
// against from is not what it saw. It is one more checkpoint of ws, which finds nothing
// changed without a walk when nothing did (the store's watch of ws). The helpers'
// folder is left out, as Apply leaves it. A copy (no quota) was restored from the
// store, not read from ws: what it saw was from, and Apply refuses a ws moved since.
func (b *diskBound) stillAt(ctx context.Context, s *checkpoint.Store, ws string, from checkpoint.Info) error {
	if b.q == nil {
		return nil
	}
	now, err := s.Checkpoint(ctx, ws)
	if err != nil {
		return fmt.Errorf("its change is not applied, as the workspace could not be checkpointed again after it (%w): approving runs the command itself", err)
	}
	if now.Root() == from.Root() {
		return nil
	}
	d, err := s.Diff(ctx, from.ID, now.ID, commands.HelpersFolder)
	switch {
	case err != nil:
		return fmt.Errorf("its change is not applied, as the workspace could not be compared with what it ran on (%w): approving runs the command itself", err)
	case d.Files+d.Folders > 0:
		return fmt.Errorf("the workspace changed while the preview ran (%s), so what the command saw is not what approving would apply to: approving runs the command itself", d.Summary())
	}
	return nil
}

// inHelpers refuses a change to the helpers' folder (agents/): Apply leaves it out,
// since each helper owns its workspace there and may be changing it while its parent's
// change is applied; the parent's commands see it read-only, so only a command that
// made the folder itself can have changed it.
func inHelpers(ctx context.Context, s *checkpoint.Store, d *checkpoint.Diff) error {
	if d.Omitted > 0 {
		without, err := s.Diff(ctx, d.From, d.To, commands.HelpersFolder)
		if err != nil {
			return fmt.Errorf("its change could not be read: %w", err)
		}
		if without.Files+without.Folders == d.Files+d.Folders {
			return nil
		}
	} else if !slices.ContainsFunc(d.Changes, func(c checkpoint.Change) bool {
		return c.Path == commands.HelpersFolder || strings.HasPrefix(c.Path, commands.HelpersFolder+"/")
	}) {
		return nil
	}
	return fmt.Errorf("it changes %s/, where helpers' workspaces are, which an approval never writes", commands.HelpersFolder)
}

// deniedIn refuses a change the run ahead made in the copy view to a path the agent's
// rules deny writing (the sandbox's
// read-only binds miss a file created under a wildcard, or in a folder made during the
// run). The command is not refused: approving runs it, and the step's end puts back
// what it wrote there, as after any run, so the person gets the same change and is told.
// The check is the step's end's (checkpoint.Diff.Denied), past the changes d lists too.
func deniedIn(ctx context.Context, d *checkpoint.Diff, view string, rules commands.PathRules) error {
	denied, _, err := d.Denied(ctx, view, rules)
	if err != nil {
		return fmt.Errorf("its change is not applied, as it could not be checked against the deny rules (%w): approving runs the command itself", err)
	}
	if len(denied) == 0 {
		return nil
	}
	what := make([]string, len(denied))
	for i, w := range denied {
		what[i] = w.String()
	}
	return fmt.Errorf("its change is not applied, as it changes %s: approving runs the command itself, and what it writes there is put back after", strings.Join(what, "; "))
}

// viewOf is agentID's copy of its workspace.
func (p *Previews) viewOf(agentID string) string {
	if p.opt.Views == p.opt.Dir {
		return filepath.Join(p.opt.Dir, agentID, "view")
	}
	return filepath.Join(p.opt.Views, agentID)
}

// ErrStale wraps Apply's error when the workspace changed since the preview: nothing
// was applied, and the person is asked again.
var ErrStale = errors.New("the workspace changed since the preview")

// Apply puts the change eff captured in place in agent's workspace ws, when ws is still
// exactly as the preview found it; else it changes nothing and returns an error wrapping
// ErrStale that says what changed. It returns the result of the step: the output of the
// run ahead, and what was applied.
func (p *Previews) Apply(ctx context.Context, agentID, ws string, eff *api.Effect) (string, error) {
	if !eff.Appliable() {
		return "", errors.New("this proposal carries no change to apply")
	}
	s, err := p.store(agentID)
	if err != nil {
		return "", err
	}
	if err := checkRoot(ctx, s, eff); err != nil {
		return "", err
	}
	// The helpers' folder is left out: Run refused a change there, and a helper running
	// meanwhile must neither make the preview stale nor lose what it wrote.
	r, err := s.RestoreFrom(ctx, ws, checkpoint.ID(eff.From), checkpoint.ID(eff.To), commands.HelpersFolder)
	var changed *checkpoint.ChangedError
	switch {
	case errors.As(err, &changed):
		return "", fmt.Errorf("%w: %s", ErrStale, changed.What())
	case errors.Is(err, checkpoint.ErrNotFound):
		return "", fmt.Errorf("%w: the preview's checkpoints are gone", ErrStale)
	case err != nil:
		return "", fmt.Errorf("applying the previewed change: %w", err)
	}
	res := eff.Output
	if res != "" && !strings.HasSuffix(res, "\n") {
		res += "\n"
	}
	return res + "(the change its run ahead made was applied: " + r.Diff.Summary() + ")", nil
}

// checkRoot fails closed unless the preview store holds, under eff.To and eff.From,
// the trees the preview captured and the person was shown (eff.ToRoot, eff.FromRoot):
// a store swapped or rebuilt since may hold other trees under the same ids. A preview
// stored before its start tree was recorded is stale: it runs again and is asked again.
func checkRoot(ctx context.Context, s *checkpoint.Store, eff *api.Effect) error {
	if eff.FromRoot == "" {
		return fmt.Errorf("%w: the preview was made before previews recorded the workspace they start from, so nothing was applied: it runs again and is asked again", ErrStale)
	}
	for _, c := range []struct {
		id         uint64
		root, what string
	}{{eff.To, eff.ToRoot, "the change that was shown"}, {eff.From, eff.FromRoot, "the workspace the change was worked out on"}} {
		got, err := s.Get(ctx, checkpoint.ID(c.id))
		switch {
		case errors.Is(err, checkpoint.ErrNotFound):
			return fmt.Errorf("%w: the preview's checkpoints are gone", ErrStale)
		case err != nil:
			return fmt.Errorf("applying the previewed change: %w", err)
		case c.root == "" || got.Root() != c.root:
			return fmt.Errorf("%w: the preview store no longer holds %s (checkpoint %d's tree is %.12s, the preview's %.12s), so nothing was applied",
				ErrStale, c.what, c.id, got.Root(), cmp.Or(c.root, "unrecorded"))
		}
	}
	return nil
}

// Forget closes agentID's preview store and removes it with its copies: the agent is gone.
func (p *Previews) Forget(agentID string) error {
	if p == nil || p.opt.Dir == "" || agentID == "" || agentID != filepath.Base(agentID) {
		return nil
	}
	p.mu.Lock()
	s := p.stores[agentID]
	delete(p.stores, agentID)
	p.mu.Unlock()
	if s != nil {
		s.Close()
	}
	errs := []error{(&quota{view: p.viewOf(agentID), dir: filepath.Join(p.opt.Dir, agentID, "quota")}).unmount()}
	for _, dir := range []string{p.opt.Views, p.opt.Dir} {
		if _, err := os.Lstat(filepath.Join(dir, agentID)); err == nil {
			errs = append(errs, checkpoint.RemoveTree(dir, agentID))
		}
	}
	return errors.Join(errs...)
}

// Close closes every store.
func (p *Previews) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for id, s := range p.stores {
		errs = append(errs, s.Close())
		delete(p.stores, id)
	}
	return errors.Join(errs...)
}

// store returns agentID's preview store, opened on first use.
func (p *Previews) store(agentID string) (*checkpoint.Store, error) {
	if p.opt.Dir == "" || agentID == "" || agentID != filepath.Base(agentID) || strings.HasPrefix(agentID, ".") {
		return nil, fmt.Errorf("no place for previews of agent %q", agentID)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.stores[agentID]; s != nil {
		return s, nil
	}
	dir := filepath.Join(p.opt.Dir, agentID)
	s, err := checkpoint.Open(filepath.Join(dir, "store"), checkpoint.Options{
		MaxStoreBytes: 4 * p.opt.MaxBytes, MaxStepBytes: 2 * p.opt.MaxBytes, KeepCount: keepCount,
		Ephemeral: true}) // a preview lost in a crash is only asked again
	if err != nil {
		return nil, err
	}
	p.stores[agentID] = s
	return s, nil
}
