package agentprotocol_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/server"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/testutil"
)

const token = "ap-test-token-0123456789"

// apClient talks to the daemon's Agent Protocol and checks every request it sends as
// valid and every response against testdata/openapi.yml.
type apClient struct {
	t      *testing.T
	base   string
	token  string
	router routers.Router
	state  string // the daemon's state dir; workspaces are under state/workspaces
}

func loadSpec(t *testing.T, base string) routers.Router {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(filepath.Join("testdata", "openapi.yml"))
	if err != nil {
		t.Fatal(err)
	}
	// The published examples do not all fit their schemas (Task.artifacts lists ids);
	// the schemas are what the tests hold the daemon to.
	if err := doc.Validate(loader.Context, openapi3.DisableExamplesValidation()); err != nil {
		t.Fatalf("the spec itself: %v", err)
	}
	doc.Servers = openapi3.Servers{{URL: base}}
	router, err := legacy.NewRouter(doc, openapi3.DisableExamplesValidation())
	if err != nil {
		t.Fatal(err)
	}
	return router
}

// response is a reply read in full.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decoding %s: %v", r.body, err)
	}
}

// errorText is the {"error", "message"} of an error reply.
func (r response) errorText(t *testing.T) string {
	t.Helper()
	var e struct{ Error, Message string }
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("error reply Content-Type %q", ct)
	}
	if err := json.Unmarshal(r.body, &e); err != nil || e.Error == "" || e.Message != e.Error {
		t.Fatalf("error reply %s is not {\"error\": \"...\", \"message\": same}", r.body)
	}
	return e.Error
}

// do sends a request. validRequest says the test means it to be valid: then the
// request is checked against the spec too. The response always is.
func (c *apClient) do(method, path, contentType string, body []byte, validRequest bool) response {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		c.t.Fatalf("%s %s is not in the spec: %v", method, path, err)
	}
	opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts}
	if validRequest {
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			c.t.Errorf("request %s %s does not fit the spec: %v", method, path, err)
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	err = openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Body: io.NopCloser(bytes.NewReader(raw)), Options: opts,
	})
	if err != nil {
		c.t.Errorf("response to %s %s (%d %s) does not fit the spec: %v", method, path, resp.StatusCode, raw, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: raw}
}

func (c *apClient) json(method, path string, v any) response {
	c.t.Helper()
	var body []byte
	if v != nil {
		body, _ = json.Marshal(v)
	}
	return c.do(method, path, "application/json", body, true)
}

func (c *apClient) upload(taskID, dir, name, contents string) response {
	c.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, _ := mw.CreateFormFile("file", name)
	fw.Write([]byte(contents))
	if dir != "" {
		mw.WriteField("relative_path", dir)
	}
	mw.Close()
	return c.do("POST", "/ap/v1/agent/tasks/"+taskID+"/artifacts", mw.FormDataContentType(), buf.Bytes(), dir == "" || !strings.Contains(dir, ".."))
}

// proposal is a model reply proposing name(args).
var proposal = ollamatest.Reply

// startDaemon runs the real daemon (server.Run) with the fake model and the listener on
// a loopback port, and returns a client for it.
func startDaemon(t *testing.T) (*apClient, *ollamatest.Agent) {
	t.Helper()
	fake := ollamatest.NewFake(t)
	// The model makes every agent note-writer, then proposes what the test scripts, then finish.
	m := &ollamatest.Agent{Name: "note-writer", Finish: proposal("finish", map[string]string{"reason": "nothing left"})}
	fake.OnChat(m.Chat)
	cfg := config.Default()
	cfg.StateDir = t.TempDir()
	cfg.Socket = filepath.Join(testutil.ShortTempDir(t), "s.sock")
	cfg.Ollama.Hosts, cfg.Ollama.Model = []config.OllamaHost{{URL: fake.URL(), Slots: 1}}, ollamatest.TinyModelName
	cfg.Memory.Enabled = false
	cfg.HTTP.Listen = testutil.FreeAddr(t)
	cfg.HTTP.AgentProtocol = true
	cfg.HTTP.TokenFile = filepath.Join(t.TempDir(), "token")
	os.WriteFile(cfg.HTTP.TokenFile, []byte(token), 0o600)

	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() {
		done <- server.Run(ctx, cfg, slog.New(slog.DiscardHandler), server.Options{Version: "test", Ready: func() { close(ready) }})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("the daemon did not start: %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("the daemon did not start")
	}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("the daemon: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("the daemon did not stop")
		}
	})
	base := "http://" + cfg.HTTP.Listen
	return &apClient{t: t, base: base, token: token, router: loadSpec(t, base), state: cfg.StateDir}, m
}
