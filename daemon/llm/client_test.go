package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"
	"github.com/ollama/ollama/types/model"

	"github.com/agentd/agentd/internal/testutil"
)

func TestNewNormalizesHost(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty_is_default", "", "http://127.0.0.1:11434"},
		{"host_and_port", "127.0.0.1:11434", "http://127.0.0.1:11434"},
		{"port_only", ":9999", "http://127.0.0.1:9999"},
		{"bare_host", "gpu-box", "http://gpu-box:11434"},
		{"http_without_port", "http://gpu-box", "http://gpu-box:80"},
		{"https_without_port", "https://gpu-box", "https://gpu-box:443"},
		{"full_url", "http://10.0.0.2:11434", "http://10.0.0.2:11434"},
		{"path_prefix", "https://example.com:8443/ollama/", "https://example.com:8443/ollama"},
		{"ipv6", "[::1]:11434", "http://[::1]:11434"},
		{"ipv6_without_port", "[::1]", "http://[::1]:11434"},
		{"spaces_trimmed", "  0.0.0.0:11434 ", "http://0.0.0.0:11434"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.in, nil)
			if err != nil {
				t.Fatal(err)
			}
			if c.Host() != tt.want {
				t.Errorf("Host() = %q, want %q", c.Host(), tt.want)
			}
		})
	}
}

func TestNewRejectsBadHost(t *testing.T) {
	for name, in := range map[string]string{
		"bad_scheme":     "ftp://127.0.0.1:11434",
		"bad_port":       "127.0.0.1:http",
		"port_too_large": "127.0.0.1:70000",
		"space_in_host":  "http://a b:1",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := New(in, nil); err == nil {
				t.Errorf("New(%q) = nil error", in)
			}
		})
	}
}

func TestChatSendsFormatOptionsAndNoStream(t *testing.T) {
	f := newFake(t, chatStep{content: `{"ok":true}`})
	c := f.client(t)
	temp, keep := 0.2, 10*time.Minute
	format := json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}}}`)
	res, err := c.Chat(context.Background(), ChatRequest{
		Model: "tiny", Messages: []Message{{Role: "system", Content: "s"}, {Role: "user", Content: "u"}},
		Format: format, NumCtx: 4096, NumPredict: 256, Temperature: &temp, KeepAlive: &keep,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != `{"ok":true}` || res.PromptTokens != 100 || res.EvalTokens != 20 || res.DoneReason != "stop" {
		t.Errorf("result = %+v", res)
	}
	if res.Duration <= 0 {
		t.Errorf("Duration = %v, want > 0", res.Duration)
	}
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d chat requests, want 1", len(reqs))
	}
	req := reqs[0]
	if req["stream"] != false {
		t.Errorf("stream = %v, want false", req["stream"])
	}
	got, _ := json.Marshal(req["format"])
	var want any
	json.Unmarshal(format, &want)
	wantJSON, _ := json.Marshal(want)
	if string(got) != string(wantJSON) {
		t.Errorf("format = %s, want %s", got, wantJSON)
	}
	opts, _ := req["options"].(map[string]any)
	if opts["num_ctx"] != 4096.0 || opts["num_predict"] != 256.0 || opts["temperature"] != 0.2 {
		t.Errorf("options = %v", opts)
	}
	if req["keep_alive"] != "10m0s" {
		t.Errorf("keep_alive = %v", req["keep_alive"])
	}
	msgs, _ := req["messages"].([]any)
	if len(msgs) != 2 {
		t.Errorf("messages = %v", msgs)
	}
}

func TestChatOmitsUnsetOptions(t *testing.T) {
	f := newFake(t, chatStep{content: "hi"})
	if _, err := f.client(t).Chat(context.Background(), ChatRequest{Model: "tiny"}); err != nil {
		t.Fatal(err)
	}
	req := f.requests()[0]
	if _, ok := req["format"]; ok {
		t.Errorf("format sent without being set: %v", req["format"])
	}
	if opts, _ := req["options"].(map[string]any); len(opts) != 0 {
		t.Errorf("options = %v, want none", opts)
	}
}

func TestChatRejectsInvalidFormat(t *testing.T) {
	f := newFake(t, chatStep{content: "hi"})
	_, err := f.client(t).Chat(context.Background(), ChatRequest{Model: "tiny", Format: json.RawMessage(`{`)})
	if err == nil || errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want a plain error", err)
	}
	if len(f.requests()) != 0 {
		t.Error("an invalid format was sent")
	}
}

func TestChatErrors(t *testing.T) {
	tests := []struct {
		name        string
		step        chatStep
		unavailable bool
		notFound    bool
		status      int
	}{
		{name: "internal_error_500", step: chatStep{status: 500}, unavailable: true},
		{name: "busy_503", step: chatStep{status: 503, body: `{"error":"server busy, please try again.  maximum pending requests exceeded"}`}, unavailable: true},
		{name: "too_many_requests_429", step: chatStep{status: 429}, unavailable: true},
		{name: "empty_500_body", step: chatStep{status: 500, body: " "}, unavailable: true},
		{name: "model_not_found_404", step: chatStep{status: 404}, notFound: true},
		{name: "bad_request_400", step: chatStep{status: 400, body: `{"error":"\"tiny\" does not support chat"}`}, status: 400},
		{name: "other_404_is_not_model", step: chatStep{status: 404, body: "404 page not found"}, status: 404},
		{name: "error_line_in_200", step: chatStep{body: `{"error":"llama runner process has terminated"}` + "\n"}, unavailable: true},
		{name: "not_json_200", step: chatStep{body: "<html>hello</html>\n"}, unavailable: true},
		{name: "no_done_record", step: chatStep{body: `{"message":{"role":"assistant","content":"{"},"done":false}` + "\n"}, unavailable: true},
		{name: "empty_200", step: chatStep{body: "\n"}, unavailable: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.step)
			_, err := f.client(t).Chat(context.Background(), ChatRequest{Model: "tiny"})
			if err == nil {
				t.Fatal("no error")
			}
			if got := errors.Is(err, ErrUnavailable); got != tt.unavailable {
				t.Errorf("errors.Is(%v, ErrUnavailable) = %v, want %v", err, got, tt.unavailable)
			}
			var nf *ModelNotFoundError
			if got := errors.As(err, &nf); got != tt.notFound {
				t.Errorf("errors.As(%v, *ModelNotFoundError) = %v, want %v", err, got, tt.notFound)
			}
			if tt.notFound && err.Error() != "model \"tiny\" not found: run `ollama pull tiny`" {
				t.Errorf("message = %q", err)
			}
			var se *StatusError
			if tt.status != 0 && (!errors.As(err, &se) || se.Status != tt.status) {
				t.Errorf("err = %v, want *StatusError %d", err, tt.status)
			}
			if tt.status != 0 && !strings.Contains(err.Error(), "HTTP") {
				t.Errorf("message %q does not name the status", err)
			}
		})
	}
}

func TestChatConnectionRefusedIsUnavailable(t *testing.T) {
	c, err := New(testutil.FreeAddr(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Chat(context.Background(), ChatRequest{Model: "tiny"})
	var ue *UnavailableError
	if !errors.Is(err, ErrUnavailable) || !errors.As(err, &ue) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if !strings.Contains(err.Error(), c.Host()) || !strings.Contains(err.Error(), "refused") {
		t.Errorf("message %q should name the host and the cause", err)
	}
}

func TestChatCancelledIsNotUnavailable(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	c, err := New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, mk := range map[string]func() (context.Context, context.CancelFunc){
		"canceled": func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			return ctx, cancel
		},
		"deadline": func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 50*time.Millisecond)
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := mk()
			defer cancel()
			_, err := c.Chat(ctx, ChatRequest{Model: "tiny"})
			if errors.Is(err, ErrUnavailable) {
				t.Errorf("err = %v is classified unavailable", err)
			}
			if !errors.Is(err, ctx.Err()) {
				t.Errorf("err = %v, want %v", err, ctx.Err())
			}
		})
	}
}

func TestProbe(t *testing.T) {
	tests := []struct {
		name        string
		modelInfo   map[string]any
		parameters  string
		wantCtx     int
		wantTrained int
		wantNumCtx  int
	}{
		{"trained_length_only", map[string]any{"general.architecture": "llama", "llama.context_length": 131072}, "", 131072, 131072, 0},
		{"modelfile_lowers_it", map[string]any{"general.architecture": "llama", "llama.context_length": 131072},
			"num_ctx                        2048\nstop                           \"<|eot_id|>\"", 2048, 131072, 2048},
		{"modelfile_cannot_raise_it", map[string]any{"general.architecture": "gemma3", "gemma3.context_length": 8192},
			"num_ctx 32768", 8192, 8192, 32768},
		{"no_model_info", nil, "num_ctx 4096", 4096, 0, 4096},
		{"nothing_known", map[string]any{"general.architecture": "llama"}, "", 0, 0, 0},
		{"architecture_missing", map[string]any{"qwen2.context_length": 32768}, "", 32768, 32768, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t)
			f.show = ollama.ShowResponse{
				ModelInfo: tt.modelInfo, Parameters: tt.parameters,
				Details:      ollama.ModelDetails{Family: "llama"},
				Capabilities: []model.Capability{model.CapabilityCompletion, model.CapabilityTools},
			}
			info, err := f.client(t).Probe(context.Background(), "tiny")
			if err != nil {
				t.Fatal(err)
			}
			if info.ServerVersion != "0.17.4" || info.Model != "tiny" || info.Family != "llama" {
				t.Errorf("info = %+v", info)
			}
			if info.ContextLength != tt.wantCtx || info.TrainedContextLength != tt.wantTrained || info.ModelfileNumCtx != tt.wantNumCtx {
				t.Errorf("context = %d (trained %d, num_ctx %d), want %d (%d, %d)", info.ContextLength,
					info.TrainedContextLength, info.ModelfileNumCtx, tt.wantCtx, tt.wantTrained, tt.wantNumCtx)
			}
			if !slices.Contains(info.Capabilities, "tools") || slices.Contains(info.Capabilities, "vision") || len(info.Capabilities) != 2 {
				t.Errorf("capabilities = %v", info.Capabilities)
			}
		})
	}
}

func TestProbeErrors(t *testing.T) {
	f := newFake(t)
	f.showCode, f.showError = 404, "model 'tiny' not found"
	_, err := f.client(t).Probe(context.Background(), "tiny")
	var nf *ModelNotFoundError
	if !errors.As(err, &nf) || nf.Model != "tiny" {
		t.Errorf("err = %v, want *ModelNotFoundError", err)
	}
	f.showCode, f.showError = 500, "boom"
	if _, err = f.client(t).Probe(context.Background(), "tiny"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("err = %v, want ErrUnavailable", err)
	}
	c, _ := New(testutil.FreeAddr(t), nil)
	if _, err = c.Probe(context.Background(), "tiny"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("err = %v, want ErrUnavailable", err)
	}
}

// TestNextBackoffIsTheModelWait: the wait on an unavailable model server is 1s doubling
// to 30s, with ±20% jitter.
func TestNextBackoffIsTheModelWait(t *testing.T) {
	for i := 1; i < 20; i++ {
		if d := NextBackoff(i); d < 800*time.Millisecond || d > 36*time.Second {
			t.Errorf("NextBackoff(%d) = %v, out of range", i, d)
		}
	}
	if b := modelBackoff; b.Base != time.Second || b.Max != 30*time.Second || b.Jitter != 0.2 {
		t.Errorf("model backoff = %+v, want 1s doubling to 30s, ±20%%", b)
	}
}

func TestErrorMessagesAreShortAndSayWhatHappened(t *testing.T) {
	tests := []struct {
		name string
		step chatStep
		want string
	}{
		{"busy", chatStep{status: 503, body: `{"error":"server busy, please try again.  maximum pending requests exceeded"}`},
			"chat: HTTP 503 Service Unavailable: server busy"},
		{"empty_200", chatStep{body: "\n"}, "chat: empty reply"},
		{"no_done_record", chatStep{body: `{"done":false}` + "\n"}, "chat: the reply ended before it was complete"},
		{"huge_garbage", chatStep{body: strings.Repeat("é", 5000) + "\n"}, "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.step)
			c := f.client(t)
			_, err := c.Chat(context.Background(), ChatRequest{Model: "tiny"})
			msg := err.Error()
			if !strings.HasPrefix(msg, "ollama at "+c.Host()+": ") || !strings.Contains(msg, tt.want) || len(msg) > 400 {
				t.Errorf("message = %q, want it to name the host and contain %q", msg, tt.want)
			}
		})
	}
}

// A server's token counts are untrusted: a negative one counts as none, so it cannot lower
// an agent's tokens under its budget.
func TestChatNegativeTokenCountsAreNone(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		fmt.Fprint(w, `{"model":"tiny","message":{"role":"assistant","content":"{}"},"done":true,"done_reason":"stop","prompt_eval_count":-1000000,"eval_count":-5}`+"\n")
	}))
	defer srv.Close()
	c, err := New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Chat(context.Background(), ChatRequest{Model: "tiny"})
	if err != nil {
		t.Fatal(err)
	}
	if res.PromptTokens != 0 || res.EvalTokens != 0 {
		t.Errorf("tokens = %d prompt, %d eval; want 0 and 0", res.PromptTokens, res.EvalTokens)
	}
}
