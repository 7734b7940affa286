package wake

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/shell"
	"github.com/agentd/agentd/commands/web"
	"github.com/agentd/agentd/daemon/checkpoint"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/display"
)

// Options configure an Engine.
type Options struct {
	// Store keeps what each schedule's conditions saw (the schedule_wake table).
	Store *store.Store
	// Dir holds the checkpoint stores of the changed conditions, one per schedule and
	// watched folder: in the state directory, outside every workspace and read-only path
	// (<state>/wake).
	Dir string
	// Fetcher fetches the url conditions' pages: the one read_webpage uses, with its
	// network guard. Nil is a zero web.Fetcher (the guard on, the defaults).
	Fetcher *web.Fetcher
	// Timeout bounds each condition's check: a folder's walk, a page's fetch, a
	// command's run (default DefaultTimeout).
	Timeout time.Duration
	// MaxObservation bounds the text a wake hands the run as its first observation
	// (default DefaultMaxObservation bytes).
	MaxObservation int
	// Checkpoint bounds each watched folder's checkpoint store; zero fields take
	// DefaultCheckpoint's.
	Checkpoint checkpoint.Options
	// Log gets what the engine could not do on the side (nil discards).
	Log *slog.Logger
}

// Defaults for Options.
const (
	DefaultTimeout        = 30 * time.Second
	DefaultMaxObservation = 8 << 10
)

// DefaultCheckpoint bounds a watched folder's checkpoint store: a watch needs the content
// the last run saw, to say what changed since, not a history to rewind. A file past the
// bounds is still watched, by its size, times and inode, without a line diff.
var DefaultCheckpoint = checkpoint.Options{MaxFileBytes: 8 << 20, MaxStepBytes: 64 << 20, MaxStoreBytes: 64 << 20, KeepCount: 8}

// Target is what a firing's check runs against: the schedule's agent.
type Target struct {
	// AgentID is the agent a check command's processes are counted to (its box).
	AgentID string
	// Workspace is the agent's workspace: relative changed paths are in it, and check
	// commands run in it. "" for a schedule that makes a fresh agent per run: then
	// changed paths must be absolute and command conditions fail.
	Workspace string
	// ReadOnly are the agent's configured read-only paths (clean, absolute): an absolute
	// changed path must lie under one of them.
	ReadOnly []string
	// Hidden are host paths the agent's sandbox hides in its read-only paths (clean,
	// absolute): an absolute changed path may neither be nor hold one.
	Hidden []string
	// Shell runs check commands: the agent's execute_shell. Nil fails command conditions.
	Shell shell.Checker
	// Denied are the workspace paths the agent's deny rules keep from its programs (nil:
	// none). A check command runs without them, as the agent's commands do; a watched
	// path among them is refused, and a watched folder's changes beneath them are named
	// without their content.
	Denied commands.PathRules
}

// Engine checks schedules' wake conditions. Its methods may be called from several
// goroutines; two checks of one schedule at once are safe, and each sees the state
// the last started run wrote.
type Engine struct {
	st      *store.Store
	dir     string
	fetcher *web.Fetcher
	timeout time.Duration
	maxObs  int
	cpOpt   checkpoint.Options
	log     *slog.Logger

	mu     sync.Mutex
	stores map[string]*checkpoint.Store // open checkpoint stores by folder
	closed bool
	diffs  sync.Map // schedule id + "\x00" + path: diffMemo
}

// New returns an Engine; Close it to release the checkpoint stores it opened.
func New(opt Options) (*Engine, error) {
	if opt.Store == nil {
		return nil, errors.New("wake: no store")
	}
	if !filepath.IsAbs(opt.Dir) {
		return nil, fmt.Errorf("wake: the folder for checkpoint stores %q is not absolute", opt.Dir)
	}
	if err := os.MkdirAll(opt.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("wake: %w", err)
	}
	cp, d := opt.Checkpoint, DefaultCheckpoint
	cp.MaxFileBytes = cmp.Or(cp.MaxFileBytes, d.MaxFileBytes)
	cp.MaxStepBytes = cmp.Or(cp.MaxStepBytes, d.MaxStepBytes)
	cp.MaxStoreBytes = cmp.Or(cp.MaxStoreBytes, d.MaxStoreBytes)
	cp.KeepCount = cmp.Or(cp.KeepCount, d.KeepCount)
	e := &Engine{st: opt.Store, dir: opt.Dir, fetcher: cmp.Or(opt.Fetcher, &web.Fetcher{}),
		timeout: cmp.Or(max(opt.Timeout, 0), DefaultTimeout), maxObs: cmp.Or(max(opt.MaxObservation, 0), DefaultMaxObservation),
		cpOpt: cp, log: cmp.Or(opt.Log, slog.New(slog.DiscardHandler)), stores: map[string]*checkpoint.Store{}}
	return e, nil
}

// Close releases the checkpoint stores; checks after it fail.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	var errs []error
	for dir, s := range e.stores {
		errs = append(errs, s.Close())
		delete(e.stores, dir)
	}
	return errors.Join(errs...)
}

// Forget removes what the engine keeps on disk for a removed schedule: its checkpoint
// stores. (Its schedule_wake row goes with the schedule's.)
func (e *Engine) Forget(scheduleID string) error {
	dir, err := e.scheduleDir(scheduleID)
	if err != nil {
		return err
	}
	e.mu.Lock()
	for d, s := range e.stores {
		if strings.HasPrefix(d, dir+string(filepath.Separator)) {
			s.Close()
			delete(e.stores, d)
		}
	}
	e.mu.Unlock()
	e.diffs.Range(func(k, _ any) bool {
		if strings.HasPrefix(k.(string), scheduleID+"\x00") {
			e.diffs.Delete(k)
		}
		return true
	})
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("wake: removing the checkpoints of schedule %s: %w", scheduleID, err)
	}
	return nil
}

var safeID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// scheduleDir is the folder of a schedule's checkpoint stores.
func (e *Engine) scheduleDir(scheduleID string) (string, error) {
	if !safeID.MatchString(scheduleID) {
		return "", fmt.Errorf("wake: schedule id %q is not a plain name", scheduleID)
	}
	return filepath.Join(e.dir, scheduleID), nil
}

// checkpoints returns the open checkpoint store of a schedule's watched folder.
func (e *Engine) checkpoints(scheduleID, folder string) (*checkpoint.Store, error) {
	dir, err := e.scheduleDir(scheduleID)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(folder))
	dir = filepath.Join(dir, hex.EncodeToString(sum[:8]))
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, errors.New("wake: the engine is closed")
	}
	if s := e.stores[dir]; s != nil {
		return s, nil
	}
	s, err := checkpoint.Open(dir, e.cpOpt)
	if err != nil {
		return nil, err
	}
	e.stores[dir] = s
	return s, nil
}

// seen is what a schedule's conditions saw, by condition key: pathSeen for a changed
// path, pageSeen for a URL.
type seen map[string]json.RawMessage

func changedKey(path string) string { return "changed " + path }
func urlKey(u string) string        { return "url " + u }

// Check runs a schedule's conditions for one firing (a catch-up firing too) and says
// whether to wake the model. It writes only the count of failed checks in a row: what
// the conditions saw is written by Started, once the run has started. It never returns
// nil; whatever goes wrong is a check_failed verdict that says what.
func (e *Engine) Check(ctx context.Context, scheduleID string, c Conditions, t Target) *Verdict {
	v := &Verdict{ScheduleID: scheduleID, conds: c}
	if c.Empty() {
		v.Outcome, v.Wake, v.Reason = Wake, true, "the schedule has no wake conditions"
		return v
	}
	c, err := c.Check()
	if err != nil {
		v.results = []result{{cond: "the conditions", err: err}}
		return e.decide(ctx, v, &store.WakeState{})
	}
	v.conds = c
	ws, err := store.Read(ctx, e.st, func(tx *store.Tx) (*store.WakeState, error) { return tx.WakeState(scheduleID) })
	if err != nil {
		ws = &store.WakeState{Seen: "{}"}
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		v.results = []result{{cond: "the conditions", err: fmt.Errorf("reading what the last run saw: %w", err)}}
		return e.decide(ctx, v, ws)
	}
	prev := seen{}
	if err := json.Unmarshal([]byte(ws.Seen), &prev); err != nil {
		e.log.Warn("wake: stored state unreadable: every condition looks anew", "schedule", scheduleID, "err", err)
		prev = seen{}
	}
	since := "since the last run"
	if !ws.SeenAt.IsZero() {
		since += " (" + ws.SeenAt.Format("2006-01-02 15:04 MST") + ")"
	}
	if len(c.Changed) > 0 {
		v.results = append(v.results, e.checkChanged(ctx, scheduleID, c.Changed, t, prev, since))
	}
	for _, u := range c.URLs {
		v.results = append(v.results, e.checkURL(ctx, u, prev, since))
	}
	for _, line := range c.Commands {
		v.results = append(v.results, e.checkCommand(ctx, line, t, c.Network))
	}
	return e.decide(ctx, v, ws)
}

// Started stores what the verdict's conditions saw, as the state the schedule's next
// firings compare with: call it once the run the verdict woke has started, never for a
// run that did not start, so that no change is swallowed. A crash before it makes the
// next firing wake again for the same change; a second wake, never a lost one.
func (e *Engine) Started(ctx context.Context, v *Verdict) error {
	if v == nil || len(v.pending) == 0 {
		return nil
	}
	keep := map[string]bool{}
	for _, p := range v.conds.Changed {
		keep[changedKey(p)] = true
	}
	for _, u := range v.conds.URLs {
		keep[urlKey(u)] = true
	}
	err := e.st.Tx(ctx, func(tx *store.Tx) error {
		cur := seen{}
		if w, err := tx.WakeState(v.ScheduleID); err == nil {
			json.Unmarshal([]byte(w.Seen), &cur) // unreadable: replaced whole
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		maps.Copy(cur, v.pending)
		// Drop what a condition the schedule no longer has saw.
		maps.DeleteFunc(cur, func(k string, _ json.RawMessage) bool { return !keep[k] })
		b, err := json.Marshal(cur)
		if err != nil {
			return err
		}
		return tx.SetWakeSeen(v.ScheduleID, string(b))
	})
	if err != nil {
		return fmt.Errorf("wake: storing what schedule %s's run started from: %w", v.ScheduleID, err)
	}
	return nil
}

// Validate checks conditions against the schedule's agent as they stand now, for
// schedule add and edit (and the web form as it is typed): each changed path exists and
// stays inside the workspace or a read-only path, each URL's host is not one the network
// guard refuses, and check commands have a workspace and a shell to run in. Errors name
// the fix.
func (e *Engine) Validate(c Conditions, t Target) error {
	c, err := c.Check()
	if err != nil {
		return err
	}
	for _, p := range c.Changed {
		w, err := locate(p, t)
		if err != nil {
			return fmt.Errorf("--when-changed: %w", err)
		}
		if _, err := os.Lstat(filepath.Join(w.folder, w.name)); err != nil {
			return fmt.Errorf("--when-changed %s: it does not exist (%v): create it first, or check the spelling",
				display.Escape(p, display.Line), errors.Unwrap(err))
		}
	}
	for _, u := range c.URLs {
		if err := e.fetcher.CheckURL(u); err != nil {
			return fmt.Errorf("--when-url: %w", err)
		}
	}
	if len(c.Commands) > 0 {
		switch {
		case t.Workspace == "":
			return errors.New("--when: a check command runs in the agent's workspace, and this schedule makes a fresh agent per run: target an agent, or watch with --when-changed or --when-url")
		case t.Shell == nil:
			return errors.New("--when: the agent has no execute_shell to run a check command with: enable [shell] in the config, or watch with --when-changed or --when-url")
		}
	}
	return nil
}
