// Package fakeslack is a loopback fake of Slack for tests: the Web API methods agentd's
// Slack bot uses, and a Socket Mode websocket that delivers envelopes and takes acks.
//
// It speaks the real wire formats, so tests drive the real slack-go client against it
// (slack.OptionAPIURL(fake.APIURL())). Every Web API call is recorded for assertions.
// It is as strict as Slack where a lenient fake would hide bugs: envelopes must be acked
// within 3 s (events are redelivered, late slash commands and clicks recorded as
// failed), envelopes not acked are sent again after a reconnect, chosen methods answer
// 429 with Retry-After, Block Kit and message limits are enforced with Slack's errors,
// link and media previews are recorded per message, and slash commands' response_url
// takes five answers.
package fakeslack

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Fake is a loopback Slack. Its exported fields are read-only after NewFake; BotToken and
// AppToken are the tokens it accepts until RotateTokens.
type Fake struct {
	BotToken, AppToken string
	Team, BotUser      string
	// PingEvery is how often the websocket pings the client (Slack's keepalive).
	PingEvery time.Duration
	// AckDeadline is how long an envelope may wait for its ack: 3 s, as on Slack, unless
	// WithAckDeadline says otherwise.
	AckDeadline time.Duration

	srv *httptest.Server

	mu sync.Mutex
	// bot and app are the tokens accepted now: BotToken and AppToken until RotateTokens.
	bot, app  string
	calls     []Call
	messages  map[string]*Message // by ts
	order     []string
	ephemeral []Message
	files     []File
	views     []json.RawMessage
	groups    map[string][]string
	users     map[string]string // id → display name, for users.info
	nextTS    int
	nextEnv   int
	conn      *websocket.Conn
	conns     int
	unacked   map[string][]byte // envelope id → frame
	envelopes map[string]*envelope
	limited   map[string][]int // method → Retry-After seconds of its next 429s
	respURLs  map[string]*responseURL
	responses []Response
	nextResp  int
	envOrder  []string
	acks      map[string]json.RawMessage
	changed   chan struct{} // closed and replaced on every change
	uploads   map[string]string
	closed    bool
	writeMu   sync.Mutex
}

// Call is one Web API call.
type Call struct {
	Method string
	Form   url.Values      // form-encoded calls
	JSON   json.RawMessage // JSON calls (views.open, apps.connections.open)
	At     time.Time
	// Status is the HTTP status answered: 200, or 429 for a rate-limited call.
	Status int
}

// Message is a posted message as it stands now (after updates).
type Message struct {
	Channel, TS, ThreadTS, Text, User string
	Blocks                            json.RawMessage
	Updates                           int
	// UnfurlLinks and UnfurlMedia say whether Slack would show link and media previews:
	// true unless the post said false (chat.update keeps the post's).
	UnfurlLinks, UnfurlMedia bool
	// At is when it was posted.
	At time.Time
}

// File is an uploaded file.
type File struct {
	ID, Name, Channel, ThreadTS, Comment, Content string
}

// NewFake starts a fake on 127.0.0.1 and closes it when the test ends.
func NewFake(tb testing.TB, opts ...Option) *Fake {
	f := &Fake{
		BotToken: "xoxb-fake-bot-token", AppToken: "xapp-fake-app-token", Team: "T0FAKE", BotUser: "UBOT",
		PingEvery: 200 * time.Millisecond, AckDeadline: 3 * time.Second,
		messages: map[string]*Message{}, groups: map[string][]string{}, users: map[string]string{}, unacked: map[string][]byte{},
		acks: map[string]json.RawMessage{}, changed: make(chan struct{}), uploads: map[string]string{}, nextTS: 1,
		envelopes: map[string]*envelope{}, limited: map[string][]int{}, respURLs: map[string]*responseURL{},
	}
	for _, o := range opts {
		o(f)
	}
	f.bot, f.app = f.BotToken, f.AppToken
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/{method}", f.api)
	mux.HandleFunc("POST /upload/{id}", f.upload)
	mux.HandleFunc("GET /ws", f.socket)
	mux.HandleFunc("POST /response/{n}", f.respond)
	f.srv = httptest.NewServer(mux)
	tb.Cleanup(f.Close)
	return f
}

// APIURL is the Web API base URL, for slack.OptionAPIURL.
func (f *Fake) APIURL() string { return f.srv.URL + "/api/" }

// RotateTokens makes bot and app the only tokens accepted from now on, as Slack does
// when an app's tokens are rotated; the connection open now stays up.
func (f *Fake) RotateTokens(bot, app string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bot, f.app = bot, app
}

// Close stops the fake.
func (f *Fake) Close() {
	f.mu.Lock()
	f.closed = true
	c := f.conn
	f.mu.Unlock()
	if c != nil {
		c.Close()
	}
	f.srv.CloseClientConnections()
	f.srv.Close()
}

// SetUser names a workspace member for users.info: a display name ("" leaves Slack's
// profile display_name empty, as for a member who never set one; real_name is "Real " +
// id then, so the bot's fallback shows).
func (f *Fake) SetUser(id, displayName string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.users[id] = displayName
}

// SetGroup sets a user group's members.
func (f *Fake) SetGroup(id string, users ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.groups[id] = users
}

// changedLocked wakes waiters. Caller holds f.mu.
func (f *Fake) changedLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// Wait polls cond under the fake's lock until it holds or timeout passes.
func (f *Fake) Wait(timeout time.Duration, cond func(v View) bool) bool {
	deadline := time.After(timeout)
	for {
		f.mu.Lock()
		ok := cond(View{f})
		ch := f.changed
		f.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-deadline:
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// View reads the fake's state inside Wait.
type View struct{ f *Fake }

// Messages returns the messages in a thread (the root included), in posting order.
func (v View) Messages(channel, thread string) []Message {
	var out []Message
	for _, ts := range v.f.order {
		m := v.f.messages[ts]
		if m.Channel == channel && (m.TS == thread || m.ThreadTS == thread) {
			out = append(out, *m)
		}
	}
	return out
}

// AllMessages returns every message posted (as it stands now) and every ephemeral one.
func (v View) AllMessages() []Message {
	var out []Message
	for _, ts := range v.f.order {
		out = append(out, *v.f.messages[ts])
	}
	return append(out, v.f.ephemeral...)
}

// Ephemeral returns the ephemeral messages shown to user.
func (v View) Ephemeral(user string) []Message {
	return matching(v.f.ephemeral, func(m Message) bool { return m.User == user })
}

// matching returns the elements of list that keep takes, in order (nil for none).
func matching[T any](list []T, keep func(T) bool) []T {
	var out []T
	for _, x := range list {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}

// Files returns the uploaded files.
func (v View) Files() []File { return append([]File(nil), v.f.files...) }

// Views returns the views opened (views.open bodies).
func (v View) Views() []json.RawMessage { return append([]json.RawMessage(nil), v.f.views...) }

// Calls returns the Web API calls named method ("" for all).
func (v View) Calls(method string) []Call {
	return matching(v.f.calls, func(c Call) bool { return method == "" || c.Method == method })
}

// Acked reports whether the envelope was acked, and its payload.
func (v View) Acked(envelope string) (json.RawMessage, bool) {
	p, ok := v.f.acks[envelope]
	return p, ok
}

// Connections counts websocket connections made so far.
func (v View) Connections() int { return v.f.conns }

// Connected reports whether a websocket is open.
func (v View) Connected() bool { return v.f.conn != nil }

// Calls returns all Web API calls so far.
func (f *Fake) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

type obj = map[string]any

func (f *Fake) api(w http.ResponseWriter, r *http.Request) {
	method := r.PathValue("method")
	call := Call{Method: method, At: time.Now()}
	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "application/json" {
		b, _ := io.ReadAll(r.Body)
		call.JSON = b
	} else {
		r.ParseForm()
		call.Form = r.PostForm
		if t := r.PostForm.Get("token"); t != "" {
			token = t
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	want := f.bot
	if method == "apps.connections.open" {
		want = f.app
	}
	defer f.changedLocked()
	if f.rateLimited(w, method) {
		call.Status = http.StatusTooManyRequests
		f.calls = append(f.calls, call)
		return
	}
	call.Status = http.StatusOK
	f.calls = append(f.calls, call)
	if token != want {
		writeJSON(w, obj{"ok": false, "error": "invalid_auth"})
		return
	}
	form := call.Form
	switch method {
	case "auth.test":
		writeJSON(w, obj{"ok": true, "url": "https://fake.slack.test/", "team": "fake", "user": "agentd", "team_id": f.Team, "user_id": f.BotUser, "bot_id": "BBOT"})
	case "apps.connections.open":
		writeJSON(w, obj{"ok": true, "url": "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/ws"})
	case "chat.postMessage":
		m := &Message{Channel: form.Get("channel"), ThreadTS: form.Get("thread_ts"), Text: form.Get("text"), Blocks: json.RawMessage(form.Get("blocks")), User: f.BotUser,
			UnfurlLinks: form.Get("unfurl_links") != "false", UnfurlMedia: form.Get("unfurl_media") != "false", At: call.At}
		if m.Channel == "" {
			writeJSON(w, obj{"ok": false, "error": "channel_not_found"})
			return
		}
		if refuse(w, m.Text, m.Blocks) {
			return
		}
		m.TS = f.ts()
		f.messages[m.TS] = m
		f.order = append(f.order, m.TS)
		writeJSON(w, obj{"ok": true, "channel": m.Channel, "ts": m.TS, "message": obj{"text": m.Text, "ts": m.TS}})
	case "chat.update":
		m, ok := f.messages[form.Get("ts")]
		if !ok || m.Channel != form.Get("channel") {
			writeJSON(w, obj{"ok": false, "error": "message_not_found"})
			return
		}
		if refuse(w, form.Get("text"), []byte(form.Get("blocks"))) {
			return
		}
		m.Text, m.Blocks = form.Get("text"), json.RawMessage(form.Get("blocks"))
		m.Updates++
		writeJSON(w, obj{"ok": true, "channel": m.Channel, "ts": m.TS, "text": m.Text})
	case "chat.postEphemeral":
		if refuse(w, form.Get("text"), []byte(form.Get("blocks"))) {
			return
		}
		ts := f.ts()
		f.ephemeral = append(f.ephemeral, Message{Channel: form.Get("channel"), ThreadTS: form.Get("thread_ts"), User: form.Get("user"), Text: form.Get("text"), TS: ts,
			Blocks: json.RawMessage(form.Get("blocks")), UnfurlLinks: form.Get("unfurl_links") != "false", UnfurlMedia: form.Get("unfurl_media") != "false", At: call.At})
		writeJSON(w, obj{"ok": true, "message_ts": ts})
	case "files.getUploadURLExternal":
		id := fmt.Sprintf("F%04d", len(f.uploads)+1)
		f.uploads[id] = form.Get("filename")
		writeJSON(w, obj{"ok": true, "upload_url": f.srv.URL + "/upload/" + id, "file_id": id})
	case "files.completeUploadExternal":
		var files []struct{ ID, Title string }
		json.Unmarshal([]byte(form.Get("files")), &files)
		var out []obj
		for _, fl := range files {
			for i := range f.files {
				if f.files[i].ID == fl.ID {
					f.files[i].Channel, f.files[i].ThreadTS, f.files[i].Comment = form.Get("channel_id"), form.Get("thread_ts"), form.Get("initial_comment")
				}
			}
			out = append(out, obj{"id": fl.ID, "title": fl.Title})
		}
		writeJSON(w, obj{"ok": true, "files": out})
	case "views.open":
		var req struct {
			TriggerID string          `json:"trigger_id"`
			View      json.RawMessage `json:"view"`
		}
		json.Unmarshal(call.JSON, &req)
		if req.TriggerID == "" {
			writeJSON(w, obj{"ok": false, "error": "invalid_trigger_id"})
			return
		}
		var view struct {
			Blocks json.RawMessage `json:"blocks"`
		}
		json.Unmarshal(req.View, &view)
		if problems, _ := checkBlocks(view.Blocks, MaxViewBlocks, "/view/blocks"); len(problems) > 0 {
			writeJSON(w, obj{"ok": false, "error": "invalid_arguments", "response_metadata": obj{"messages": problems}})
			return
		}
		f.views = append(f.views, req.View)
		writeJSON(w, obj{"ok": true, "view": obj{"id": fmt.Sprintf("V%d", len(f.views))}})
	case "users.info":
		id := form.Get("user")
		name, ok := f.users[id]
		if !ok {
			writeJSON(w, obj{"ok": false, "error": "user_not_found"})
			return
		}
		writeJSON(w, obj{"ok": true, "user": obj{"id": id, "name": strings.ToLower(id), "real_name": "Real " + id,
			"profile": obj{"display_name": name, "real_name": "Real " + id}}})
	case "usergroups.users.list":
		users, ok := f.groups[form.Get("usergroup")]
		if !ok {
			writeJSON(w, obj{"ok": false, "error": "no_such_subteam"})
			return
		}
		writeJSON(w, obj{"ok": true, "users": users})
	default:
		writeJSON(w, obj{"ok": false, "error": "unknown_method"})
	}
}

// refuse answers Slack's error when a message breaks its limits.
func refuse(w http.ResponseWriter, text string, blocks []byte) bool {
	e, problems := checkMessage(text, blocks)
	if e == "" {
		return false
	}
	out := obj{"ok": false, "error": e}
	if len(problems) > 0 {
		out["response_metadata"] = obj{"messages": problems}
	}
	writeJSON(w, out)
	return true
}

// ts returns the next message timestamp. Caller holds f.mu.
func (f *Fake) ts() string {
	f.nextTS++
	return fmt.Sprintf("1700000000.%06d", f.nextTS)
}

func (f *Fake) upload(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	f.mu.Lock()
	bot := f.bot
	f.mu.Unlock()
	if strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") != bot {
		http.Error(w, "invalid_auth", http.StatusUnauthorized)
		return
	}
	_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	mr := multipart.NewReader(r.Body, params["boundary"])
	var content []byte
	for {
		p, err := mr.NextPart()
		if err != nil {
			break
		}
		if p.FormName() == "file" {
			content, _ = io.ReadAll(p)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	name, ok := f.uploads[id]
	if !ok {
		http.Error(w, "no such upload", http.StatusNotFound)
		return
	}
	f.files = append(f.files, File{ID: id, Name: name, Content: string(content)})
	f.changedLocked()
	fmt.Fprintf(w, "OK - %d", len(content))
}
