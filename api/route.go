package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
)

// None is the request or reply of a route that has no body.
type None struct{}

// Route is one row of the local API, declared once for both sides: the client builds its
// request from it and the daemon (daemon/localapi) serves it by calling Call on its Service.
// In travels as the JSON body, or for a GET in the query string (encodeQuery);
// Out is the JSON reply (None: no body). A route has at most one path value, given to Call
// as ref ("" when the path has none).
type Route[In, Out any] struct {
	Method string
	Path   string // a ServeMux pattern, e.g. /v0/agents/{agent}/why
	Status int    // on success; 0 means 200
	Call   func(ctx context.Context, s Service, ref string, in In) (Out, error)
}

// inQuery says In travels in the query string: a GET has no body.
func (rt Route[In, Out]) inQuery() bool { return rt.Method == "GET" && !isNone[In]() }

// Endpoint is a Route with its types hidden, as the server lists them.
type Endpoint interface {
	// Pattern is the ServeMux pattern, "METHOD /path".
	Pattern() string
	// Serve reads the request's input (with decodeBody for a JSON body), calls the
	// Service and returns the status and value to reply with (nil: no body; a *List:
	// written with its Write, as it is read).
	Serve(s Service, r *http.Request, decodeBody func(any) error) (status int, out any, err error)
}

// Pattern implements Endpoint.
func (rt Route[In, Out]) Pattern() string { return rt.Method + " " + rt.Path }

// Serve implements Endpoint.
func (rt Route[In, Out]) Serve(s Service, r *http.Request, decodeBody func(any) error) (int, any, error) {
	var in In
	switch {
	case rt.inQuery():
		if err := decodeQuery(r.URL.Query(), &in); err != nil {
			return 0, nil, err
		}
	case !isNone[In]():
		if err := decodeBody(&in); err != nil {
			return 0, nil, err
		}
	}
	out, err := rt.Call(r.Context(), s, pathValue(r, rt.Path), in)
	if err != nil {
		return 0, nil, err
	}
	status := rt.Status
	if status == 0 {
		status = http.StatusOK
	}
	if isNone[Out]() {
		return status, nil, nil
	}
	return status, NonNil(out), nil
}

// URL is the route's path with ref in its one path value, and query when it has one.
func (rt Route[In, Out]) URL(ref string, in In) string {
	p := rt.Path
	if i := strings.IndexByte(p, '{'); i >= 0 {
		j := strings.IndexByte(p[i:], '}')
		p = p[:i] + url.PathEscape(ref) + p[i+j+1:]
	}
	if rt.inQuery() {
		if q := encodeQuery(in); len(q) > 0 {
			p += "?" + q.Encode()
		}
	}
	return p
}

// Do makes one request of rt on c for ref and in, decoding the reply into Out: the one
// call of every route, for agentctl and tests alike.
func (rt Route[In, Out]) Do(ctx context.Context, c *Client, ref string, in In) (Out, error) {
	var out Out
	var body any
	if !rt.inQuery() && !isNone[In]() {
		body = in
	}
	path := rt.URL(ref, in)
	resp, err := c.send(ctx, rt.Method, path, body)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	if isNone[Out]() {
		io.Copy(io.Discard, resp.Body)
		return out, nil
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return out, fmt.Errorf("client: decoding %s %s: %w", rt.Method, path, err)
	}
	return out, nil
}

// Send is Do for a call whose reply is not needed (a route replying None).
func (rt Route[In, Out]) Send(ctx context.Context, c *Client, ref string, in In) error {
	_, err := rt.Do(ctx, c, ref, in)
	return err
}

// pathValue is the request's one path value, named by the pattern's {name}.
func pathValue(r *http.Request, pattern string) string {
	i := strings.IndexByte(pattern, '{')
	if i < 0 {
		return ""
	}
	j := strings.IndexByte(pattern[i:], '}')
	return r.PathValue(pattern[i+1 : i+j])
}

func isNone[T any]() bool {
	var v T
	_, ok := any(v).(None)
	return ok
}

// NonNil makes an empty list encode as [] rather than null, in the daemon's replies and
// agentctl's --json output alike, so they are stable.
func NonNil(v any) any {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice && rv.IsNil() {
		return reflect.MakeSlice(rv.Type(), 0, 0).Interface()
	}
	return v
}

// StreamRoute is a route whose reply is an NDJSON stream of Events, resumed after ?since=N.
type StreamRoute struct {
	Path  string // a ServeMux pattern, served for GET
	Since string // what since counts, for the error on a bad one
	// Subscribe starts the stream for ref (the path value, "" when there is none).
	Subscribe func(s Service, ref string, since int64) (<-chan Event, func(), error)
}

// Open reads the request's since and subscribes.
func (rt StreamRoute) Open(s Service, r *http.Request) (<-chan Event, func(), error) {
	since := int64(0)
	if v := r.URL.Query().Get("since"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, nil, Errorf(ErrBadRequest, "invalid since %q: want %s, a whole number ≥ 0", v, rt.Since)
		}
		since = n
	}
	return rt.Subscribe(s, pathValue(r, rt.Path), since)
}

// URL is the stream's path for ref, resuming after since when it is > 0.
func (rt StreamRoute) URL(ref string, since int64) string {
	p := Route[None, None]{Path: rt.Path}.URL(ref, None{})
	if since > 0 {
		p += "?since=" + strconv.FormatInt(since, 10)
	}
	return p
}

// endpoints is every Route, in the order declared; register adds one.
var endpoints []Endpoint

func register[E Endpoint](rt E) E {
	endpoints = append(endpoints, rt)
	return rt
}

// Endpoints lists every Route of the API, for the server; streams are in Streams.
func Endpoints() []Endpoint { return endpoints }

// Streams lists the API's event streams.
func Streams() []StreamRoute { return []StreamRoute{EventsRoute, AgentEventsRoute, TeamEventsRoute} }

// The shapes of Service method a Route calls: each turns a method expression
// (Service.Pause) into a Route's Call, so a row names the method it serves.

// byNothing calls a method that takes neither the path's ref nor a request.
func byNothing[Out any](f func(Service, context.Context) (Out, error)) func(context.Context, Service, string, None) (Out, error) {
	return func(ctx context.Context, s Service, _ string, _ None) (Out, error) { return f(s, ctx) }
}

// byRef calls a method that takes the path's ref.
func byRef[Out any](f func(Service, context.Context, string) (Out, error)) func(context.Context, Service, string, None) (Out, error) {
	return func(ctx context.Context, s Service, ref string, _ None) (Out, error) { return f(s, ctx, ref) }
}

// byRequest calls a method that takes the request.
func byRequest[In, Out any](f func(Service, context.Context, In) (Out, error)) func(context.Context, Service, string, In) (Out, error) {
	return func(ctx context.Context, s Service, _ string, in In) (Out, error) { return f(s, ctx, in) }
}

// byRefRequest calls a method that takes the path's ref and the request.
func byRefRequest[In, Out any](f func(Service, context.Context, string, In) (Out, error)) func(context.Context, Service, string, In) (Out, error) {
	return func(ctx context.Context, s Service, ref string, in In) (Out, error) { return f(s, ctx, ref, in) }
}

// byRefNoReply calls a method that takes the path's ref and replies with no body.
func byRefNoReply(f func(Service, context.Context, string) error) func(context.Context, Service, string, None) (None, error) {
	return func(ctx context.Context, s Service, ref string, _ None) (None, error) { return None{}, f(s, ctx, ref) }
}
