package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// part is one piece of the running daemon (the store, the agents, the local API…).
//
// Lifecycle: start brings the part up and returns once it is up; whatever it started
// (goroutines, listeners, open files) runs until stop, which ends it and waits for it.
// A start that fails leaves nothing of its part running, so only parts that started are
// ever stopped. start may read what earlier parts filled in, never later ones; either
// func may be nil (nothing to do).
type part struct {
	name  string
	start func(ctx context.Context) error
	stop  func(ctx context.Context) error
}

// lifecycle starts parts in order and stops the started ones in reverse order, each
// once: what a part needs is up before it and still up while it stops. Its methods may
// be called from any goroutine.
type lifecycle struct {
	log *slog.Logger
	mu  sync.Mutex // held through start and stop: a stop waits for a start under way
	// started are the parts up now, in the order they started; stop takes them all.
	started []part
}

// start starts ps in order. When one fails, every part started so far, by this call or
// an earlier one, is stopped in reverse order (within stopCtx's time), and start returns
// the failing part's error as it is: it already says what is wrong and how to fix it.
func (l *lifecycle) start(ctx context.Context, ps ...part) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range ps {
		if p.start != nil {
			if err := p.start(ctx); err != nil {
				l.log.Debug("agentd: a part failed to start", "part", p.name, "err", err)
				sctx, cancel := stopCtx(ctx)
				defer cancel()
				_ = l.stopLocked(sctx) // each part that fails to stop is logged there
				return err
			}
		}
		l.started = append(l.started, p)
	}
	return nil
}

// stop stops the started parts in reverse order; a second stop finds none. A part that
// fails to stop is logged and the rest are stopped all the same; the errors are joined.
func (l *lifecycle) stop(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stopLocked(ctx)
}

func (l *lifecycle) stopLocked(ctx context.Context) error {
	ps := l.started
	l.started = nil
	var errs []error
	for i := len(ps) - 1; i >= 0; i-- {
		p := ps[i]
		if p.stop == nil {
			continue
		}
		if err := p.stop(ctx); err != nil {
			l.log.Warn("agentd: a part did not stop cleanly", "part", p.name, "err", err)
			errs = append(errs, fmt.Errorf("%s: %w", p.name, err))
		}
	}
	return errors.Join(errs...)
}

// shutdownTimeout bounds how long the servers wait for requests in flight on shutdown.
const shutdownTimeout = 5 * time.Second

// stopCtx is the context parts stop under: ctx's values, not its end (the daemon's
// context has usually ended when it stops), with shutdownTimeout to finish.
func stopCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
}

// background runs a part's goroutines under a context of their own, so the part's stop
// ends them and waits for them whatever the rest of the daemon is doing.
type background struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup // the goroutines: run them with wg.Go
}

// context returns the goroutines' context, a child of ctx; call it once, in start.
func (b *background) context(ctx context.Context) context.Context {
	ctx, b.cancel = context.WithCancel(ctx)
	return ctx
}

// stop ends the context and waits for the goroutines; safe before context was called.
func (b *background) stop() {
	if b.cancel != nil {
		b.cancel()
	}
	b.wg.Wait()
}
