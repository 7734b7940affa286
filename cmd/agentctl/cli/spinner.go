package cli

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// spinner animates one status line on a terminal while the agent waits on the model. It
// shares the follower's mutex: its methods are called, and its frames drawn, with mu held,
// so a frame never lands in the middle of other output. A nil *spinner does nothing, which
// is what follow uses when stderr is not a terminal.
type spinner struct {
	w  io.Writer
	mu *sync.Mutex

	gen     int // bumped on start and stop; a drawing goroutine exits once it is stale
	label   string
	since   time.Time // when label started: the frame shows how long it has waited
	running bool
	drawn   bool // a frame is on screen and must be erased before other output
}

const spinInterval = 120 * time.Millisecond

var spinFrames = []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")

// start shows label with an animation, replacing any other label, counting from since:
// when the wait began at the daemon (the agent's StateSince), so a follow that attaches
// late shows how long the model has really been working; zero counts from now. Call with
// mu held.
func (s *spinner) start(label string, since time.Time) {
	if s == nil {
		return
	}
	if since.IsZero() {
		since = time.Now()
	}
	if s.running && s.label == label {
		if since.Before(s.since) {
			s.since = since // the daemon says this wait began earlier
		}
		return
	}
	s.gen++
	s.label, s.running, s.since = label, true, since
	go s.draw(s.gen)
}

// stop erases the spinner. Call with mu held.
func (s *spinner) stop() {
	if s == nil {
		return
	}
	s.gen++
	s.running = false
	s.clear()
}

// clear erases the current frame so other output starts on a clean line; the next frame
// redraws it. Call with mu held.
func (s *spinner) clear() {
	if s != nil && s.drawn {
		io.WriteString(s.w, "\r\033[K")
		s.drawn = false
	}
}

func (s *spinner) draw(gen int) {
	t := time.NewTicker(spinInterval)
	defer t.Stop()
	for i := 0; ; i++ {
		s.mu.Lock()
		if s.gen != gen {
			s.mu.Unlock()
			return
		}
		io.WriteString(s.w, "\r\033[K"+s.frame(i, time.Now()))
		s.drawn = true
		s.mu.Unlock()
		<-t.C
	}
}

// frame is the spinner's line at tick i: what it waits on and for how long, e.g.
// "⠙ thinking: waiting for the model (12 s)".
func (s *spinner) frame(i int, now time.Time) string {
	return fmt.Sprintf("%c %s (%d s)", spinFrames[i%len(spinFrames)], s.label, int(now.Sub(s.since).Seconds()))
}

// isTerminal reports whether w is a terminal that understands cursor movement.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd())) && os.Getenv("TERM") != "dumb"
}

// isTerminalReader reports whether r is a terminal: lines typed there are read by a
// person who sees each prompt, unlike lines piped in ahead.
func isTerminalReader(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
