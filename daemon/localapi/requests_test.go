package localapi

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
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

// TestHostGuardHostAndOriginForms: the one guard every TCP listener uses answers only
// requests naming the listener itself, in exactly the forms a browser or a client on
// the same machine sends, and refuses every other spelling of a name or an address.
func TestHostGuardHostAndOriginForms(t *testing.T) {
	loopback := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7077}
	v6 := &net.TCPAddr{IP: net.IPv6loopback, Port: 7077}
	any4 := &net.TCPAddr{IP: net.IPv4zero, Port: 7077}
	port80 := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80}
	tests := []struct {
		name      string
		addr      net.Addr
		listen    string
		host      string
		origin    []string // nil: no Origin header
		fetchSite string
		status    int
	}{
		{"loopback_ip", loopback, "127.0.0.1:7077", "127.0.0.1:7077", nil, "", 0},
		{"localhost", loopback, "127.0.0.1:7077", "localhost:7077", nil, "", 0},
		{"localhost_any_case", loopback, "127.0.0.1:7077", "LocalHost:7077", nil, "", 0},
		{"ipv6_loopback_bracketed", v6, "[::1]:7077", "[::1]:7077", nil, "", 0},
		{"ipv4_mapped_loopback", loopback, "127.0.0.1:7077", "[::ffff:127.0.0.1]:7077", nil, "", 0},
		{"configured_name", loopback, "metrics.internal:7077", "metrics.internal:7077", nil, "", 0},
		{"configured_name_any_case", loopback, "Metrics.Internal:7077", "METRICS.internal:7077", nil, "", 0},
		{"any_address_by_ip", any4, "0.0.0.0:7077", "192.168.1.20:7077", nil, "", 0},
		{"default_port_implied", port80, "127.0.0.1:80", "127.0.0.1", nil, "", 0},
		{"same_origin", loopback, "127.0.0.1:7077", "127.0.0.1:7077", []string{"http://127.0.0.1:7077"}, "same-origin", 0},
		{"same_origin_localhost", loopback, "127.0.0.1:7077", "localhost:7077", []string{"http://localhost:7077"}, "", 0},
		{"same_origin_ipv6", v6, "[::1]:7077", "[::1]:7077", []string{"http://[::1]:7077"}, "", 0},

		{"missing_host", loopback, "127.0.0.1:7077", "", nil, "", 421},
		{"empty_host_with_port", loopback, "127.0.0.1:7077", ":7077", nil, "", 421},
		{"no_port_not_80", loopback, "127.0.0.1:7077", "localhost", nil, "", 421},
		{"no_port_ip", loopback, "127.0.0.1:7077", "127.0.0.1", nil, "", 421},
		{"other_port", loopback, "127.0.0.1:7077", "localhost:7078", nil, "", 421},
		{"port_leading_zero", loopback, "127.0.0.1:7077", "127.0.0.1:07077", nil, "", 421},
		{"port_plus_sign", loopback, "127.0.0.1:7077", "127.0.0.1:+7077", nil, "", 421},
		{"trailing_dot_localhost", loopback, "127.0.0.1:7077", "localhost.:7077", nil, "", 421},
		{"trailing_dot_any_case", loopback, "127.0.0.1:7077", "LOCALHOST.:7077", nil, "", 421},
		{"trailing_dot_ip", loopback, "127.0.0.1:7077", "127.0.0.1.:7077", nil, "", 421},
		{"trailing_dot_configured_name", loopback, "metrics.internal:7077", "metrics.internal.:7077", nil, "", 421},
		{"decimal_ip", loopback, "127.0.0.1:7077", "2130706433:7077", nil, "", 421},
		{"hex_ip", loopback, "127.0.0.1:7077", "0x7f000001:7077", nil, "", 421},
		{"octal_ip", loopback, "127.0.0.1:7077", "0177.0.0.1:7077", nil, "", 421},
		{"short_ip", loopback, "127.0.0.1:7077", "127.1:7077", nil, "", 421},
		{"rebinding_name", loopback, "127.0.0.1:7077", "evil.com:7077", nil, "", 421},
		{"rebinding_name_any_address", any4, "0.0.0.0:7077", "attacker.example:7077", nil, "", 421},
		{"loopback_ip_in_a_name", loopback, "127.0.0.1:7077", "127.0.0.1.nip.io:7077", nil, "", 421},
		{"subdomain_of_localhost", loopback, "127.0.0.1:7077", "evil.localhost:7077", nil, "", 421},
		{"user_info", loopback, "127.0.0.1:7077", "user@127.0.0.1:7077", nil, "", 421},
		{"user_info_then_host", loopback, "127.0.0.1:7077", "127.0.0.1:7077@evil.com", nil, "", 421},
		{"ipv6_zone", v6, "[::1]:7077", "[::1%25lo]:7077", nil, "", 421},
		{"ipv6_unbracketed", v6, "[::1]:7077", "::1:7077", nil, "", 421},
		{"ipv6_link_local", loopback, "127.0.0.1:7077", "[fe80::1]:7077", nil, "", 421},
		{"ipv4_mapped_other_port", loopback, "127.0.0.1:7077", "[::ffff:7f00:1]:7078", nil, "", 421},
		{"unspecified_ip_on_loopback", loopback, "127.0.0.1:7077", "0.0.0.0:7077", nil, "", 421},
		{"idn_unicode", loopback, "bücher.internal:7077", "bücher.internal:7077", nil, "", 421},
		{"idn_lookalike_case_folds_to_name", loopback, "kube.internal:7077", "\u212aube.internal:7077", nil, "", 421},
		{"idn_punycode_not_configured", loopback, "127.0.0.1:7077", "xn--bcher-kva.example:7077", nil, "", 421},

		{"null_origin", loopback, "127.0.0.1:7077", "127.0.0.1:7077", []string{"null"}, "", 403},
		{"empty_origin", loopback, "127.0.0.1:7077", "127.0.0.1:7077", []string{""}, "", 403},
		{"two_origins", loopback, "127.0.0.1:7077", "127.0.0.1:7077", []string{"http://127.0.0.1:7077", "http://evil.com"}, "", 403},
		{"foreign_origin", loopback, "127.0.0.1:7077", "127.0.0.1:7077", []string{"http://evil.com"}, "", 403},
		{"https_origin_same_host", loopback, "127.0.0.1:7077", "127.0.0.1:7077", []string{"https://127.0.0.1:7077"}, "", 403},
		{"origin_with_path", loopback, "127.0.0.1:7077", "127.0.0.1:7077", []string{"http://127.0.0.1:7077/x"}, "", 403},
		{"origin_with_query", loopback, "127.0.0.1:7077", "127.0.0.1:7077", []string{"http://127.0.0.1:7077?"}, "", 403},
		{"origin_trailing_dot", loopback, "127.0.0.1:7077", "127.0.0.1:7077", []string{"http://localhost.:7077"}, "", 403},
		{"origin_user_info", loopback, "127.0.0.1:7077", "127.0.0.1:7077", []string{"http://user@127.0.0.1:7077"}, "", 403},
		{"origin_user_info_then_host", loopback, "127.0.0.1:7077", "127.0.0.1:7077", []string{"http://127.0.0.1:7077@evil.com"}, "", 403},
		{"origin_other_port", v6, "[::1]:7077", "[::1]:7077", []string{"http://[::1]:7078"}, "", 403},
		{"origin_file", loopback, "127.0.0.1:7077", "127.0.0.1:7077", []string{"file://"}, "", 403},
		{"origin_no_port", loopback, "127.0.0.1:7077", "127.0.0.1:7077", []string{"http://127.0.0.1"}, "", 403},
		{"origin_idn", loopback, "127.0.0.1:7077", "127.0.0.1:7077", []string{"http://bücher.example:7077"}, "", 403},
		{"cross_site_fetch", loopback, "127.0.0.1:7077", "127.0.0.1:7077", nil, "cross-site", 403},
		{"same_site_fetch", loopback, "127.0.0.1:7077", "127.0.0.1:7077", nil, "same-site", 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewHostGuard(tt.addr, tt.listen)
			r := httptest.NewRequest("GET", "/metrics", nil)
			r.Host = tt.host
			if tt.origin != nil {
				r.Header["Origin"] = tt.origin
			}
			if tt.fetchSite != "" {
				r.Header.Set("Sec-Fetch-Site", tt.fetchSite)
			}
			status, why := g.Refuse(r)
			if status != tt.status {
				t.Fatalf("Host %q Origin %q: status %d (%s), want %d", tt.host, tt.origin, status, why, tt.status)
			}
			if (status == 0) != (why == "") {
				t.Errorf("status %d with reason %q", status, why)
			}
			if status == http.StatusMisdirectedRequest && !strings.Contains(why, "DNS rebinding") {
				t.Errorf("refusal %q does not say why (DNS rebinding)", why)
			}
		})
	}
}
