// Package clienttest is the one test fake of the local API, built on the route table of
// daemon/client: a Fake answers each route with a func the test sets, so a test states
// only the routes it uses. Serve it with daemon/localapi's handler (the real decoding,
// status codes and error replies), or hand it to anything that takes a client.Service.
package clienttest

import (
	"context"
	"sync"

	"github.com/agentd/agentd/daemon/client"
)

// Fake is a client.Service made of funcs, one per route. A route without one answers
// 500 naming the route. Its zero value is ready; it is safe for concurrent use.
type Fake struct {
	// Service is nil: the daemon's handlers find the funcs through RouteFunc instead of
	// calling its methods, which would panic.
	client.Service

	mu    sync.Mutex
	funcs map[string]any
}

var _ client.RouteFuncs = (*Fake)(nil)

// RouteFunc implements client.RouteFuncs.
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
// in the decoded request (client.None when it has no body). It replaces an earlier func.
func Handle[In, Out any](f *Fake, rt client.Route[In, Out], fn func(ctx context.Context, ref string, in In) (Out, error)) {
	f.set(rt.Pattern(), fn)
}

// HandleStream makes f answer the event stream rt with fn.
func HandleStream(f *Fake, rt client.StreamRoute, fn func(ref string, since int64) (<-chan client.Event, func(), error)) {
	f.set("GET "+rt.Path, fn)
}
