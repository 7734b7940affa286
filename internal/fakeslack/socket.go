package fakeslack

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/gorilla/websocket"
)

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

// socket serves one Socket Mode connection: hello, then envelopes (those not acked on
// an earlier connection first), pings, and acks read back.
func (f *Fake) socket(w http.ResponseWriter, r *http.Request) {
	c, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		c.Close()
		return
	}
	if f.conn != nil {
		f.conn.Close() // one connection at a time is enough for tests
	}
	f.conn = c
	f.conns++
	n := f.conns
	pending := make([]string, 0, len(f.envOrder))
	for _, id := range f.envOrder {
		if _, ok := f.unacked[id]; ok {
			pending = append(pending, id)
		}
	}
	f.changedLocked()
	f.mu.Unlock()

	hello, _ := json.Marshal(obj{"type": "hello", "num_connections": 1,
		"debug_info": obj{"host": "fakeslack", "approximate_connection_time": 3600}, "connection_info": obj{"app_id": "AFAKE"}})
	f.write(c, hello)
	for _, id := range pending {
		if fr := f.frame(id); fr != nil {
			f.writeEnvelope(c, id, fr)
		}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(f.PingEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				f.writeMu.Lock()
				err := c.WriteControl(websocket.PingMessage, []byte(fmt.Sprint(n)), time.Now().Add(time.Second))
				f.writeMu.Unlock()
				if err != nil {
					return
				}
			}
		}
	}()
	defer close(done)
	for {
		_, data, err := c.ReadMessage()
		if err != nil {
			break
		}
		var ack struct {
			EnvelopeID string          `json:"envelope_id"`
			Payload    json.RawMessage `json:"payload"`
		}
		if json.Unmarshal(data, &ack) != nil || ack.EnvelopeID == "" {
			continue
		}
		f.mu.Lock()
		delete(f.unacked, ack.EnvelopeID)
		if e := f.envelopes[ack.EnvelopeID]; e != nil && e.acked.IsZero() {
			e.acked = time.Now()
		}
		f.acks[ack.EnvelopeID] = ack.Payload
		f.changedLocked()
		f.mu.Unlock()
	}
	f.mu.Lock()
	if f.conn == c {
		f.conn = nil
	}
	f.changedLocked()
	f.mu.Unlock()
	c.Close()
}

// frame returns an envelope's frame, nil once it was acked.
func (f *Fake) frame(id string) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.unacked[id]
}

func (f *Fake) write(c *websocket.Conn, frame []byte) error {
	f.writeMu.Lock()
	defer f.writeMu.Unlock()
	c.SetWriteDeadline(time.Now().Add(2 * time.Second))
	return c.WriteMessage(websocket.TextMessage, frame)
}

// envelope is one delivery of a payload over Socket Mode. Slack wants each acked within
// the ack deadline (3 s): an events_api envelope not acked in time is delivered again as
// a new envelope (same payload and event_id, retry_attempt + 1, retry_reason "timeout"),
// up to maxRetries times; a late slash command or interactive ack failed for the person
// (their client showed "operation_timeout"). Slack spaces its retries out (at once,
// then minutes apart); the fake sends each as the previous deadline passes, so tests
// stay short.
type envelope struct {
	id, typ   string
	payload   any
	attempt   int
	reason    string
	frame     []byte
	sent      time.Time // first written to a connection; zero while queued
	acked     time.Time
	timedOut  bool   // the deadline passed before the ack
	retriedBy string // the envelope that redelivered this one
}

// maxRetries is how often Slack redelivers an event that was not acked.
const maxRetries = 3

// send delivers an envelope now if connected, else at the next connection; it stays
// queued until acked. It returns the envelope id.
func (f *Fake) send(typ string, payload any) string {
	return f.deliver(typ, payload, 0, "")
}

func (f *Fake) deliver(typ string, payload any, attempt int, reason string) string {
	f.mu.Lock()
	f.nextEnv++
	id := fmt.Sprintf("env-%d", f.nextEnv)
	frame, _ := json.Marshal(obj{"type": typ, "envelope_id": id, "payload": payload,
		"accepts_response_payload": typ != "events_api", "retry_attempt": attempt, "retry_reason": reason})
	f.envelopes[id] = &envelope{id: id, typ: typ, payload: payload, attempt: attempt, reason: reason, frame: frame}
	f.unacked[id] = frame
	f.envOrder = append(f.envOrder, id)
	c := f.conn
	f.changedLocked()
	f.mu.Unlock()
	if c != nil {
		f.writeEnvelope(c, id, frame)
	}
	return id
}

// writeEnvelope writes an envelope to c and, on its first delivery, starts its ack
// deadline.
func (f *Fake) writeEnvelope(c *websocket.Conn, id string, frame []byte) {
	if f.write(c, frame) != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if e := f.envelopes[id]; e != nil && e.sent.IsZero() {
		e.sent = time.Now()
		time.AfterFunc(f.AckDeadline, func() { f.expire(id) })
	}
}

// expire runs when an envelope's ack deadline passes.
func (f *Fake) expire(id string) {
	f.mu.Lock()
	e := f.envelopes[id]
	if e == nil || !e.acked.IsZero() || f.closed {
		f.mu.Unlock()
		return
	}
	e.timedOut = true
	f.changedLocked()
	if e.typ != "events_api" {
		// The person's client gave up; Slack does not send it again.
		delete(f.unacked, id)
		f.mu.Unlock()
		return
	}
	if e.attempt >= maxRetries {
		delete(f.unacked, id)
		f.mu.Unlock()
		return
	}
	delete(f.unacked, id) // the retry replaces it
	f.mu.Unlock()
	retry := f.deliver(e.typ, e.payload, e.attempt+1, "timeout")
	f.mu.Lock()
	e.retriedBy = retry
	f.mu.Unlock()
}

// Redeliver sends envelope's payload again as a new envelope, with retry_attempt one
// more and retry_reason reason, as Slack does after a reconnect or a failed delivery;
// it returns the new envelope's id. The payload (event_id, message ts, action_ts) is
// the same, so a bot must apply it once.
func (f *Fake) Redeliver(envelope, reason string) string {
	f.mu.Lock()
	e := f.envelopes[envelope]
	f.mu.Unlock()
	if e == nil {
		panic("fakeslack: no envelope " + envelope)
	}
	return f.deliver(e.typ, e.payload, e.attempt+1, reason)
}

// Drop kills the websocket without a close handshake, like a dead network.
func (f *Fake) Drop() {
	f.mu.Lock()
	c := f.conn
	f.conn = nil
	f.changedLocked()
	f.mu.Unlock()
	if c != nil {
		c.UnderlyingConn().Close()
	}
}

// Disconnect asks the client to reconnect, as Slack does before rotating a connection.
func (f *Fake) Disconnect() {
	f.mu.Lock()
	c := f.conn
	f.mu.Unlock()
	if c != nil {
		b, _ := json.Marshal(obj{"type": "disconnect", "reason": "refresh_requested", "debug_info": obj{"host": "fakeslack"}})
		f.write(c, b)
	}
}

func (f *Fake) eventsAPI(event obj) string {
	f.mu.Lock()
	f.nextEnv++
	evID := fmt.Sprintf("Ev%06d", f.nextEnv)
	team := f.Team
	f.mu.Unlock()
	return f.send("events_api", obj{"token": "verification", "team_id": team, "api_app_id": "AFAKE",
		"type": "event_callback", "event_id": evID, "event_time": time.Now().Unix(), "event": event})
}

// Mention sends an app_mention of the bot by user in channel (thread "" at top level)
// and returns the envelope id and the message's ts.
func (f *Fake) Mention(user, channel, thread, text string) (envelope, ts string) {
	f.mu.Lock()
	ts = f.ts()
	f.mu.Unlock()
	ev := obj{"type": "app_mention", "user": user, "text": "<@" + f.BotUser + "> " + text, "ts": ts, "channel": channel, "event_ts": ts}
	if thread != "" {
		ev["thread_ts"] = thread
	}
	return f.eventsAPI(ev), ts
}

// Say sends a message event: user typing text in channel (thread "" at top level).
// channelType is "channel" or "im". bot sets bot_id, as for any bot's message.
func (f *Fake) Say(user, channel, channelType, thread, text string, bot bool) (envelope, ts string) {
	f.mu.Lock()
	ts = f.ts()
	f.mu.Unlock()
	ev := obj{"type": "message", "user": user, "text": text, "ts": ts, "channel": channel, "channel_type": channelType, "event_ts": ts}
	if thread != "" {
		ev["thread_ts"] = thread
	}
	if bot {
		ev["bot_id"] = "BOTHER"
		ev["subtype"] = "bot_message"
	}
	return f.eventsAPI(ev), ts
}

// Broadcast sends, as user, a reply in thread that is also sent to the channel ("also
// send to channel"): Slack delivers it as a message of subtype thread_broadcast with the
// thread's thread_ts. A broadcast is always a reply, so thread is required.
func (f *Fake) Broadcast(user, channel, thread, text string) (envelope, ts string) {
	if thread == "" {
		panic("fakeslack: a thread_broadcast is a reply; it needs a thread")
	}
	f.mu.Lock()
	ts = f.ts()
	f.mu.Unlock()
	ev := obj{"type": "message", "subtype": "thread_broadcast", "user": user, "text": text, "ts": ts, "thread_ts": thread,
		"channel": channel, "channel_type": "channel", "event_ts": ts}
	return f.eventsAPI(ev), ts
}

// Edit sends user's edit of their message ts in channel (in thread, "" at top level) to
// text, as Slack delivers it: a message event of subtype message_changed, hidden, with
// the message as it now stands (edited by user) and as it was. It returns the envelope
// id. Slack sends no app_mention for an edit, mention or not.
func (f *Fake) Edit(user, channel, channelType, thread, ts, text string) string {
	f.mu.Lock()
	now := f.ts()
	f.mu.Unlock()
	msg := obj{"type": "message", "user": user, "text": text, "ts": ts, "edited": obj{"user": user, "ts": now}}
	before := obj{"type": "message", "user": user, "ts": ts}
	if thread != "" {
		msg["thread_ts"], before["thread_ts"] = thread, thread
	}
	return f.eventsAPI(obj{"type": "message", "subtype": "message_changed", "hidden": true, "channel": channel,
		"channel_type": channelType, "message": msg, "previous_message": before, "ts": now, "event_ts": now})
}

// Click presses the button actionID on the message ts (in thread) as user.
func (f *Fake) Click(user, channel, thread, ts string) func(actionID, value string) string {
	return func(actionID, value string) string {
		f.mu.Lock()
		team := f.Team
		f.nextEnv++
		trigger := fmt.Sprintf("trig-%d", f.nextEnv)
		actionTS := f.ts() // unique, like Slack's action_ts
		f.mu.Unlock()
		return f.send("interactive", obj{
			"type": "block_actions", "team": obj{"id": team}, "user": obj{"id": user, "name": "user-" + user},
			"api_app_id": "AFAKE", "trigger_id": trigger,
			"container": obj{"type": "message", "message_ts": ts, "channel_id": channel, "is_ephemeral": false, "thread_ts": thread},
			"channel":   obj{"id": channel, "name": "agents"},
			"message":   obj{"type": "message", "ts": ts, "thread_ts": thread, "user": f.BotUser},
			"actions": []obj{{"type": "button", "action_id": actionID, "block_id": "agentd_actions", "value": value,
				"text": obj{"type": "plain_text", "text": actionID}, "action_ts": actionTS}},
		})
	}
}

// Submit submits an opened view with a text value in block/action, as user. Slack's
// client lets nobody submit more characters than the input's max_length: then Submit
// sends nothing and returns "".
func (f *Fake) Submit(user string, view json.RawMessage, block, action, value string) string {
	var v struct {
		CallbackID      string `json:"callback_id"`
		PrivateMetadata string `json:"private_metadata"`
		Blocks          []struct {
			BlockID string `json:"block_id"`
			Element struct {
				ActionID  string `json:"action_id"`
				MaxLength int    `json:"max_length"`
			} `json:"element"`
		} `json:"blocks"`
	}
	json.Unmarshal(view, &v)
	for _, b := range v.Blocks {
		if b.BlockID == block && b.Element.ActionID == action && b.Element.MaxLength > 0 && Len(value) > b.Element.MaxLength {
			return ""
		}
	}
	return f.send("interactive", obj{
		"type": "view_submission", "team": obj{"id": f.Team}, "user": obj{"id": user, "name": "user-" + user},
		"view": obj{"id": "V1", "type": "modal", "callback_id": v.CallbackID, "private_metadata": v.PrivateMetadata,
			"state": obj{"values": obj{block: obj{action: obj{"type": "plain_text_input", "value": value}}}}},
	})
}

// Slash sends a slash command. Its response_url takes up to five answers in the next 30
// minutes, as Slack's does; Responses returns them.
func (f *Fake) Slash(user, channel, command, text string) string {
	f.mu.Lock()
	f.nextResp++
	url := fmt.Sprintf("%s/response/%d", f.srv.URL, f.nextResp)
	f.respURLs[url] = &responseURL{channel: channel, created: time.Now()}
	f.mu.Unlock()
	return f.send("slash_commands", obj{"token": "verification", "team_id": f.Team, "team_domain": "fake",
		"channel_id": channel, "channel_name": "agents", "user_id": user, "user_name": "user-" + user,
		"command": command, "text": text, "api_app_id": "AFAKE", "response_url": url, "trigger_id": "trig-slash"})
}
