// Package apitest is the one test fake of the local API, built on the route table of
// api: a Fake answers each route with a func the test sets, so a test states only the
// routes it uses. Serve its Endpoints and Streams with daemon/localapi's handler (the
// real decoding, status codes and error replies), or with Handler where a test may not
// import the daemon. Agents reads a daemon's agents for a test (the Client pages them).
package apitest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/agentd/agentd/api"
)

// Fake answers each route of the API with a func the test sets, through the route
// table's own decoding and replies: Endpoints and Streams are the whole table, each
// answering with its func, or 500 naming the route when none is set. Its zero value is
// ready; it is safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	routes  map[string]api.Endpoint // pattern → the route with its Call set to the test's func
	streams map[string]func(ref string, since int64) (<-chan api.Event, func(), error)
}

func (f *Fake) set(pattern string, ep api.Endpoint) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.routes == nil {
		f.routes = map[string]api.Endpoint{}
	}
	f.routes[pattern] = ep
}

func (f *Fake) route(pattern string) (api.Endpoint, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ep, ok := f.routes[pattern]
	return ep, ok
}

// Endpoints is every route of the API, each answering with the func set for it when
// the request comes (so a test may set it after serving).
func (f *Fake) Endpoints() []api.Endpoint {
	var out []api.Endpoint
	for _, ep := range api.Endpoints() {
		out = append(out, fakeRoute{f, ep.Pattern()})
	}
	return out
}

// Streams is every event stream of the API, each answering with the func set for it.
func (f *Fake) Streams() []api.StreamRoute {
	var out []api.StreamRoute
	for _, st := range api.Streams() {
		pattern := "GET " + st.Path
		st.Subscribe = func(_ api.Service, ref string, since int64) (<-chan api.Event, func(), error) {
			f.mu.Lock()
			fn := f.streams[pattern]
			f.mu.Unlock()
			if fn == nil {
				return nil, nil, notSet(pattern)
			}
			return fn(ref, since)
		}
		out = append(out, st)
	}
	return out
}

// fakeRoute is one route of a Fake, found when a request comes.
type fakeRoute struct {
	f       *Fake
	pattern string
}

func (r fakeRoute) Pattern() string { return r.pattern }

func (r fakeRoute) Serve(s api.Service, req *http.Request, decodeBody func(any) error) (int, any, error) {
	ep, ok := r.f.route(r.pattern)
	if !ok {
		return 0, nil, notSet(r.pattern)
	}
	return ep.Serve(s, req, decodeBody)
}

func notSet(pattern string) error {
	return fmt.Errorf("%s is not set in this fake: set it with apitest.Handle", pattern)
}

// Handle makes f answer rt with fn: ref is the route's path value ("" when it has none),
// in the decoded request (api.None when it has no body). It replaces an earlier func.
func Handle[In, Out any](f *Fake, rt api.Route[In, Out], fn func(ctx context.Context, ref string, in In) (Out, error)) {
	rt.Call = func(ctx context.Context, _ api.Service, ref string, in In) (Out, error) { return fn(ctx, ref, in) }
	f.set(rt.Pattern(), rt)
}

// HandleList makes f answer the list route rt with fn, which returns one page (p says
// which; its Limit is never 0) and the cursor of the next ("" when none follows).
func HandleList[Q, T any](f *Fake, rt api.ListRoute[Q, T], fn func(ctx context.Context, q Q, p api.Page) ([]T, string, error)) {
	rt.Call = func(ctx context.Context, _ api.Service, q Q, p api.Page) ([]T, string, error) { return fn(ctx, q, p) }
	f.set(rt.Pattern(), rt)
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
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.streams == nil {
		f.streams = map[string]func(string, int64) (<-chan api.Event, func(), error){}
	}
	f.streams["GET "+rt.Path] = fn
}

// Handler serves f's routes over HTTP the way the daemon does for the client: the body
// decoded strictly, the route's status, and errors as {"error": ...} with the status of
// their kind (api.StatusOf). It is for tests that may not import the daemon
// (agentctl's); others serve f with daemon/localapi.
func Handler(f *Fake) http.Handler {
	mux := http.NewServeMux()
	for _, ep := range f.Endpoints() {
		mux.HandleFunc(ep.Pattern(), func(w http.ResponseWriter, r *http.Request) {
			status, out, err := ep.Serve(nil, r, func(v any) error {
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

// Agents lists every agent of the daemon c reaches, oldest first, for a test to look at.
func Agents(ctx context.Context, c *api.Client) ([]api.Agent, error) {
	out := []api.Agent{}
	err := c.EachAgent(ctx, api.AgentQuery{}, func(a api.Agent) error { out = append(out, a); return nil })
	return out, err
}
