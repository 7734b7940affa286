package localapi

import (
	"net/http"
	"strings"
)

// Route is one row of an HTTP route table: a method, a ServeMux path and its handler.
type Route struct {
	Method, Path string
	Fn           func(w http.ResponseWriter, r *http.Request) error
}

// Mount registers routes on mux through wrap, then, through wrap too, a 405 (with Allow)
// for the methods a listed path does not list and a 404 for every other path; fail makes
// those two errors. Shared so every HTTP front end refuses the same way.
func Mount(mux *http.ServeMux, routes []Route,
	wrap func(func(http.ResponseWriter, *http.Request) error) http.Handler,
	fail func(status int, format string, args ...any) error) {
	allowed := map[string][]string{} // path → methods, for 405 replies
	for _, rt := range routes {
		mux.Handle(rt.Method+" "+rt.Path, wrap(rt.Fn))
		allowed[rt.Path] = append(allowed[rt.Path], rt.Method)
	}
	// A pattern without a method is less specific than the same path with one, so these
	// catch only the methods the table does not list.
	for p, methods := range allowed {
		allow := strings.Join(methods, ", ")
		mux.Handle(p, wrap(func(w http.ResponseWriter, r *http.Request) error {
			w.Header().Set("Allow", allow)
			return fail(http.StatusMethodNotAllowed, "method %s not allowed on %s (allowed: %s)", r.Method, r.URL.Path, allow)
		}))
	}
	mux.Handle("/", wrap(func(w http.ResponseWriter, r *http.Request) error {
		return fail(http.StatusNotFound, "no such endpoint: %s %s", r.Method, r.URL.Path)
	}))
}
