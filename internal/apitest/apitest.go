// Package apitest is the one test fake of the local API, built on the route table of
// api: a Fake answers each route with a func the test sets, so a test states
// only the routes it uses. Serve it with daemon/localapi's handler (the real decoding,
// status codes and error replies), or hand it to anything that takes a api.Service.
package apitest

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/agentd/agentd/api"
)

// Fake is a api.Service made of funcs, one per route. A route without one answers
// 500 naming the route. Its zero value is ready; it is safe for concurrent use.
type Fake struct {
	// Service is nil: the daemon's handlers find the funcs through RouteFunc instead of
	// calling its methods, which would panic.
	api.Service

	mu    sync.Mutex
	funcs map[string]any
}

var _ api.RouteFuncs = (*Fake)(nil)

// RouteFunc implements api.RouteFuncs.
func (f *Fake) RouteFunc(pattern string) (any, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn, ok := f.funcs[pattern]
	return fn, ok
}

func (f *Fake) set(pattern string, fn any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.funcs == nil {
		f.funcs = map[string]any{}
	}
	f.funcs[pattern] = fn
}

// Handle makes f answer rt with fn: ref is the route's path value ("" when it has none),
// in the decoded request (api.None when it has no body). It replaces an earlier func.
func Handle[In, Out any](f *Fake, rt api.Route[In, Out], fn func(ctx context.Context, ref string, in In) (Out, error)) {
	f.set(rt.Pattern(), fn)
}

// HandleList makes f answer the list route rt with fn, which returns one page (p says
// which; its Limit is never 0) and the cursor of the next ("" when none follows).
func HandleList[Q, T any](f *Fake, rt api.ListRoute[Q, T], fn func(ctx context.Context, q Q, p api.Page) ([]T, string, error)) {
	f.set(rt.Pattern(), fn)
}

// PageOf answers a list route's page the way the daemon does, from a whole list in its
// order: at most p.Limit items after the cursor p.After (here an item's key), the cursor
// of the last when more follow, and the daemon's refusal of a cursor it did not give.
func PageOf[T any](items []T, key func(T) string, p api.Page) ([]T, string, error) {
	start := 0
	if p.After != "" {
		start = -1
		for i, it := range items {
			if key(it) == p.After {
				start = i + 1
			}
		}
		if start < 0 {
			return nil, "", api.Errorf(api.ErrBadRequest, "after %q is not a cursor of this listing: leave after out to start at the first", p.After)
		}
	}
	end := min(len(items), start+p.Limit)
	page := append([]T{}, items[start:end]...)
	if end < len(items) {
		return page, key(items[end-1]), nil
	}
	return page, "", nil
}

// HandleStream makes f answer the event stream rt with fn.
func HandleStream(f *Fake, rt api.StreamRoute, fn func(ref string, since int64) (<-chan api.Event, func(), error)) {
	f.set("GET "+rt.Path, fn)
}

// Handler serves f's routes over HTTP the way the daemon does for the client: the body
// decoded strictly, the route's status, and errors as {"error": ...} with the status of
// their kind (api.StatusOf). It is for tests that may not import the daemon
// (agentctl's); others serve f with daemon/localapi.
func Handler(f *Fake) http.Handler {
	mux := http.NewServeMux()
	for _, ep := range api.Endpoints() {
		mux.HandleFunc(ep.Pattern(), func(w http.ResponseWriter, r *http.Request) {
			status, out, err := ep.Serve(f, r, func(v any) error {
				dec := json.NewDecoder(r.Body)
				dec.DisallowUnknownFields()
				if err := dec.Decode(v); err != nil {
					return api.Errorf(api.ErrBadRequest, "invalid request body: %v", err)
				}
				return nil
			})
			if err != nil {
				status, out = api.StatusOf(err), api.ErrorResponse{Error: err.Error()}
			}
			if l, ok := out.(*api.List); ok {
				l.Write(w)
				return
			}
			if out == nil {
				w.WriteHeader(status)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			json.NewEncoder(w).Encode(out)
		})
	}
	return mux
}
