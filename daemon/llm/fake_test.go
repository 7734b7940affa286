package llm

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"

	"github.com/agentd/agentd/commands"
)

// chatStep is one scripted answer of fakeOllama's /api/chat.
type chatStep struct {
	status     int    // HTTP status; 0 means 200
	content    string // the assistant message, for a 200
	body       string // a raw body sent instead of a ChatResponse, when set
	doneReason string // "" means "stop"
}

// fakeOllama speaks just enough of Ollama's HTTP API for this package's tests.
type fakeOllama struct {
	mu        sync.Mutex
	steps     []chatStep // consumed in order; the last one repeats
	chats     []map[string]any
	version   string
	show      ollama.ShowResponse
	showCode  int    // non-zero: /api/show answers this status with showError
	showError string // Ollama's error text
	srv       *httptest.Server
}

func newFake(t *testing.T, steps ...chatStep) *fakeOllama {
	t.Helper()
	f := &fakeOllama{steps: steps, version: "0.17.4"}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// client returns a Client for the fake, with the host given without a scheme as users do.
func (f *fakeOllama) client(t *testing.T) *Client {
	t.Helper()
	c, err := New(f.srv.Listener.Addr().String(), f.srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// requests returns the decoded bodies of every /api/chat call so far.
func (f *fakeOllama) requests() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.chats...)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (f *fakeOllama) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/api/version":
		writeJSON(w, 200, map[string]string{"version": f.version})
	case "/api/show":
		if f.showCode != 0 {
			writeJSON(w, f.showCode, map[string]string{"error": f.showError})
			return
		}
		writeJSON(w, 200, f.show)
	case "/api/chat":
		f.chat(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeOllama) chat(w http.ResponseWriter, r *http.Request) {
	var req map[string]any
	data, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(data, &req); err != nil {
		writeJSON(w, 400, map[string]string{"error": "bad request: " + err.Error()})
		return
	}
	f.chats = append(f.chats, req)
	if len(f.steps) == 0 {
		writeJSON(w, 500, map[string]string{"error": "fake: no scripted reply"})
		return
	}
	st := f.steps[0]
	if len(f.steps) > 1 {
		f.steps = f.steps[1:]
	}
	switch {
	case st.body != "":
		w.WriteHeader(cmp.Or(st.status, 200))
		io.WriteString(w, st.body)
	case st.status != 0 && st.status != 200:
		model, _ := req["model"].(string)
		msg := http.StatusText(st.status)
		if st.status == 404 {
			msg = fmt.Sprintf("model %q not found, try pulling it first", model)
		}
		writeJSON(w, st.status, map[string]string{"error": msg})
	default:
		model, _ := req["model"].(string)
		writeJSON(w, 200, ollama.ChatResponse{
			Model: model, CreatedAt: time.Now(), Done: true, DoneReason: cmp.Or(st.doneReason, "stop"),
			Message: ollama.Message{Role: "assistant", Content: st.content},
			Metrics: ollama.Metrics{PromptEvalCount: 100, EvalCount: 20, TotalDuration: time.Millisecond},
		})
	}
}

// testCmd is a command known only to these tests; it is never registered globally.
type testCmd struct{ spec commands.Spec }

func (c testCmd) Spec() commands.Spec { return c.spec }

func (c testCmd) Execute(context.Context, commands.Env, json.RawMessage) (string, error) {
	return "", nil
}

var testSet = commands.Set{
	testCmd{commands.Spec{Name: "test_echo", Description: "say something back",
		Params: commands.Object(commands.Prop{Name: "text", Schema: commands.String("what to say", 100)})}},
	testCmd{commands.Spec{Name: "test_add", Description: "add two integers",
		Params: commands.Object(
			commands.Prop{Name: "a", Schema: &commands.Schema{Type: "integer"}},
			commands.Prop{Name: "b", Schema: &commands.Schema{Type: "integer"}})}},
	testCmd{commands.Spec{Name: "test_done", Description: "stop",
		Params: commands.Object()}},
}

const testThoughts = `{"observations":"none","text":"t","reasoning":"r","self_criticism":"s","plan":"- p","speak":"hi"}`

// reply returns a reply as a model would write it.
func reply(name, args string) string {
	return `{"thoughts":` + testThoughts + `,"command":{"name":"` + name + `","args":` + args + `}}`
}
