package ollamatest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/procgroup"
	ollama "github.com/ollama/ollama/api"
)

// OllamaVersion is the Ollama release the harness expects (scripts/ollama.sh builds it).
const OllamaVersion = "0.17.4"

const (
	readyTimeout = 60 * time.Second
	stopTimeout  = 5 * time.Second
	logTailBytes = 8 << 10
)

// ErrNoBinary is returned by Binary when no Ollama executable can be found.
var ErrNoBinary = errors.New("no ollama binary: run scripts/ollama.sh (builds Ollama " +
	OllamaVersion + " into the user cache) or set AGENTD_OLLAMA_BIN")

// Binary returns the path of the Ollama executable to test against:
// $AGENTD_OLLAMA_BIN if set and executable, else `ollama` on PATH, else the
// build scripts/ollama.sh caches under ${XDG_CACHE_HOME:-$HOME/.cache}.
func Binary() (string, error) {
	if p := os.Getenv("AGENTD_OLLAMA_BIN"); p != "" {
		if isExecutable(p) {
			return p, nil
		}
		return "", fmt.Errorf("AGENTD_OLLAMA_BIN=%s is not an executable file: %w", p, ErrNoBinary)
	}
	if p, err := exec.LookPath("ollama"); err == nil {
		return p, nil
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", ErrNoBinary
		}
		cache = filepath.Join(home, ".cache")
	}
	p := filepath.Join(cache, "agentd", "ollama-"+OllamaVersion, "ollama")
	if isExecutable(p) {
		return p, nil
	}
	return "", ErrNoBinary
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// Real is a real `ollama serve` process on a loopback port, with its HOME
// and models directory inside one private directory, serving TinyModelName.
// Its methods are safe for concurrent use.
type Real struct {
	bin  string
	dir  string // HOME is dir/home, models are in dir/models
	addr string // 127.0.0.1:port, kept across restarts
	logw io.Writer
	tail *tailBuffer

	mu  sync.Mutex
	grp *procgroup.Group // the running server; nil when stopped
}

// StartReal starts a real Ollama server for a test, with TinyModelName
// created, and stops it when the test ends. Without an Ollama binary it
// skips the test, or fails it when CI=true. Server output goes to a log
// file in the test's temp dir; its tail is printed if the test fails.
func StartReal(tb testing.TB) *Real {
	tb.Helper()
	if _, err := Binary(); err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("ollamatest: CI=true requires the real Ollama server: %v", err)
		}
		tb.Skipf("ollamatest: skipping real-Ollama test: %v", err)
	}
	dir := tb.TempDir()
	logf, err := os.Create(filepath.Join(dir, "ollama.log"))
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*readyTimeout)
	defer cancel()
	r, err := StartRealServer(ctx, dir, logf)
	if err != nil {
		logf.Close()
		tb.Fatalf("ollamatest: %v", err)
	}
	tb.Cleanup(func() {
		r.Stop()
		logf.Close()
		if tb.Failed() {
			tb.Logf("ollamatest: last lines of %s:\n%s", logf.Name(), r.LogTail())
		}
	})
	return r
}

// StartRealServer starts `ollama serve` using dir for its HOME and models,
// on a free loopback port, waits until it answers, and creates TinyModelName
// from WriteTinyModel's output. Server output is copied to logw (may be nil).
// The caller must call Stop. It is StartReal for benchmarks and scripts.
func StartRealServer(ctx context.Context, dir string, logw io.Writer) (*Real, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("ollamatest: pick a port: %w", err)
	}
	for _, d := range []string{"home", "models"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("ollamatest: %w", err)
		}
	}
	if logw == nil {
		logw = io.Discard
	}
	r := &Real{
		bin:  bin,
		dir:  dir,
		addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		logw: logw,
		tail: &tailBuffer{max: logTailBytes},
	}
	if err := r.start(ctx); err != nil {
		return nil, err
	}
	if err := r.createTinyModel(ctx); err != nil {
		r.Stop()
		return nil, err
	}
	return r, nil
}

// URL is the server's base URL, e.g. http://127.0.0.1:41234.
func (r *Real) URL() string { return "http://" + r.addr }

// Addr is the server's host:port, the form OLLAMA_HOST takes.
func (r *Real) Addr() string { return r.addr }

// Dir is the directory holding the server's HOME (dir/home) and models (dir/models).
func (r *Real) Dir() string { return r.dir }

// Client returns an Ollama API client for the server.
func (r *Real) Client() *ollama.Client {
	u, _ := url.Parse(r.URL())
	return ollama.NewClient(u, http.DefaultClient)
}

// LogTail returns the last few kilobytes the server wrote to stdout/stderr.
func (r *Real) LogTail() string { return r.tail.String() }

// Running reports whether the server process is still alive.
func (r *Real) Running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.grp.Running()
}

// Stop stops the server and its runner children (SIGTERM to the process
// group, SIGKILL after a few seconds) and waits for it to exit. The models
// directory is kept, so Restart brings the same models back. Stopping a
// stopped server does nothing.
func (r *Real) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopLocked()
}

func (r *Real) stopLocked() { r.signalLocked(syscall.SIGTERM) }

// Kill ends the server and its runners at once with SIGKILL, with no
// graceful shutdown: in-flight requests see their connections drop, as when
// Ollama crashes. Restart brings it back.
func (r *Real) Kill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.signalLocked(syscall.SIGKILL)
}

func (r *Real) signalLocked(sig syscall.Signal) {
	r.grp.End(sig, stopTimeout)
	r.grp = nil
}

// Restart starts the server again on the same port with the same models
// directory (after stopping it if it is running), and waits until it answers.
func (r *Real) Restart(tb testing.TB) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	if err := r.RestartServer(ctx); err != nil {
		tb.Fatalf("ollamatest: %v", err) // err carries the log tail
	}
}

// RestartServer is Restart for non-test callers.
func (r *Real) RestartServer(ctx context.Context) error {
	r.Stop()
	return r.start(ctx)
}

// start launches `ollama serve` and waits until GET /api/version answers.
func (r *Real) start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.grp != nil {
		return errors.New("ollamatest: server already running")
	}
	cmd := exec.Command(r.bin, "serve")
	cmd.Env = r.env()
	cmd.Dir = r.dir
	out := io.MultiWriter(r.logw, r.tail)
	cmd.Stdout, cmd.Stderr = out, out
	// A runner child inherits the output pipe; don't let it keep Wait from
	// noticing that the server itself has exited.
	cmd.WaitDelay = time.Second
	// Own process group, so Stop can kill the runner children too.
	grp, err := procgroup.Start(cmd)
	if err != nil {
		return fmt.Errorf("ollamatest: start %s serve: %w", r.bin, err)
	}
	r.grp = grp

	if err := r.waitReady(ctx, grp.Done()); err != nil {
		r.stopLocked()
		return fmt.Errorf("ollamatest: %s serve on %s: %w\n--- server log tail ---\n%s", r.bin, r.addr, err, r.tail.String())
	}
	return nil
}

// env is the caller's environment without OLLAMA_* settings, plus a private
// HOME (the server writes its key there) and models directory.
func (r *Real) env() []string {
	return append(procgroup.Environ("OLLAMA_", "HOME="),
		"HOME="+filepath.Join(r.dir, "home"),
		"OLLAMA_HOST="+r.addr,
		"OLLAMA_MODELS="+filepath.Join(r.dir, "models"),
		"OLLAMA_NOPRUNE=1",     // never touch blobs on startup; restarts must find the model
		"OLLAMA_NO_CLOUD=1",    // nothing leaves the machine
		"OLLAMA_KEEP_ALIVE=1h", // keep the runner loaded for the whole test or benchmark
		"OLLAMA_NUM_PARALLEL=1",
		"OLLAMA_MAX_LOADED_MODELS=1",
	)
}

// waitReady polls GET /api/version until it answers 200, the process exits,
// ctx ends, or readyTimeout passes. A live pid is not readiness: only an
// HTTP answer is.
func (r *Real) waitReady(ctx context.Context, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	hc := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.URL()+"/api/version", nil)
		if resp, err := hc.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return errors.New("server exited before answering")
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// createTinyModel uploads the tiny GGUF as a blob and creates TinyModelName from it.
func (r *Real) createTinyModel(ctx context.Context) error {
	var buf bytes.Buffer
	if err := WriteTinyModel(&buf, 1); err != nil {
		return err
	}
	sum := sha256.Sum256(buf.Bytes())
	digest := "sha256:" + hex.EncodeToString(sum[:])
	c := r.Client()
	if err := c.CreateBlob(ctx, digest, &buf); err != nil {
		return fmt.Errorf("ollamatest: upload tiny model blob: %w", err)
	}
	stream := false
	req := &ollama.CreateRequest{
		Model:      TinyModelName,
		Stream:     &stream,
		Files:      map[string]string{"tiny.gguf": digest},
		Template:   TinyTemplate,
		Parameters: TinyParameters(),
	}
	if err := c.Create(ctx, req, func(ollama.ProgressResponse) error { return nil }); err != nil {
		return fmt.Errorf("ollamatest: create %s: %w", TinyModelName, err)
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
