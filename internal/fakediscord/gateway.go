package fakediscord

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentd/agentd/internal/randid"
)

// session is a gateway session: it outlives connections so a client can RESUME it, and it
// buffers every dispatch (with its sequence number) for replay.
type session struct {
	id      string
	intents int
	seq     int64
	sent    []outFrame // dispatches, oldest first, for RESUME replay
	conn    *gwConn    // nil while disconnected
	invalid bool
}

// maxReplay bounds a session's replay buffer.
const maxReplay = 4096

type outFrame struct {
	seq     int64
	payload []byte
}

// gwConn is one websocket connection. Everything sent goes through out, in order, drained by
// one writer goroutine, so nothing is written while the server's lock is held.
type gwConn struct {
	n    int
	ws   *websocket.Conn
	sess *session

	mu     sync.Mutex
	out    [][]byte
	closeC *websocket.CloseError // a close frame to send after out drains
	wake   chan struct{}
	done   chan struct{}
	once   sync.Once
}

func (c *gwConn) send(p []byte) {
	c.mu.Lock()
	c.out = append(c.out, p)
	c.mu.Unlock()
	c.poke()
}

func (c *gwConn) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// closeWith sends a close frame after everything queued, then closes the connection.
func (c *gwConn) closeWith(code int, text string) {
	c.mu.Lock()
	if c.closeC == nil {
		c.closeC = &websocket.CloseError{Code: code, Text: text}
	}
	c.mu.Unlock()
	c.poke()
}

// abort closes the TCP connection at once, without a close frame: a dead network.
func (c *gwConn) abort() {
	c.once.Do(func() {
		close(c.done)
		c.ws.UnderlyingConn().Close()
	})
}

func (c *gwConn) writer() {
	for {
		c.mu.Lock()
		out, cl := c.out, c.closeC
		c.out = nil
		c.mu.Unlock()
		for _, p := range out {
			c.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if err := c.ws.WriteMessage(websocket.TextMessage, p); err != nil {
				c.abort()
				return
			}
		}
		if cl != nil {
			c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(cl.Code, cl.Text), time.Now().Add(time.Second))
			c.abort()
			return
		}
		select {
		case <-c.wake:
		case <-c.done:
			return
		}
	}
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func payload(op int, d any, seq int64, event string) []byte {
	p := map[string]any{"op": op, "d": d, "s": nil, "t": nil}
	if op == OpDispatch {
		p["s"], p["t"] = seq, event
	}
	b, _ := json.Marshal(p)
	return b
}

func (s *Server) serveGateway(w http.ResponseWriter, r *http.Request) {
	if enc := r.URL.Query().Get("encoding"); enc != "" && enc != "json" {
		http.Error(w, "fakediscord speaks encoding=json only", http.StatusBadRequest)
		return
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &gwConn{ws: ws, wake: make(chan struct{}, 1), done: make(chan struct{})}
	v := r.URL.Query().Get("v")
	s.mu.Lock()
	s.connSeq++
	c.n = s.connSeq
	s.conns[c] = true
	s.gatewayVersions = append(s.gatewayVersions, v)
	s.mu.Unlock()
	go c.writer()
	switch {
	case v != "9" && v != "10":
		c.closeWith(4012, "Invalid API version") // as Discord closes one it does not serve
	case r.URL.Query().Get("compress") != "":
		// zlib-stream transport compression is not implemented; say so the way Discord would refuse.
		c.closeWith(4000, "fakediscord: transport compression is not supported")
	default:
		c.send(payload(OpHello, map[string]int64{"heartbeat_interval": s.cfg.HeartbeatInterval.Milliseconds()}, 0, ""))
	}
	s.readLoop(c)
}

func (s *Server) readLoop(c *gwConn) {
	defer func() {
		c.abort()
		s.mu.Lock()
		delete(s.conns, c)
		if c.sess != nil && c.sess.conn == c {
			c.sess.conn = nil
		}
		s.mu.Unlock()
	}()
	for {
		_, msg, err := c.ws.ReadMessage()
		if err != nil {
			// A client closing with 1000 or 1001 ends its session, as on Discord — unless the
			// server closed first and the client's frame is only its answer.
			ce, ok := err.(*websocket.CloseError)
			c.mu.Lock()
			serverClosed := c.closeC != nil
			c.mu.Unlock()
			if ok && !serverClosed && (ce.Code == websocket.CloseNormalClosure || ce.Code == websocket.CloseGoingAway) {
				s.mu.Lock()
				if c.sess != nil {
					c.sess.invalid = true
				}
				s.mu.Unlock()
			}
			return
		}
		var in struct {
			Op int             `json:"op"`
			D  json.RawMessage `json:"d"`
		}
		if json.Unmarshal(msg, &in) != nil {
			c.closeWith(4002, "Error while decoding payload.")
			continue
		}
		s.mu.Lock()
		s.frames = append(s.frames, Frame{Conn: c.n, Op: in.Op, Data: in.D})
		s.notify()
		s.handleFrame(c, in.Op, in.D)
		s.mu.Unlock()
	}
}

// handleFrame answers one client payload; s.mu is held.
func (s *Server) handleFrame(c *gwConn, op int, d json.RawMessage) {
	switch op {
	case OpHeartbeat:
		if !s.ackPaused {
			c.send(payload(OpHeartbeatACK, nil, 0, ""))
		}
	case OpIdentify:
		s.identify(c, d)
	case OpResume:
		s.resume(c, d)
	case OpPresenceUpdate, 4, 8:
		if c.sess == nil {
			c.closeWith(4003, "Not authenticated.")
		}
	default:
		c.closeWith(4001, "Unknown opcode.")
	}
}

func (s *Server) tokenOK(t string) bool {
	return strings.TrimPrefix(t, "Bot ") == s.cfg.Token
}

func (s *Server) identify(c *gwConn, d json.RawMessage) {
	if c.sess != nil {
		c.closeWith(4005, "Already authenticated.")
		return
	}
	var id struct {
		Token   string  `json:"token"`
		Intents *int    `json:"intents"`
		Shard   *[2]int `json:"shard"`
	}
	if !decodeAuthed(s, c, d, &id, &id.Token) {
		return
	}
	if id.Intents == nil || *id.Intents < 0 || *id.Intents > allIntents {
		c.closeWith(4013, "Invalid intent(s).")
		return
	}
	if *id.Intents&privilegedIntents&^*s.cfg.PrivilegedIntents != 0 {
		c.closeWith(4014, "Disallowed intent(s).")
		return
	}
	if id.Shard != nil && (id.Shard[1] != 1 || id.Shard[0] != 0) {
		c.closeWith(4010, "Invalid shard.")
		return
	}
	sess := &session{id: randid.Hex(16), intents: *id.Intents, conn: c}
	s.sessions[sess.id] = sess
	c.sess = sess
	var guilds []map[string]any
	for _, g := range s.guildIDs() {
		guilds = append(guilds, map[string]any{"id": g, "unavailable": true})
	}
	ready := map[string]any{
		"v": 10, "user": s.cfg.BotUser, "guilds": guilds, "session_id": sess.id,
		"resume_gateway_url": s.GatewayURL(), "private_channels": []any{},
		"application": map[string]any{"id": s.cfg.ApplicationID, "flags": 0},
	}
	if id.Shard != nil {
		ready["shard"] = id.Shard
	}
	s.sendTo(sess, "READY", ready)
	if sess.intents&IntentGuilds != 0 {
		for _, g := range s.guildIDs() {
			s.sendTo(sess, "GUILD_CREATE", s.guildCreate(g))
		}
	}
}

// decodeAuthed decodes an identify or resume payload d into v and checks the token it
// carries (token points into v), closing c as Discord does when either fails; it reports
// whether the payload goes on.
func decodeAuthed(s *Server, c *gwConn, d json.RawMessage, v any, token *string) bool {
	if json.Unmarshal(d, v) != nil {
		c.closeWith(4002, "Error while decoding payload.")
		return false
	}
	if !s.tokenOK(*token) {
		c.closeWith(4004, "Authentication failed.")
		return false
	}
	return true
}

func (s *Server) resume(c *gwConn, d json.RawMessage) {
	var r struct {
		Token     string `json:"token"`
		SessionID string `json:"session_id"`
		Seq       int64  `json:"seq"`
	}
	if !decodeAuthed(s, c, d, &r, &r.Token) {
		return
	}
	sess := s.sessions[r.SessionID]
	if sess == nil || sess.invalid || r.Seq > sess.seq || (len(sess.sent) > 0 && r.Seq < sess.sent[0].seq-1) {
		// Not resumable: the client must identify again (discordgo does, on this connection).
		c.send(payload(OpInvalidSession, false, 0, ""))
		return
	}
	if old := sess.conn; old != nil && old != c {
		old.abort()
	}
	sess.conn, c.sess = c, sess
	from := r.Seq - int64(s.replayExtra)
	s.replayExtra = 0
	for _, f := range sess.sent {
		if f.seq > from {
			c.send(f.payload)
		}
	}
	s.sendTo(sess, "RESUMED", map[string]any{})
}

// sendTo gives a dispatch the session's next sequence number, buffers it for replay and
// sends it if the session has a connection; s.mu is held.
func (s *Server) sendTo(sess *session, event string, d any) {
	sess.seq++
	p := payload(OpDispatch, d, sess.seq, event)
	sess.sent = append(sess.sent, outFrame{sess.seq, p})
	if len(sess.sent) > maxReplay {
		sess.sent = sess.sent[len(sess.sent)-maxReplay:]
	}
	if sess.conn != nil {
		sess.conn.send(p)
	}
}

// dispatchLocked sends an event to every live session whose intents include need (0: all).
// Sessions that are disconnected but resumable buffer it, as Discord does.
func (s *Server) dispatchLocked(event string, d any, need int) {
	for _, sess := range s.liveSessions() {
		if need == 0 || sess.intents&need != 0 {
			s.sendTo(sess, event, d)
		}
	}
}

func (s *Server) liveSessions() []*session {
	var out []*session
	for _, sess := range s.sessions {
		if !sess.invalid {
			out = append(out, sess)
		}
	}
	slices.SortFunc(out, func(a, b *session) int { return strings.Compare(a.id, b.id) })
	return out
}

func intentFor(ch *Channel) int {
	if ch == nil || ch.GuildID == "" {
		return IntentDirectMessages
	}
	return IntentGuildMessages
}

// dispatchMessageLocked sends MESSAGE_CREATE/UPDATE, blanking content, embeds, attachments
// and components for sessions without MESSAGE_CONTENT, except in DMs, the bot's own
// messages and messages that mention the bot, as Discord does.
func (s *Server) dispatchMessageLocked(event string, m *Message) {
	ch := s.channels[m.ChannelID]
	need := intentFor(ch)
	exempt := m.GuildID == "" || m.Author.ID == s.cfg.BotUser.ID ||
		slices.ContainsFunc(m.Mentions, func(u User) bool { return u.ID == s.cfg.BotUser.ID })
	blank := *m
	blank.Content, blank.Embeds, blank.Attachments, blank.Components = "", []json.RawMessage{}, []Attachment{}, []json.RawMessage{}
	for _, sess := range s.liveSessions() {
		if sess.intents&need == 0 {
			continue
		}
		if exempt || sess.intents&IntentMessageContent != 0 {
			s.sendTo(sess, event, m)
		} else {
			s.sendTo(sess, event, &blank)
		}
	}
}

func (s *Server) guildIDs() []string {
	var ids []string
	for id := range s.guilds {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (s *Server) guildCreate(id string) map[string]any {
	g := s.guilds[id]
	var channels, threads []Channel
	for _, c := range s.channels {
		if c.GuildID != id {
			continue
		}
		if c.ThreadMetadata != nil {
			threads = append(threads, *c)
		} else {
			channels = append(channels, *c)
		}
	}
	members := []Member{}
	for _, m := range s.members[id] {
		members = append(members, *m)
	}
	return map[string]any{
		"id": g.ID, "name": g.Name, "owner_id": g.OwnerID, "roles": append([]Role{}, g.Roles...),
		"channels": append([]Channel{}, channels...), "threads": append([]Channel{}, threads...),
		"members": members, "member_count": len(members), "large": false, "unavailable": false,
		"joined_at": time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
	}
}

// Gateway controls for tests.

// Drop kills every gateway connection without a close frame, like a dead network. Sessions
// stay resumable; dispatches made meanwhile are replayed on RESUME.
func (s *Server) Drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.abort()
	}
}

// CloseGateway closes every connection with a close frame. Codes Discord documents as not
// resumable (4004, 4007, 4009, 4010–4014) also end the sessions.
func (s *Server) CloseGateway(code int, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	end := code == 4004 || code == 4007 || code == 4009 || (code >= 4010 && code <= 4014)
	for c := range s.conns {
		if end && c.sess != nil {
			c.sess.invalid = true
		}
		c.closeWith(code, text)
	}
}

// RequestReconnect sends op 7 RECONNECT on every connection; clients should reconnect and
// RESUME.
func (s *Server) RequestReconnect() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.send(payload(OpReconnect, nil, 0, ""))
	}
}

// InvalidateSessions sends op 9 INVALID_SESSION with d=resumable on every connection. When
// not resumable the sessions end, and a client must IDENTIFY again.
func (s *Server) InvalidateSessions(resumable bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.sess == nil {
			continue
		}
		if !resumable {
			c.sess.invalid = true
			c.sess.conn = nil
			c.sess = nil // the next IDENTIFY on this connection is welcome
		}
		c.send(payload(OpInvalidSession, resumable, 0, ""))
	}
}

// PauseHeartbeatACKs stops (or restarts) answering heartbeats, so a client's watchdog for a
// silently dead connection can be tested.
func (s *Server) PauseHeartbeatACKs(paused bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ackPaused = paused
}

// Connections is the number of open gateway connections that identified or resumed.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for c := range s.conns {
		if c.sess != nil {
			n++
		}
	}
	return n
}

// GatewayVersions returns the API version (the v query) each gateway connection asked
// for, in order.
func (s *Server) GatewayVersions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.gatewayVersions)
}

// Intents returns the intents of the most recent IDENTIFY, or -1 if there was none.
func (s *Server) Intents() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.frames) - 1; i >= 0; i-- {
		if s.frames[i].Op == OpIdentify {
			var id struct {
				Intents int `json:"intents"`
			}
			json.Unmarshal(s.frames[i].Data, &id)
			return id.Intents
		}
	}
	return -1
}

// Settle waits until the newest connection that identified or resumed has sent its first
// heartbeat. discordgo v0.29.0 starts its heartbeat goroutine after Open returns and, if
// that goroutine's first write fails, runs a second Close+reconnect: closing the session or
// dropping the connection inside that window can close the fresh connection with 1000 (which
// ends the session) or resurrect a closed session. Tests call Settle before Close and before
// each server-side disruption.
func (s *Server) Settle(ctx context.Context) error {
	s.mu.Lock()
	latest := 0
	for _, f := range s.frames {
		if (f.Op == OpIdentify || f.Op == OpResume) && f.Conn > latest {
			latest = f.Conn
		}
	}
	s.mu.Unlock()
	_, err := s.WaitFrameFrom(ctx, 0, func(f Frame) bool { return f.Conn == latest && f.Op == OpHeartbeat })
	return err
}

// ReplayOnResume makes the next RESUME replay, besides what the client missed, the n
// dispatches before its sequence: events it has handled already come again with the same
// message and interaction IDs, as when Discord redelivers after a connection died between
// the client handling an event and its sequence being acknowledged. Tests use it to check
// that a redelivered message or click is applied once.
func (s *Server) ReplayOnResume(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replayExtra = n
}
