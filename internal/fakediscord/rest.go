package fakediscord

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// restError is a Discord error answer: an HTTP status and Discord's JSON error body.
type restError struct {
	status int
	body   apiError
}

func (e *restError) Error() string { return fmt.Sprintf("%d %s", e.body.Code, e.body.Message) }

func errNotFound(code int, what string) *restError {
	return &restError{http.StatusNotFound, apiError{Message: "Unknown " + what, Code: code}}
}

func errBadRequest(code int, msg string) *restError {
	return &restError{http.StatusBadRequest, apiError{Message: msg, Code: code}}
}

// formErrors collects 50035 "Invalid Form Body" field errors, keyed by dotted path the way
// Discord nests them: {"errors": {"content": {"_errors": [{"code", "message"}]}}}.
type formErrors map[string][2]string

func (f formErrors) add(path, code, msg string) { f[path] = [2]string{code, msg} }

func (f formErrors) err() *restError {
	if len(f) == 0 {
		return nil
	}
	root := map[string]any{}
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		node := root
		for _, part := range strings.Split(k, ".") {
			next, ok := node[part].(map[string]any)
			if !ok {
				next = map[string]any{}
				node[part] = next
			}
			node = next
		}
		node["_errors"] = []map[string]string{{"code": f[k][0], "message": f[k][1]}}
	}
	return &restError{http.StatusBadRequest, apiError{Message: "Invalid Form Body", Code: CodeInvalidFormBody, Errors: root}}
}

// request is a parsed REST request handed to a route.
type request struct {
	r      *http.Request
	params []string
	body   json.RawMessage
	files  []Attachment
}

type route struct {
	method  string
	pattern []string // "{}" segments capture a parameter
	noAuth  bool     // interaction callbacks and webhooks authenticate by token in the path
	handle  handler
}

// handler answers a route; it runs holding s.mu.
type handler func(s *Server, q *request) (int, any, *restError)

// withFields decodes the body as a JSON object before h runs: Discord refuses any other
// body with 50035 before it looks at the path's IDs.
func withFields(h func(*Server, *request, fields) (int, any, *restError)) handler {
	return func(s *Server, q *request) (int, any, *restError) {
		f, rerr := decodeFields(q.body)
		if rerr != nil {
			return 0, nil, rerr
		}
		return h(s, q, f)
	}
}

var routes []route

func init() {
	add := func(method, pattern string, noAuth bool, h handler) {
		routes = append(routes, route{method, strings.Split(pattern, "/"), noAuth, h})
	}
	add("GET", "gateway", true, (*Server).getGateway)
	add("GET", "gateway/bot", false, (*Server).getGatewayBot)
	add("GET", "users/@me", false, (*Server).getMe)
	add("GET", "channels/{}", false, (*Server).getChannel)
	add("PATCH", "channels/{}", false, withFields((*Server).modifyChannel))
	add("POST", "channels/{}/messages", false, withFields((*Server).createMessage))
	add("GET", "channels/{}/messages/{}", false, (*Server).getMessage)
	add("PATCH", "channels/{}/messages/{}", false, withFields((*Server).editMessage))
	add("POST", "channels/{}/messages/{}/threads", false, withFields((*Server).startThreadFromMessage))
	add("POST", "channels/{}/threads", false, withFields((*Server).startThread))
	add("GET", "guilds/{}/members/{}", false, (*Server).getMember)
	add("GET", "guilds/{}/roles", false, (*Server).getRoles)
	add("GET", "applications/{}/commands", false, (*Server).getCommands)
	add("PUT", "applications/{}/commands", false, (*Server).putCommands)
	add("GET", "applications/{}/guilds/{}/commands", false, (*Server).getCommands)
	add("PUT", "applications/{}/guilds/{}/commands", false, (*Server).putCommands)
	add("POST", "interactions/{}/{}/callback", true, (*Server).interactionCallback)
	add("POST", "webhooks/{}/{}", true, withFields((*Server).followup))
	add("GET", "webhooks/{}/{}/messages/{}", true, (*Server).getWebhookMessage)
	add("PATCH", "webhooks/{}/{}/messages/{}", true, withFields((*Server).editWebhookMessage))
	add("DELETE", "webhooks/{}/{}/messages/{}", true, (*Server).deleteWebhookMessage)
}

var versionRE = regexp.MustCompile(`^/api(?:/v(\d+))?(/.*)$`)

func (s *Server) serveREST(w http.ResponseWriter, r *http.Request) {
	call := Call{Method: r.Method, Query: r.URL.Query()}
	m := versionRE.FindStringSubmatch(r.URL.Path)
	if m == nil {
		writeJSON(w, http.StatusNotFound, apiError{Message: "404: Not Found", Code: CodeGeneral})
		return
	}
	call.Version, call.Path = m[1], m[2]
	q := &request{r: r}
	status, out, rerr := s.dispatchREST(r, &call, q)
	if rerr != nil {
		status, out = rerr.status, rerr.body
		call.Code = rerr.body.Code
	}
	call.Status = status
	s.mu.Lock()
	s.calls = append(s.calls, call)
	s.notify()
	s.mu.Unlock()
	if status == http.StatusNoContent {
		w.WriteHeader(status)
		return
	}
	writeJSON(w, status, out)
}

func (s *Server) dispatchREST(r *http.Request, call *Call, q *request) (int, any, *restError) {
	if call.Version != "" && call.Version != "9" && call.Version != "10" {
		return 0, nil, errBadRequest(CodeGeneral, "Invalid API version")
	}
	if err := s.readBody(r, call, q); err != nil {
		return 0, nil, err
	}
	segs := strings.Split(strings.Trim(call.Path, "/"), "/")
	var pathMatched bool
	for _, rt := range routes {
		params, ok := matchRoute(rt.pattern, segs)
		if !ok {
			continue
		}
		pathMatched = true
		if rt.method != r.Method {
			continue
		}
		if !rt.noAuth && r.Header.Get("Authorization") != "Bot "+s.cfg.Token {
			return 0, nil, &restError{http.StatusUnauthorized, apiError{Message: "401: Unauthorized", Code: CodeGeneral}}
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if rl, ok := s.takeRateLimitLocked(*call); ok {
			return 0, nil, rl
		}
		if f, ok := s.failureLocked(*call); ok {
			return 0, nil, f
		}
		q.params = params
		return rt.handle(s, q)
	}
	if pathMatched {
		return 0, nil, &restError{http.StatusMethodNotAllowed, apiError{Message: "405: Method Not Allowed", Code: CodeGeneral}}
	}
	return 0, nil, &restError{http.StatusNotFound, apiError{Message: "404: Not Found", Code: CodeGeneral}}
}

func matchRoute(pattern, segs []string) ([]string, bool) {
	if len(pattern) != len(segs) {
		return nil, false
	}
	var params []string
	for i, p := range pattern {
		switch {
		case p == "{}":
			params = append(params, segs[i])
		case p != segs[i]:
			return nil, false
		}
	}
	return params, true
}

// takeRateLimitLocked answers a call with 429 when a RateLimitNext rule matches it (once).
func (s *Server) takeRateLimitLocked(c Call) (*restError, bool) {
	for i, rl := range s.rateLimits {
		if rl.match(c) {
			s.rateLimits = append(s.rateLimits[:i], s.rateLimits[i+1:]...)
			return &restError{http.StatusTooManyRequests, apiError{
				Message: "You are being rate limited.", Code: CodeGeneral,
				RetryAfter: rl.retryAfter.Seconds(), Global: rl.global,
			}}, true
		}
	}
	return nil, false
}

// failureLocked answers a call with an outage's status while a FailWith rule matches it.
func (s *Server) failureLocked(c Call) (*restError, bool) {
	for _, f := range s.outages {
		if f.match(c) {
			return &restError{f.status, apiError{Message: http.StatusText(f.status), Code: CodeGeneral}}, true
		}
	}
	return nil, false
}

// readBody fills call.Body/Files and q.body/files from a JSON or multipart body.
func (s *Server) readBody(r *http.Request, call *Call, q *request) *restError {
	raw, err := io.ReadAll(io.LimitReader(r.Body, 26<<20))
	if err != nil {
		return errBadRequest(CodeGeneral, "cannot read body")
	}
	if len(raw) == 0 {
		return nil
	}
	ct, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "multipart/form-data":
		mr := multipart.NewReader(bytes.NewReader(raw), params["boundary"])
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				return errBadRequest(CodeGeneral, "malformed multipart body")
			}
			data, _ := io.ReadAll(p)
			name := p.FormName()
			switch {
			case name == "payload_json":
				q.body = data
			case strings.HasPrefix(name, "files["):
				q.files = append(q.files, Attachment{Filename: p.FileName(), ContentType: p.Header.Get("Content-Type"), Size: len(data), Data: data})
			default:
				return errBadRequest(CodeGeneral, "unexpected multipart field "+strconv.Quote(name))
			}
		}
	case "application/json":
		q.body = raw
	default:
		return &restError{http.StatusUnsupportedMediaType, apiError{Message: "Unsupported content type", Code: CodeGeneral}}
	}
	if q.body != nil && !json.Valid(q.body) {
		return errBadRequest(50109, "The request body contains invalid JSON.")
	}
	call.Body, call.Files = q.body, q.files
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	if status == http.StatusTooManyRequests {
		var e apiError
		json.Unmarshal(b, &e)
		w.Header().Set("Retry-After", strconv.FormatFloat(e.RetryAfter, 'f', -1, 64))
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset-After", strconv.FormatFloat(e.RetryAfter, 'f', -1, 64))
		if e.Global {
			w.Header().Set("X-RateLimit-Global", "true")
		}
	}
	w.WriteHeader(status)
	w.Write(b)
}

func (s *Server) getGateway(q *request) (int, any, *restError) {
	return 200, map[string]string{"url": s.GatewayURL()}, nil
}

func (s *Server) getGatewayBot(q *request) (int, any, *restError) {
	return 200, map[string]any{
		"url":    s.GatewayURL(),
		"shards": 1,
		"session_start_limit": map[string]int{
			"total": 1000, "remaining": 999, "reset_after": 86400000, "max_concurrency": 1,
		},
	}, nil
}

func (s *Server) getMe(q *request) (int, any, *restError) {
	return 200, s.cfg.BotUser, nil
}
