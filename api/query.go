package api

import (
	"cmp"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The query codec: a GET route's request travels in the query string, one parameter per
// field tagged `query:"name"` (string, int, int64, bool or time.Time), a zero field left
// out. A field's `want` tag says what a bad value should be, for the error; a number is
// never negative.

// queryField is one tagged field of a request: its parameter name, value and hint.
type queryField struct {
	name, want string
	v          reflect.Value
}

// queryFields lists the tagged fields of the structs dsts point to (or are), in order.
func queryFields(dsts ...any) []queryField {
	var fs []queryField
	for _, d := range dsts {
		rv := reflect.Indirect(reflect.ValueOf(d))
		for i := range rv.NumField() {
			f := rv.Type().Field(i)
			if name := f.Tag.Get("query"); name != "" {
				fs = append(fs, queryField{name: name, want: f.Tag.Get("want"), v: rv.Field(i)})
			}
		}
	}
	return fs
}

// encodeQuery is the query string of the requests in: their non-zero tagged fields.
func encodeQuery(in ...any) url.Values {
	q := url.Values{}
	for _, f := range queryFields(in...) {
		if f.v.IsZero() {
			continue
		}
		q.Set(f.name, toText(f.v))
	}
	return q
}

func toText(v reflect.Value) string {
	if t, ok := v.Interface().(time.Time); ok {
		return t.UTC().Format(time.RFC3339Nano)
	}
	switch v.Kind() {
	case reflect.Int, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	}
	return v.String()
}

// decodeQuery sets the tagged fields of the structs dsts point to from q, refusing a
// parameter none of them has and a value that is not what its field holds.
func decodeQuery(q url.Values, dsts ...any) error {
	fs := queryFields(dsts...)
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.name
	}
	for key := range q {
		if !slices.Contains(names, key) {
			return Errorf(ErrBadRequest, "unknown query parameter %q (want %s)", key, strings.Join(names, ", "))
		}
	}
	for _, f := range fs {
		s := q.Get(f.name)
		if s == "" {
			continue
		}
		if err := setText(f.v, s); err != nil {
			return Errorf(ErrBadRequest, "%s %q: want %s", f.name, s, cmp.Or(f.want, err.Error()))
		}
	}
	return nil
}

// setText sets v from s, or says what s should have been.
func setText(v reflect.Value, s string) error {
	if _, ok := v.Interface().(time.Time); ok {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return errorString("an RFC 3339 time like 2026-11-21T09:00:00Z")
		}
		v.Set(reflect.ValueOf(t))
		return nil
	}
	switch v.Kind() {
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 || v.OverflowInt(n) {
			return errorString("a whole number, 0 or more")
		}
		v.SetInt(n)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return errorString("true or false")
		}
		v.SetBool(b)
	default:
		v.SetString(s)
	}
	return nil
}

type errorString string

func (e errorString) Error() string { return string(e) }
