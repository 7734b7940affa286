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
	pending := make([][]byte, 0, len(f.envOrder))
	for _, id := range f.envOrder {
		if fr, ok := f.unacked[id]; ok {
			pending = append(pending, fr)
		}
	}
	f.changedLocked()
	f.mu.Unlock()

	hello, _ := json.Marshal(obj{"type": "hello", "num_connections": 1,
		"debug_info": obj{"host": "fakeslack", "approximate_connection_time": 3600}, "connection_info": obj{"app_id": "AFAKE"}})
	f.write(c, hello)
	for _, fr := range pending {
		f.write(c, fr)
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

func (f *Fake) write(c *websocket.Conn, frame []byte) error {
	f.writeMu.Lock()
	defer f.writeMu.Unlock()
	c.SetWriteDeadline(time.Now().Add(2 * time.Second))
	return c.WriteMessage(websocket.TextMessage, frame)
}

// send delivers an envelope now if connected, else at the next connection; it stays
// queued until acked. It returns the envelope id.
func (f *Fake) send(typ string, payload any) string {
	f.mu.Lock()
	f.nextEnv++
	id := fmt.Sprintf("env-%d", f.nextEnv)
	frame, _ := json.Marshal(obj{"type": typ, "envelope_id": id, "payload": payload,
		"accepts_response_payload": typ != "events_api", "retry_attempt": 0, "retry_reason": ""})
	f.unacked[id] = frame
	f.envOrder = append(f.envOrder, id)
	c := f.conn
	f.mu.Unlock()
	if c != nil {
		f.write(c, frame)
	}
	return id
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

// Click presses the button actionID on the message ts (in thread) as user.
func (f *Fake) Click(user, channel, thread, ts string) func(actionID, value string) string {
	return func(actionID, value string) string {
		f.mu.Lock()
		team := f.Team
		f.nextEnv++
		trigger := fmt.Sprintf("trig-%d", f.nextEnv)
		f.mu.Unlock()
		return f.send("interactive", obj{
			"type": "block_actions", "team": obj{"id": team}, "user": obj{"id": user, "name": "user-" + user},
			"api_app_id": "AFAKE", "trigger_id": trigger,
			"container": obj{"type": "message", "message_ts": ts, "channel_id": channel, "is_ephemeral": false, "thread_ts": thread},
			"channel":   obj{"id": channel, "name": "agents"},
			"message":   obj{"type": "message", "ts": ts, "thread_ts": thread, "user": f.BotUser},
			"actions": []obj{{"type": "button", "action_id": actionID, "block_id": "agentd_actions", "value": value,
				"text": obj{"type": "plain_text", "text": actionID}, "action_ts": fmt.Sprint(time.Now().Unix())}},
		})
	}
}

// Submit submits an opened view with a text value in block/action, as user.
func (f *Fake) Submit(user string, view json.RawMessage, block, action, value string) string {
	var v struct {
		CallbackID      string `json:"callback_id"`
		PrivateMetadata string `json:"private_metadata"`
	}
	json.Unmarshal(view, &v)
	return f.send("interactive", obj{
		"type": "view_submission", "team": obj{"id": f.Team}, "user": obj{"id": user, "name": "user-" + user},
		"view": obj{"id": "V1", "type": "modal", "callback_id": v.CallbackID, "private_metadata": v.PrivateMetadata,
			"state": obj{"values": obj{block: obj{action: obj{"type": "plain_text_input", "value": value}}}}},
	})
}

// Slash sends a slash command.
func (f *Fake) Slash(user, channel, command, text string) string {
	return f.send("slash_commands", obj{"token": "verification", "team_id": f.Team, "team_domain": "fake",
		"channel_id": channel, "channel_name": "agents", "user_id": user, "user_name": "user-" + user,
		"command": command, "text": text, "api_app_id": "AFAKE", "response_url": f.srv.URL + "/response", "trigger_id": "trig-slash"})
}
