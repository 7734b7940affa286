package localapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"

	"github.com/agentd/agentd/api"
)

// maxBody bounds a request body; the largest real one is a feedback text.
const maxBody = 1 << 20

// routes is the whole API: every Route and stream of the wire package's table, each
// served by the one generic handler of its kind.
func (h *handler) routes(eps []api.Endpoint, streams []api.StreamRoute) []Route {
	var out []Route
	for _, ep := range eps {
		method, path, _ := strings.Cut(ep.Pattern(), " ")
		out = append(out, Route{method, path, h.serve(ep)})
	}
	for _, st := range streams {
		out = append(out, Route{"GET", st.Path, h.events(st)})
	}
	return out
}

// serve decodes the request for ep, calls the Service and encodes the reply.
func (h *handler) serve(ep api.Endpoint) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		status, out, err := ep.Serve(h.svc, r, func(v any) error {
			if err := DecodeBody(w, r, v, false); err != nil {
				return err
			}
			stampDecider(r.Context(), v)
			return nil
		})
		if err != nil {
			return err
		}
		if l, ok := out.(*api.List); ok {
			// Written as it is read; an error once it began cuts it short, and the
			// client says so.
			if err := l.Write(w); err != nil && r.Context().Err() == nil {
				h.log.Warn("api: list cut short", "path", r.URL.Path, "err", err)
			}
			return nil
		}
		if out == nil {
			w.WriteHeader(status)
			return nil
		}
		return Reply(w, status, out)
	}
}

// DecodeBody reads exactly one JSON object into v: at most maxBody bytes, nothing after
// it, each failure named. The local API is strict: no unknown fields, no empty body.
// Lenient (Agent Protocol) ignores unknown fields, as that protocol allows, and takes an
// empty body for {} (curl -X POST sends none).
func DecodeBody(w http.ResponseWriter, r *http.Request, v any, lenient bool) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	if !lenient {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		if lenient && errors.Is(err, io.EOF) {
			return nil
		}
		return bodyError(err)
	}
	if err := dec.Decode(&json.RawMessage{}); !errors.Is(err, io.EOF) {
		if err != nil {
			return bodyError(err)
		}
		return Errorf(http.StatusBadRequest, "invalid request body: unexpected data after the JSON object")
	}
	return nil
}

// bodyError explains a decoding failure in the terms of the request.
func bodyError(err error) error {
	var (
		syntax  *json.SyntaxError
		typ     *json.UnmarshalTypeError
		tooBig  *http.MaxBytesError
		badBody = func(format string, args ...any) error {
			return Errorf(http.StatusBadRequest, "invalid request body: "+format, args...)
		}
	)
	switch {
	case errors.As(err, &tooBig):
		return Errorf(http.StatusRequestEntityTooLarge, "request body larger than %d bytes", tooBig.Limit)
	case errors.Is(err, io.EOF):
		return badBody("empty; want a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badBody("unexpected end of JSON")
	case errors.As(err, &syntax):
		return badBody("%s (at byte %d)", syntax.Error(), syntax.Offset)
	case errors.As(err, &typ) && typ.Field != "":
		return badBody("field %q: want %s, got %s", typ.Field, jsonKind(typ.Type), typ.Value)
	case errors.As(err, &typ):
		return badBody("want a JSON object, got %s", typ.Value)
	}
	return badBody("%s", strings.TrimPrefix(err.Error(), "json: "))
}

// jsonKind names a Go type the way a JSON writer thinks of it.
func jsonKind(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return t.String()
}
