package api

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestQueryCodecRoundTripsEveryFieldKind(t *testing.T) {
	in := AuditQuery{Agent: "writer", Kind: "decision", Since: time.Date(2026, 11, 21, 9, 0, 0, 5, time.UTC), Limit: 20, Before: 7}
	q := encodeQuery(in)
	if got, want := q.Encode(), "agent=writer&before=7&kind=decision&limit=20&since=2026-11-21T09%3A00%3A00.000000005Z"; got != want {
		t.Errorf("encodeQuery = %s; want %s", got, want)
	}
	var out AuditQuery
	if err := decodeQuery(q, &out); err != nil || !reflect.DeepEqual(out, in) {
		t.Errorf("decodeQuery = %+v, %v; want %+v", out, err, in)
	}
	if q := encodeQuery(AgentQuery{}, &Page{}); len(q) != 0 {
		t.Errorf("zero requests encode as %s; want an empty query", q.Encode())
	}
}

func TestQueryCodecErrorNamesTheParameterAndTheFix(t *testing.T) {
	cases := []struct {
		name, query string
		dst         []any
		want        string
	}{
		{"unknown_parameter", "brief=true&sort=name", []any{&AgentQuery{}, &Page{}}, `unknown query parameter "sort" (want brief, after, limit)`},
		{"bad_bool", "brief=maybe", []any{&AgentQuery{}}, `brief "maybe": want true or false`},
		{"negative_number", "limit=-1", []any{&ScheduleHistoryQuery{}}, `limit "-1": want a whole number, 0 or more`},
		{"bad_time", "since=yesterday", []any{&AuditQuery{}}, `since "yesterday": want an RFC 3339 time like 2026-11-21T09:00:00Z`},
		{"field_hint", "step=x", []any{&DiffRequest{}}, `step "x": want a step number like 3 (agentctl history lists them)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, _ := url.ParseQuery(c.query)
			err := decodeQuery(v, c.dst...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("decodeQuery(%s) = %v; want %s", c.query, err, c.want)
			}
		})
	}
}
