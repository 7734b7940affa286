package localapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path"
	"runtime/debug"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
)

// Error is an error the API layer makes itself (a bad body, an unknown path), carrying the
// HTTP status to reply with. Errors from the Service carry theirs through client's sentinels.
type Error struct {
	Status int    // HTTP status code
	Msg    string // shown to the user as is
}

func (e *Error) Error() string { return e.Msg }

// Errorf is an *Error with status and the formatted message.
func Errorf(status int, format string, args ...any) *Error {
	return &Error{Status: status, Msg: fmt.Sprintf(format, args...)}
}

// handlerFunc is an API handler: it writes a reply, or returns an error that serveHTTP
// turns into one. After a handler has written anything, an error can only be logged.
type handlerFunc = func(w http.ResponseWriter, r *http.Request) error

// handler is the http.Handler NewHandler returns.
type handler struct {
	svc Service
	log *slog.Logger
	mux *http.ServeMux
}

// NewHandler returns the local API over svc (which must not be nil). It refuses requests a browser could send
// (any Origin or Referer header, a Host other than local, localhost or agentd) and logs
// each request at debug level without its body. A nil log discards.
func NewHandler(svc Service, log *slog.Logger) http.Handler {
	return newHandler(svc, api.Endpoints(), api.Streams(), log)
}

// newHandler serves the given route table over svc (tests serve apitest.Fake's).
func newHandler(svc Service, eps []api.Endpoint, streams []api.StreamRoute, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &handler{svc: svc, log: log, mux: http.NewServeMux()}
	Mount(h.mux, h.routes(eps, streams), h.wrap, func(status int, format string, args ...any) error {
		return Errorf(status, format, args...)
	})
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	defer func() {
		h.log.Debug("api request", "method", r.Method, "path", r.URL.Path,
			"status", sw.status, "duration", time.Since(start))
	}()
	if err := checkLocal(r); err != nil {
		h.writeError(sw, r, err)
		return
	}
	// ServeMux would redirect an unclean path, and Go's client would follow with a Referer.
	if p := r.URL.EscapedPath(); p != path.Clean(p) {
		h.writeError(sw, r, Errorf(http.StatusNotFound, "no such endpoint: %s %s", r.Method, r.URL.Path))
		return
	}
	h.mux.ServeHTTP(sw, r)
}

// wrap adapts a handlerFunc to http.Handler, sending its error (or panic) to writeError,
// the one place errors become replies.
func (h *handler) wrap(fn handlerFunc) http.Handler { return Wrap(h.log, "api", h.writeError, fn) }

// Wrap turns fn's error, or its panic (logged as the front end's with its stack), into
// the one error reply writeError writes: every HTTP front end recovers the same way.
func Wrap(log *slog.Logger, frontEnd string, writeError func(http.ResponseWriter, *http.Request, error), fn handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				log.Error(frontEnd+": handler panicked", "method", r.Method, "path", r.URL.Path,
					"panic", p, "stack", string(debug.Stack()))
				writeError(w, r, fmt.Errorf("internal error: %v", p))
			}
		}()
		if err := fn(w, r); err != nil {
			writeError(w, r, err)
		}
	})
}

// checkLocal refuses what a web page could send: browsers set Origin or Referer on the
// requests that matter and cannot choose Host, so this stops DNS rebinding and CSRF.
func checkLocal(r *http.Request) error {
	if r.Header.Get("Origin") != "" || r.Header.Get("Referer") != "" {
		return Errorf(http.StatusForbidden, "requests from web browsers are refused (Origin or Referer header set)")
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	switch strings.ToLower(host) {
	case "", "local", "localhost", "agentd":
		return nil
	}
	return Errorf(http.StatusForbidden, "unexpected Host %q: the local API answers only to local, localhost or agentd", r.Host)
}

// StatusOf maps an error to its HTTP status: the API layer's own, else its kind's.
func StatusOf(err error) int {
	if ae := (*Error)(nil); errors.As(err, &ae) {
		return ae.Status
	}
	return api.StatusOf(err)
}

// writeError replies {"error": "..."} with the error's status. 500s are logged, unless the
// client went away, which is not the daemon's fault.
func (h *handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status := StatusOf(err)
	if sw, ok := w.(*statusWriter); ok && sw.status != 0 {
		h.log.Debug("api: error after reply began", "method", r.Method, "path", r.URL.Path, "err", err)
		return
	}
	if status == http.StatusInternalServerError {
		lvl := slog.LevelError
		if r.Context().Err() != nil && errors.Is(err, context.Canceled) {
			lvl = slog.LevelDebug
		}
		h.log.Log(r.Context(), lvl, "api: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	Reply(w, status, api.ErrorResponse{Error: err.Error()})
}

// Reply writes v as a JSON reply: the one writer of every listener's JSON (the local
// API, the Agent Protocol, the TCP listener's refusals). A value that will not encode (a
// stored proposal's args that are not JSON, say) becomes a 500 before anything is written.
func Reply(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding reply: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, err = w.Write(append(b, '\n'))
	return err
}

// statusWriter records the status for the request log and whether the reply has begun.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's Flush.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
