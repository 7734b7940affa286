package localapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
)

// TestBadRequests sends what Client never would and checks each gets a JSON error with
// the right status and a message naming the problem.
func TestBadRequests(t *testing.T) {
	tests := []struct {
		name       string
		method     string
		path       string
		header     map[string]string
		body       string
		wantStatus int
		wantError  string
	}{
		{"truncated_json", "POST", "/v0/agents", nil, `{"name":`, 400,
			"invalid request body: unexpected end of JSON"},
		{"syntax_error", "POST", "/v0/agents", nil, `{"name" "x"}`, 400,
			"invalid request body: invalid character '\"' after object key (at byte 9)"},
		{"unknown_field", "POST", "/v0/agents", nil, `{"name":"x","foo":1}`, 400,
			`invalid request body: unknown field "foo"`},
		{"wrong_type", "POST", "/v0/agents/writer/decision", nil, `{"proposal_id":"p1","count":"3"}`, 400,
			`invalid request body: field "count": want a whole number, got string`},
		{"not_an_object", "POST", "/v0/agents/writer/task", nil, `["x"]`, 400,
			"invalid request body: want a JSON object, got array"},
		{"trailing_data", "POST", "/v0/agents/writer/task", nil, `{"task":"x"} {"task":"y"}`, 400,
			"invalid request body: unexpected data after the JSON object"},
		{"trailing_garbage", "POST", "/v0/agents/writer/answer", nil, `{"text":"x"} }`, 400,
			"invalid request body: invalid character '}' looking for beginning of value (at byte 14)"},
		{"empty_body", "POST", "/v0/agents/writer/answer", nil, ``, 400,
			"invalid request body: empty; want a JSON object"},
		{"body_too_large", "POST", "/v0/agents", nil, `{"task":"` + strings.Repeat("x", maxBody) + `"}`, 413,
			"request body larger than 1048576 bytes"},
		{"wrong_method", "PUT", "/v0/status", nil, "", 405,
			"method PUT not allowed on /v0/status (allowed: GET)"},
		{"wrong_method_on_agent", "PATCH", "/v0/agents/writer", nil, "", 405,
			"method PATCH not allowed on /v0/agents/writer (allowed: GET, DELETE)"},
		{"get_on_post_only", "GET", "/v0/agents/writer/pause", nil, "", 405,
			"method GET not allowed on /v0/agents/writer/pause (allowed: POST)"},
		{"unknown_path", "GET", "/v0/nope", nil, "", 404,
			"no such endpoint: GET /v0/nope"},
		{"unclean_path", "GET", "/v0//status", nil, "", 404,
			"no such endpoint: GET /v0//status"},
		{"trailing_slash", "GET", "/v0/agents/writer/", nil, "", 404,
			"no such endpoint: GET /v0/agents/writer/"},
		{"unknown_version", "GET", "/v1/status", nil, "", 404,
			"no such endpoint: GET /v1/status"},
		{"origin_refused", "GET", "/v0/status", map[string]string{"Origin": "http://evil.example"}, "", 403,
			"requests from web browsers are refused (Origin or Referer header set)"},
		{"referer_refused", "POST", "/v0/agents/writer/stop", map[string]string{"Referer": "http://evil.example/x"}, "", 403,
			"requests from web browsers are refused (Origin or Referer header set)"},
		{"foreign_host_refused", "GET", "/v0/status", map[string]string{"Host": "evil.example"}, "", 403,
			`unexpected Host "evil.example": the local API answers only to local, localhost or agentd`},
		{"bad_since", "GET", "/v0/events?since=abc", nil, "", 400,
			`invalid since "abc": want the seq of the last event seen, a whole number ≥ 0`},
		{"negative_since", "GET", "/v0/agents/writer/events?since=-1", nil, "", 400,
			`invalid since "-1": want the seq of the last event seen, a whole number ≥ 0`},
		{"events_unknown_agent", "GET", "/v0/agents/nobody/events", nil, "", 404,
			`no agent "nobody": not found`},
		{"decide_unknown_agent", "POST", "/v0/agents/nobody/decision", nil, `{"proposal_id":"p1","kind":"approve"}`, 404,
			`no agent "nobody": not found`},
	}
	sock, _ := serve(t, newFake())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, hdr, body := rawDo(t, sock, tt.method, tt.path, tt.header, tt.body)
			if status != tt.wantStatus {
				t.Errorf("status = %d, want %d (body %s)", status, tt.wantStatus, body)
			}
			if ct := hdr.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", ct)
			}
			var e api.ErrorResponse
			if err := json.Unmarshal([]byte(body), &e); err != nil {
				t.Fatalf("body is not JSON: %q", body)
			}
			if e.Error != tt.wantError {
				t.Errorf("error = %q\nwant    %q", e.Error, tt.wantError)
			}
			if status == http.StatusMethodNotAllowed && hdr.Get("Allow") == "" {
				t.Error("405 without an Allow header")
			}
		})
	}
}

func TestAllowedHosts(t *testing.T) {
	sock, _ := serve(t, newFake())
	for _, host := range []string{"local", "localhost", "LOCALHOST:80", "agentd"} {
		t.Run(host, func(t *testing.T) {
			if status, _, body := rawDo(t, sock, "GET", "/v0/status", map[string]string{"Host": host}, ""); status != http.StatusOK {
				t.Errorf("Host %q: status %d %s, want 200", host, status, body)
			}
		})
	}
}

func TestStatusCodes(t *testing.T) {
	sock, _ := serve(t, newFake())
	tests := []struct {
		name, method, path, body string
		want                     int
	}{
		{"create_is_201", "POST", "/v0/agents", `{"name":"new","task":"t"}`, http.StatusCreated},
		{"answer_is_204", "POST", "/v0/agents/writer/answer", `{"text":"a"}`, http.StatusNoContent},
		{"delete_is_204", "DELETE", "/v0/agents/new", "", http.StatusNoContent},
		{"pause_without_body_is_200", "POST", "/v0/agents/writer/pause", "", http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if status, _, body := rawDo(t, sock, tt.method, tt.path, nil, tt.body); status != tt.want {
				t.Errorf("status = %d, want %d (%s)", status, tt.want, body)
			}
		})
	}
}
