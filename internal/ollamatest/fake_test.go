package ollamatest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"
)

// chat sends req through the real Ollama client and joins the streamed content.
func chat(t *testing.T, c *ollama.Client, req *ollama.ChatRequest) (string, ollama.ChatResponse, int, error) {
	t.Helper()
	var content strings.Builder
	var last ollama.ChatResponse
	n := 0
	err := c.Chat(context.Background(), req, func(r ollama.ChatResponse) error {
		content.WriteString(r.Message.Content)
		last = r
		n++
		return nil
	})
	return content.String(), last, n, err
}

func userMsg(s string) []ollama.Message { return []ollama.Message{{Role: "user", Content: s}} }

func TestFakeVersionShowTags(t *testing.T) {
	f := NewFake(t)
	c := f.Client()
	ctx := context.Background()

	v, err := c.Version(ctx)
	if err != nil || v != OllamaVersion {
		t.Fatalf("Version = %q, %v", v, err)
	}

	f.ContextLength = 4096
	show, err := c.Show(ctx, &ollama.ShowRequest{Model: TinyModelName})
	if err != nil {
		t.Fatal(err)
	}
	if got := show.ModelInfo["general.architecture"]; got != "llama" {
		t.Errorf("architecture = %v", got)
	}
	if got := show.ModelInfo["llama.context_length"]; got != float64(4096) {
		t.Errorf("context_length = %v (%T)", got, got)
	}
	if len(show.Capabilities) != 1 || show.Capabilities[0] != "completion" {
		t.Errorf("capabilities = %v", show.Capabilities)
	}

	f.SetModels("a", "b:7b")
	list, err := c.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range list.Models {
		names = append(names, m.Name)
	}
	if strings.Join(names, ",") != "a:latest,b:7b" {
		t.Errorf("tags = %v", names)
	}
	if _, err := c.Show(ctx, &ollama.ShowRequest{Model: "a:latest"}); err != nil {
		t.Errorf("show a:latest: %v", err)
	}
}

func TestFakeModelNotFound(t *testing.T) {
	f := NewFake(t)
	c := f.Client()
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"chat", func() error {
			_, _, _, err := chat(t, c, &ollama.ChatRequest{Model: "x", Messages: userMsg("hi")})
			return err
		}},
		{"show", func() error {
			_, err := c.Show(context.Background(), &ollama.ShowRequest{Model: "x"})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var se ollama.StatusError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v (%T), want ollama.StatusError", err, err)
			}
			if se.StatusCode != http.StatusNotFound || se.ErrorMessage != "model 'x' not found" {
				t.Errorf("got %d %q", se.StatusCode, se.ErrorMessage)
			}
		})
	}
}

func TestFakeChatScriptAndStreaming(t *testing.T) {
	f := NewFake(t)
	c := f.Client()
	f.Script(`{"a":"one"}`, "second reply, a bit longer than the first")
	noStream := false
	format := json.RawMessage(`{"type":"object"}`)

	for _, tc := range []struct {
		name       string
		stream     *bool
		format     json.RawMessage
		want       string
		wantChunks int // responses the client callback sees, including the done one
	}{
		{"non_streaming_scripted", &noStream, format, `{"a":"one"}`, 1},
		{"streaming_scripted", nil, nil, "second reply, a bit longer than the first", 5},
		{"default_with_format", nil, format, "{}", 3},
		{"default_plain", &noStream, nil, FakeReply, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &ollama.ChatRequest{
				Model: TinyModelName, Messages: userMsg("hello there"), Stream: tc.stream,
				Format: tc.format, Options: map[string]any{"num_ctx": 4096, "num_predict": 64},
			}
			got, last, n, err := chat(t, c, req)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || n != tc.wantChunks {
				t.Errorf("content %q in %d responses, want %q in %d", got, n, tc.want, tc.wantChunks)
			}
			if !last.Done || last.DoneReason != "stop" || last.PromptEvalCount <= 0 ||
				last.EvalCount <= 0 || last.TotalDuration <= 0 {
				t.Errorf("final response = %+v", last)
			}
		})
	}

	reqs := f.Requests()
	if len(reqs) != 4 {
		t.Fatalf("recorded %d requests", len(reqs))
	}
	if string(reqs[0].Format) != `{"type":"object"}` || reqs[0].Options["num_ctx"] != float64(4096) {
		t.Errorf("recorded format %s, options %v", reqs[0].Format, reqs[0].Options)
	}
	if f.Pending() != 0 {
		t.Errorf("pending = %d", f.Pending())
	}
}

func TestFakeOnChatAndErrors(t *testing.T) {
	f := NewFake(t)
	c := f.Client()
	f.OnChat(func(req *ollama.ChatRequest) (string, error) {
		switch last := req.Messages[len(req.Messages)-1].Content; last {
		case "fail":
			return "", errors.New("boom")
		case "teapot":
			return "", ollama.StatusError{StatusCode: http.StatusTeapot, ErrorMessage: "short and stout"}
		default:
			return "echo: " + last, nil
		}
	})

	got, _, _, err := chat(t, c, &ollama.ChatRequest{Model: TinyModelName, Messages: userMsg("x")})
	if err != nil || got != "echo: x" {
		t.Errorf("got %q, %v", got, err)
	}
	for _, tc := range []struct {
		msg    string
		status int
		text   string
	}{{"fail", 500, "boom"}, {"teapot", 418, "short and stout"}} {
		_, _, _, err := chat(t, c, &ollama.ChatRequest{Model: TinyModelName, Messages: userMsg(tc.msg)})
		var se ollama.StatusError
		if !errors.As(err, &se) || se.StatusCode != tc.status || se.ErrorMessage != tc.text {
			t.Errorf("%s: err = %#v", tc.msg, err)
		}
	}

	// The script wins over OnChat while it lasts.
	f.Script("scripted")
	if got, _, _, _ := chat(t, c, &ollama.ChatRequest{Model: TinyModelName, Messages: userMsg("y")}); got != "scripted" {
		t.Errorf("got %q, want the scripted reply", got)
	}

	f.SetBusy(true)
	_, _, _, err = chat(t, c, &ollama.ChatRequest{Model: TinyModelName, Messages: userMsg("z")})
	var se ollama.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("busy: err = %v", err)
	}
}

// TestFakeLoadError checks a model that cannot be loaded gets Ollama's 500 with the
// loader's reason, is not loaded, and leaves the other models served.
func TestFakeLoadError(t *testing.T) {
	f := NewFake(t)
	f.SetModels(TinyModelName, "other")
	c := f.Client()
	const why = "model requires more system memory (5.2 GiB) than is available (1.9 GiB)"
	f.SetLoadError(TinyModelName, why)
	_, _, _, err := chat(t, c, &ollama.ChatRequest{Model: TinyModelName, Messages: userMsg("x")})
	var se ollama.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusInternalServerError || se.ErrorMessage != why {
		t.Errorf("load error: err = %#v, want HTTP 500 %q", err, why)
	}
	if n := len(f.Loads(TinyModelName)); n != 0 {
		t.Errorf("a model that cannot load was loaded %d times", n)
	}
	if _, _, _, err := chat(t, c, &ollama.ChatRequest{Model: "other", Messages: userMsg("x")}); err != nil {
		t.Errorf("another model: %v", err)
	}
	f.SetLoadError(TinyModelName, "")
	if _, _, _, err := chat(t, c, &ollama.ChatRequest{Model: TinyModelName, Messages: userMsg("x")}); err != nil {
		t.Errorf("after the load error is cleared: %v", err)
	}
}

func TestFakeDown(t *testing.T) {
	f := NewFake(t)
	c := f.Client()
	f.SetDown(true)
	if _, err := c.Version(context.Background()); err == nil {
		t.Fatal("Version succeeded while down")
	}
	if _, _, _, err := chat(t, c, &ollama.ChatRequest{Model: TinyModelName, Messages: userMsg("x")}); err == nil {
		t.Fatal("Chat succeeded while down")
	}
	f.SetDown(false)
	if _, err := c.Version(context.Background()); err != nil {
		t.Fatalf("Version after revive: %v", err)
	}
}

func TestFakeDelayAndConcurrency(t *testing.T) {
	f := NewFake(t)
	f.SetDelay(20 * time.Millisecond)
	f.SetDefault(func(req *ollama.ChatRequest) string { return "d" })
	c := f.Client()
	var wg sync.WaitGroup
	start := time.Now()
	for range 8 {
		wg.Go(func() {
			if got, _, _, err := chat(t, c, &ollama.ChatRequest{Model: TinyModelName, Messages: userMsg("x")}); err != nil || got != "d" {
				t.Errorf("got %q, %v", got, err)
			}
		})
	}
	wg.Wait()
	if time.Since(start) < 20*time.Millisecond {
		t.Error("Delay not applied")
	}
	if n := len(f.Requests()); n != 8 {
		t.Errorf("recorded %d requests", n)
	}
}

func TestFakeContextOverflow(t *testing.T) {
	f := NewFake(t)
	c := f.Client()
	f.ContextLength = 100
	long := userMsg(strings.Repeat("word ", 200)) // ~250 fake tokens
	no := false

	_, last, _, err := chat(t, c, &ollama.ChatRequest{Model: TinyModelName, Messages: long})
	if err != nil || last.PromptEvalCount != 100 {
		t.Errorf("default truncation: prompt_eval_count %d, err %v", last.PromptEvalCount, err)
	}
	_, _, _, err = chat(t, c, &ollama.ChatRequest{Model: TinyModelName, Messages: long, Truncate: &no})
	var se ollama.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusBadRequest ||
		se.ErrorMessage != "the input length exceeds the context length" {
		t.Errorf("truncate=false: err = %v", err)
	}
	_, _, _, err = chat(t, c, &ollama.ChatRequest{Model: TinyModelName, Messages: long, Truncate: &no,
		Options: map[string]any{"num_ctx": 4096}})
	if err != nil {
		t.Errorf("num_ctx 4096: %v", err)
	}
}

// TestFakeReloadsLikeOllama checks the fake reloads a model exactly when Ollama 0.17.4's
// scheduler would: runner options changed, or the call before had keep_alive 0.
func TestFakeReloadsLikeOllama(t *testing.T) {
	zero := ollama.Duration{Duration: 0}
	minute := ollama.Duration{Duration: time.Minute}
	type call struct {
		opts      map[string]any
		keepAlive *ollama.Duration
	}
	for _, tc := range []struct {
		name    string
		calls   []call
		reloads int
	}{
		{"same_num_ctx", []call{{opts: map[string]any{"num_ctx": 2048}}, {opts: map[string]any{"num_ctx": 2048}}}, 0},
		{"num_predict_and_temperature_vary", []call{
			{opts: map[string]any{"num_ctx": 2048, "num_predict": 512}},
			{opts: map[string]any{"num_ctx": 2048, "num_predict": 64, "temperature": 0.1}}}, 0},
		{"num_ctx_changes", []call{{opts: map[string]any{"num_ctx": 2048}}, {opts: map[string]any{"num_ctx": 8192}}}, 1},
		{"num_ctx_unset_is_the_modelfile_default", []call{{opts: map[string]any{"num_ctx": FakeContextLength}}, {}}, 0},
		{"num_thread_changes", []call{{opts: map[string]any{"num_thread": 1}}, {opts: map[string]any{"num_thread": 2}}}, 1},
		{"num_gpu_minus_one_matches_any", []call{{opts: map[string]any{"num_gpu": 3}}, {opts: map[string]any{"num_gpu": -1}}}, 0},
		{"keep_alive_changes", []call{{keepAlive: &minute}, {}}, 0},
		{"keep_alive_zero_unloads", []call{{keepAlive: &zero}, {keepAlive: &minute}}, 1},
		{"back_and_forth", []call{
			{opts: map[string]any{"num_ctx": 2048}}, {opts: map[string]any{"num_ctx": 8192}},
			{opts: map[string]any{"num_ctx": 2048}}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFake(t)
			c := f.Client()
			for _, cl := range tc.calls {
				req := &ollama.ChatRequest{Model: TinyModelName, Messages: userMsg("hi"), Stream: new(bool),
					Options: cl.opts, KeepAlive: cl.keepAlive}
				if err := c.Chat(context.Background(), req, func(ollama.ChatResponse) error { return nil }); err != nil {
					t.Fatal(err)
				}
			}
			if got := f.Reloads(); len(got) != tc.reloads {
				t.Errorf("reloads = %d %v, want %d", len(got), got, tc.reloads)
			}
			if got := len(f.Loads(TinyModelName)); got != len(tc.calls) {
				t.Errorf("loads recorded = %d, want %d", got, len(tc.calls))
			}
		})
	}
}

// TestFakeEmbedLoads checks embeddings count toward a model's loads like chat calls do.
func TestFakeEmbedLoads(t *testing.T) {
	f := NewFake(t)
	c := f.Client()
	ctx := context.Background()
	if _, err := c.Embed(ctx, &ollama.EmbedRequest{Model: TinyModelName, Input: "a", Options: map[string]any{"num_ctx": 512}}); err != nil {
		t.Fatal(err)
	}
	req := &ollama.ChatRequest{Model: TinyModelName, Messages: userMsg("hi"), Stream: new(bool), Options: map[string]any{"num_ctx": 1024}}
	if err := c.Chat(ctx, req, func(ollama.ChatResponse) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if got := f.Reloads(); len(got) != 1 || got[0].From.Runner.NumCtx != 512 || got[0].To.Runner.NumCtx != 1024 {
		t.Errorf("reloads = %v, want one from 512 to 1024", got)
	}
}
