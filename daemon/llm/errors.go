package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/backoff"
	ollama "github.com/ollama/ollama/api"
)

// ErrUnavailable matches (with errors.Is) every error meaning the model server is down, busy
// or misbehaving: connection refused or reset, DNS failures, transport timeouts, HTTP 5xx,
// 408 and 429, a reply cut off mid-body. The caller should wait (NextBackoff) and retry.
var ErrUnavailable = errors.New("model server unavailable")

// modelBackoff is the wait while the model server is unavailable: 1s, 2s, 4s, … 30s
// with ±20% jitter.
var modelBackoff = backoff.Policy{Base: time.Second, Max: 30 * time.Second, Jitter: 0.2}

// NextBackoff returns the wait before retry attempt n (n ≥ 1; smaller n counts as 1)
// while the model server is unavailable.
func NextBackoff(attempt int) time.Duration { return modelBackoff.Next(attempt) }

// UnavailableError is the concrete error behind ErrUnavailable.
type UnavailableError struct {
	Host   string // the server's base URL
	Op     string // chat, version or show
	Status int    // the HTTP status, or 0 when no response arrived
	Err    error  // the underlying transport or ollama.StatusError
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("ollama at %s: %s: %s", e.Host, e.Op, describe(e.Err))
}

// Unwrap returns the underlying error.
func (e *UnavailableError) Unwrap() error { return e.Err }

// Is reports whether target is ErrUnavailable.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// ModelNotFoundError says the server does not have the model; `ollama pull` fixes it.
type ModelNotFoundError struct {
	Model string
	Err   error // the server's answer
}

func (e *ModelNotFoundError) Error() string {
	return fmt.Sprintf("model %q not found: run `ollama pull %s`", e.Model, e.Model)
}

// Unwrap returns the server's answer.
func (e *ModelNotFoundError) Unwrap() error { return e.Err }

// StatusError is a refusal retrying will not fix: a 4xx other than model-not-found, 408 and 429
// (for example a model that cannot chat, or a malformed request).
type StatusError struct {
	Host    string
	Op      string
	Status  int
	Message string // Ollama's error text
	Err     error  // the ollama.StatusError or ollama.AuthorizationError
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("ollama at %s: %s: %s", e.Host, e.Op, describe(e.Err))
}

// Unwrap returns the api package's error.
func (e *StatusError) Unwrap() error { return e.Err }

// errIncomplete marks a 2xx reply that ended without its final record.
var errIncomplete = errors.New("the reply ended before it was complete")

// classify turns whatever the api package returned into one of this package's errors.
// A done context wins over everything: the caller gave up, the server did not fail.
func (c *Client) classify(ctx context.Context, op, model string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("ollama %s: %w", op, cerr)
	}
	var se ollama.StatusError
	if errors.As(err, &se) {
		switch {
		case se.StatusCode == http.StatusNotFound && isModelNotFound(se.ErrorMessage):
			return &ModelNotFoundError{Model: model, Err: err}
		case se.StatusCode == http.StatusRequestTimeout, se.StatusCode == http.StatusTooManyRequests,
			se.StatusCode >= 500:
			return &UnavailableError{Host: c.host, Op: op, Status: se.StatusCode, Err: err}
		case se.StatusCode >= 400:
			return &StatusError{Host: c.host, Op: op, Status: se.StatusCode, Message: se.ErrorMessage, Err: err}
		}
	}
	var ae ollama.AuthorizationError
	if errors.As(err, &ae) {
		return &StatusError{Host: c.host, Op: op, Status: ae.StatusCode, Message: "unauthorized", Err: err}
	}
	// Everything else came from the connection or from a server that answered with
	// something other than Ollama's protocol: both are worth waiting out.
	return &UnavailableError{Host: c.host, Op: op, Err: err}
}

// isModelNotFound recognizes Ollama's 404 texts ("model 'x' not found", `model "x" not found,
// try pulling it first`), so that a 404 from something that is not Ollama is not mistaken for one.
func isModelNotFound(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "model") && strings.Contains(m, "not found")
}

// describe renders an underlying error briefly: HTTP errors as "HTTP 503 Service
// Unavailable: message", transport errors without the repeated request URL, and whatever a
// server that is not Ollama sent cut to a readable length.
func describe(err error) string {
	var msg string
	var se ollama.StatusError
	var ue *url.Error
	switch {
	case err == nil:
		return "unknown error"
	case errors.As(err, &se):
		msg = fmt.Sprintf("HTTP %d %s", se.StatusCode, http.StatusText(se.StatusCode))
		if m := strings.TrimSpace(se.ErrorMessage); m != "" {
			msg += ": " + m
		}
	case errors.As(err, &ue) && ue.Err != nil:
		msg = ue.Err.Error()
	default:
		msg = strings.TrimSpace(err.Error())
	}
	if msg == "" {
		return "empty reply"
	}
	const maxLen = 300
	if len(msg) > maxLen {
		msg = strings.ToValidUTF8(msg[:maxLen], "") + "…"
	}
	return msg
}
