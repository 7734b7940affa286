package cron

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/randid"
)

// Errors the Scheduler's methods wrap; the API maps them to 404, 409 and 503.
var (
	ErrNotFound = errors.New("no such schedule")
	ErrExists   = errors.New("schedule already exists")
	ErrStopped  = errors.New("scheduler stopped")
)

// Schedule is what the Scheduler needs of a schedule. The store keeps the rest (name,
// target, goal, autonomy, budgets, delivery); the Starter looks it up by ID.
type Schedule struct {
	ID          string
	Spec        Spec
	Paused      bool
	Concurrency Concurrency  // "" is ConcurrencySkip
	Missed      MissedPolicy // zero is MissedSkip
	// LastFired is the scheduled time of the last firing handled (started, skipped or
	// missed; RunNow's do not count), or when the schedule was created, changed or
	// resumed if that is later. Firings after it that are already past when the
	// Scheduler sees them are handled by the Missed policy. Zero means "from now".
	LastFired time.Time
}

func (sc *Schedule) normalize() error {
	if sc.ID == "" {
		return errors.New("schedule has no id")
	}
	if sc.Spec.IsZero() {
		return fmt.Errorf("schedule %q has no spec", sc.ID)
	}
	c, err := ParseConcurrency(string(sc.Concurrency))
	if err != nil {
		return fmt.Errorf("schedule %q: %w", sc.ID, err)
	}
	sc.Concurrency = c
	if err := sc.Missed.validate(); err != nil {
		return fmt.Errorf("schedule %q: %w", sc.ID, err)
	}
	sc.Missed.Mode = cmp.Or(sc.Missed.Mode, MissedSkip)
	return nil
}

// Firing is one time a schedule asks for a run.
type Firing struct {
	ID         string    // unique (random); every Record of the firing carries it
	ScheduleID string    // the Schedule's ID
	Scheduled  time.Time // the fire time; for RunNow, when it was asked
	Manual     bool      // made by RunNow
}

// Record is the state of a firing, given to the Recorder at every change: a started run
// is recorded as started and again when it ends, a queued one also when it is queued.
type Record struct {
	Firing
	RunID   string    // the run the Starter started; empty if none
	Started time.Time // when Start was called; zero if it never was
	Ended   time.Time // when the run ended (or failed to start); zero until then
	// Outcome goes queued, started, then to an end state; Reason says why a firing was
	// skipped, missed or failed, or what the run said; Steps and Tokens come from RunEnded.
	Result
}

// Result is how a run ended, as reported to RunEnded.
type Result struct {
	Outcome api.RunOutcome // api.RunFinished, api.RunFailed or api.RunBudgetExhausted
	Reason  string
	Steps   int
	Tokens  int
}

// Starter starts the runs firings ask for (the daemon: create or wake the agent with the
// schedule's goal, budgets and delivery). It begins f's run and returns its run ID, which
// RunEnded names when it ends. It should return promptly: the run goes on elsewhere, and
// must not depend on ctx, which only bounds this call. It may be called concurrently, and
// is called off the firing loop, so a slow Starter holds no other schedule up. An error
// or a panic records the firing as failed; a NotStarted error records it with its own
// outcome.
type Starter func(ctx context.Context, f Firing) (runID string, err error)

// NotStarted is the error a Starter returns for a firing it decided not to run (the
// schedule's wake check found nothing to do, or failed): the firing is recorded with
// Outcome and Reason instead of as failed.
type NotStarted struct {
	Outcome api.RunOutcome // a final outcome: api.RunNothingToDo or api.RunCheckFailed
	Reason  string
}

func (e *NotStarted) Error() string { return string(e.Outcome) + ": " + e.Reason }

// Recorder persists Records (the daemon: a row per firing ID in SQLite). It inserts r the
// first time its ID is seen and updates it after. Calls come one at a time, in the order
// the firings changed; the context is never cancelled.
type Recorder func(ctx context.Context, r Record) error

// Config configures a Scheduler.
type Config struct {
	Starter  Starter      // required
	Recorder Recorder     // nil drops records
	Clock    Clock        // nil is SystemClock
	Log      *slog.Logger // nil discards
	// Grace is how late a firing may be handled and still count as on time; a later one
	// (the daemon was down, the machine asleep) is missed. Default one minute.
	Grace time.Duration
}

// Scheduler fires schedules. Its lifecycle: New, Add the stored schedules, Start; Add,
// Update, Remove, Pause, Resume and RunNow at any time, from any goroutine; report every
// run's end with RunEnded; Stop. Runs still going at Stop are left to their owner.
type Scheduler struct {
	starter  Starter
	recorder Recorder
	clock    Clock
	log      *slog.Logger
	grace    time.Duration

	mu       sync.Mutex
	entries  map[string]*entry
	runs     map[string]*inflight // by run ID
	starting int                  // Start calls in progress
	early    map[string]Result    // runs that ended before their Start returned
	pending  []Record             // to record, in order of change
	stopped  bool

	flushMu sync.Mutex // one flusher at a time keeps records in order

	launches  sync.WaitGroup // launch goroutines; Stop waits for them
	launching int            // launch goroutines not done (with s.mu; tests wait for 0)

	wake   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}

	// The loop's progress, so tests can wait for it: pokes counts wake-ups asked for,
	// settled the pokes seen by the loop when it last went idle.
	pokes, settled uint64
	idle           *sync.Cond
}

type entry struct {
	sched  Schedule
	cursor time.Time // fire times after it are still to come
	next   time.Time // the first of them; zero when paused or there is none
	active int       // runs started or starting
	queued *Record
}

type inflight struct {
	e   *entry
	rec Record
}

// New returns a stopped Scheduler with no schedules.
func New(cfg Config) *Scheduler {
	if cfg.Starter == nil {
		panic("schedule: Config.Starter is nil")
	}
	s := &Scheduler{
		starter:  cfg.Starter,
		recorder: cfg.Recorder,
		clock:    cmp.Or[Clock](cfg.Clock, SystemClock{}),
		log:      cmp.Or(cfg.Log, slog.New(slog.DiscardHandler)),
		grace:    cmp.Or(cfg.Grace, time.Minute),
		entries:  map[string]*entry{},
		runs:     map[string]*inflight{},
		early:    map[string]Result{},
		wake:     make(chan struct{}, 1),
	}
	s.idle = sync.NewCond(&s.mu)
	return s
}

// SetGrace changes the grace period (a config reload); 0 or less is the default minute.
func (s *Scheduler) SetGrace(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.grace = cmp.Or(max(d, 0), time.Minute)
}

// Start starts the firing loop; it runs until ctx ends or Stop.
func (s *Scheduler) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done != nil || s.stopped {
		return errors.New("schedule: scheduler already started")
	}
	ctx, s.cancel = context.WithCancel(ctx)
	s.done = make(chan struct{})
	go s.loop(ctx)
	return nil
}

// Stop stops the loop and waits for it. Runs in progress are not touched; RunEnded still
// records their end.
func (s *Scheduler) Stop() {
	s.mu.Lock()
	s.stopped = true
	cancel, done := s.cancel, s.done
	s.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	s.launches.Wait()
}

// Add adds a schedule. Firings between sc.LastFired and now are handled as missed.
func (s *Scheduler) Add(sc Schedule) error {
	if err := sc.normalize(); err != nil {
		return err
	}
	defer s.poke()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.entries[sc.ID]; ok {
		return fmt.Errorf("%w: %q", ErrExists, sc.ID)
	}
	now := s.clock.Now()
	e := &entry{sched: sc, cursor: sc.LastFired}
	if e.cursor.IsZero() || e.cursor.After(now) {
		e.cursor = now
	}
	e.plan()
	s.entries[sc.ID] = e
	return nil
}

// change applies edit to a schedule's settings and replans it.
func (s *Scheduler) change(ctx context.Context, id string, edit func(Schedule) Schedule) error {
	defer s.flush(ctx)
	defer s.poke()
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[id]
	if !ok {
		return fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	old := e.sched
	sc := edit(old)
	sc.LastFired = old.LastFired
	e.sched = sc
	respec := old.Spec.String() != sc.Spec.String() || old.Spec.Location().String() != sc.Spec.Location().String()
	if now := s.clock.Now(); (respec || old.Paused && !sc.Paused) && now.After(e.cursor) {
		e.cursor = now
	}
	if sc.Paused {
		s.dropQueued(e, "the schedule was paused")
	}
	e.plan()
	return nil
}

// Remove removes a schedule. Its runs in progress go on (RunEnded records their end); a
// queued firing is recorded as skipped.
func (s *Scheduler) Remove(ctx context.Context, id string) error {
	defer s.flush(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[id]
	if !ok {
		return fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	delete(s.entries, id)
	s.dropQueued(e, "the schedule was removed")
	return nil
}

// Pause stops a schedule firing; a queued firing is recorded as skipped. Firings while
// paused are not recorded, and are not missed on Resume.
func (s *Scheduler) Pause(ctx context.Context, id string) error {
	return s.setPaused(ctx, id, true)
}

// Resume lets a paused schedule fire again, from now on.
func (s *Scheduler) Resume(ctx context.Context, id string) error {
	return s.setPaused(ctx, id, false)
}

func (s *Scheduler) setPaused(ctx context.Context, id string, paused bool) error {
	return s.change(ctx, id, func(sc Schedule) Schedule {
		sc.Paused = paused
		return sc
	})
}

// RunNow fires a schedule at once, paused or not, under its concurrency policy, and
// returns the firing's Record: started (with the run ID), failed, queued or skipped.
func (s *Scheduler) RunNow(ctx context.Context, id string) (Record, error) {
	s.mu.Lock()
	e, ok := s.entries[id]
	if !ok || s.stopped {
		s.mu.Unlock()
		if !ok {
			return Record{}, fmt.Errorf("%w: %q", ErrNotFound, id)
		}
		return Record{}, ErrStopped
	}
	rec := s.newRecord(e, s.clock.Now(), true)
	start := s.admit(e, &rec)
	s.mu.Unlock()
	s.flush(ctx)
	if start {
		rec = s.launch(ctx, e, rec)
	}
	return rec, nil
}

// RunEnded records the end of a run a Starter started, and lets a queued firing start. The
// daemon may call it for every run that ends: unknown run IDs are ignored.
func (s *Scheduler) RunEnded(ctx context.Context, runID string, res Result) {
	s.mu.Lock()
	in, ok := s.runs[runID]
	if !ok {
		if s.starting > 0 {
			s.early[runID] = res // the Start that made it has not returned yet
		}
		s.mu.Unlock()
		return
	}
	delete(s.runs, runID)
	in.e.active--
	s.note(ended(in.rec, res, s.clock.Now()))
	s.mu.Unlock()
	s.flush(ctx)
	s.poke()
}

// Status is a schedule as the Scheduler sees it.
type Status struct {
	Schedule           // LastFired is the last fire time handled: what to store for a restart
	Next     time.Time // zero when paused or the spec fires no more
	Running  []string  // run IDs of runs that have not ended, sorted
	Queued   bool      // a firing waits for the running run
}

// Status returns the status of one schedule.
func (s *Scheduler) Status(id string) (Status, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[id]
	if !ok {
		return Status{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return s.status(e), nil
}

// List returns the status of every schedule, sorted by ID.
func (s *Scheduler) List() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Status, 0, len(s.entries))
	for _, e := range s.entries {
		out = append(out, s.status(e))
	}
	slices.SortFunc(out, func(a, b Status) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

func (s *Scheduler) status(e *entry) Status {
	st := Status{Schedule: e.sched, Next: e.next, Queued: e.queued != nil}
	st.LastFired = e.cursor
	for id, in := range s.runs {
		if in.e == e {
			st.Running = append(st.Running, id)
		}
	}
	slices.Sort(st.Running)
	return st
}

// plan sets e.next from its cursor.
func (e *entry) plan() {
	e.next = time.Time{}
	if !e.sched.Paused {
		e.next = e.sched.Spec.Next(e.cursor)
	}
}

func (s *Scheduler) newRecord(e *entry, scheduled time.Time, manual bool) Record {
	return Record{Firing: Firing{
		ID:         "firing_" + randid.Hex(8),
		ScheduleID: e.sched.ID,
		Scheduled:  scheduled,
		Manual:     manual,
	}}
}

// poke wakes the loop to look at the schedules again.
func (s *Scheduler) poke() {
	s.mu.Lock()
	s.pokes++
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}
