package shell

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/internal/netguardtest"
)

// newClone returns clone_repository with a fake resolver (nothing here asks real DNS) and
// a tripwire that fails the test if git's proxy connects anywhere but loopback.
func newClone(t *testing.T, o Options) *cloneRepository {
	t.Helper()
	c, err := NewCloneRepository(o)
	if err != nil {
		t.Skipf("clone_repository not tested: %v", err)
	}
	cr := c.(*cloneRepository)
	cr.guard.Resolver = func(_ context.Context, host string) ([]netip.Addr, error) {
		answers := map[string][]string{
			"internal.example": {"93.184.215.14", "10.1.2.3"},
			"local.example":    {"::ffff:127.0.0.1"},
		}
		for name, addrs := range netguardtest.Names {
			answers[name] = addrs
		}
		var out []netip.Addr
		for _, a := range answers[host] {
			out = append(out, netip.MustParseAddr(a))
		}
		if len(out) == 0 {
			return nil, errors.New("no such host (test resolver)")
		}
		return out, nil
	}
	cr.guard.BeforeConnect = func(ap netip.AddrPort) error {
		if !ap.Addr().Unmap().IsLoopback() {
			t.Errorf("tripwire: clone_repository tried to connect to %s", ap)
			return errors.New("tripwire: not loopback")
		}
		return nil
	}
	return cr
}

func cloneArgs(url, path string) map[string]string {
	return map[string]string{"url": url, "path": path}
}

func TestCloneRepositoryRefusals(t *testing.T) {
	c := newClone(t, Options{})
	if _, err := NewCloneRepository(Options{Git: "/nonexistent/git"}); !errors.Is(err, ErrNoGit) {
		t.Errorf("missing git: %v; want ErrNoGit", err)
	}
	tests := []struct {
		name     string
		url      string
		path     string
		want     string
		sentinel error
	}{
		{"empty_url", "", "r", "empty url", ErrURLRefused},
		{"file_url", "file:///etc/passwd", "r", "uses file:", ErrURLRefused},
		{"ssh_url", "ssh://git@github.com/o/r.git", "r", "uses ssh:", ErrURLRefused},
		{"scp_style", "git@github.com:o/r.git", "r", "ssh addresses", ErrURLRefused},
		{"local_path", "/srv/git/r.git", "r", "local paths", ErrURLRefused},
		{"relative_path", "../other/repo", "r", "local paths", ErrURLRefused},
		{"ext_transport", "ext::sh -c touch% /tmp/pwned", "r", "spaces", ErrURLRefused},
		{"ext_no_space", "ext::sh", "r", "uses ext:", ErrURLRefused},
		{"option_injection", "--upload-pack=touch /tmp/pwned", "r", "starts with '-'", ErrURLRefused},
		{"option_no_space", "-uhttps://example.com", "r", "starts with '-'", ErrURLRefused},
		{"user_and_password", "https://user:hunter2@github.com/o/r.git", "r", "credentials", ErrURLRefused},
		{"token_as_user", "https://ghp_abc123@github.com/o/r.git", "r", "credentials", ErrURLRefused},
		{"token_in_query", "https://github.com/o/r.git?access_token=hunter2", "r", `query or fragment (which can carry tokens); give the repository URL alone, like "https://github.com/o/r.git"`, ErrURLRefused},
		{"newline", "https://github.com/o/r.git\n--upload-pack=x", "r", "control characters", ErrURLRefused},
		{"no_host", "https:///o/r.git", "r", "no host", ErrURLRefused},
		{"ftp", "ftp://example.com/r.git", "r", "uses ftp:", ErrURLRefused},
		{"loopback_literal", "http://127.0.0.1:8080/r.git", "r", "loopback", ErrURLRefused},
		{"loopback_v6", "http://[::1]/r.git", "r", "loopback", ErrURLRefused},
		{"metadata_service", "http://169.254.169.254/r.git", "r", "link-local", ErrURLRefused},
		{"name_with_one_private_address", "https://internal.example/r.git", "r", "10.1.2.3, a private", ErrURLRefused},
		{"name_to_mapped_loopback", "https://local.example/r.git", "r", "loopback", ErrURLRefused},
		{"unresolvable", "https://nowhere.example/r.git", "r", "cannot resolve", nil},
		{"path_escapes", "https://203.0.113.9/r.git", "../r", "leaves the workspace", commands.ErrBadPath},
		{"path_absolute", "https://203.0.113.9/r.git", "/tmp/r", "is absolute", commands.ErrBadPath},
		{"path_is_workspace", "https://203.0.113.9/r.git", ".", "workspace itself", nil},
		{"path_exists", "https://203.0.113.9/r.git", "existing", "already exists", nil},
		{"path_in_git_folder", "https://203.0.113.9/r.git", "existing/.git/hooks", "is in a .git folder", commands.ErrBadPath},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := workspace(t)
			os.Mkdir(filepath.Join(ws, "existing"), 0o755)
			out, err := run(context.Background(), t, c, ws, cloneArgs(tt.url, tt.path), 10*time.Second)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %q, %v; want an error saying %q", out, err, tt.want)
			}
			if tt.sentinel != nil && !errors.Is(err, tt.sentinel) {
				t.Errorf("error %v is not %v", err, tt.sentinel)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error repeats the password: %v", err)
			}
		})
	}
}

// gitServer serves bare repositories from a temp folder over smart HTTP with
// git-http-backend, on 127.0.0.1. It counts requests carrying the X-Agentd-Test header,
// which only a config the clone must ignore would add, and redirects /moved.git. hits
// counts every request.
func gitServer(t *testing.T) (url string, evil, hits *atomic.Int32) {
	t.Helper()
	srv, evil, hits := serveGit(t, false)
	return srv.URL, evil, hits
}

// serveGit is gitServer, over TLS (httptest's certificate, for 127.0.0.1) when tls is set.
func serveGit(t *testing.T, tls bool) (srv *httptest.Server, evil, hits *atomic.Int32) {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed: clone_repository not tested")
	}
	execPath, err := exec.Command(git, "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	backend := filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Skipf("git-http-backend missing: %v", err)
	}
	root, src := t.TempDir(), t.TempDir()
	gitEnv := append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+src,
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	os.WriteFile(filepath.Join(src, "README.md"), []byte("# hello from the test repo\n"), 0o644)
	os.MkdirAll(filepath.Join(src, "cmd"), 0o755)
	os.WriteFile(filepath.Join(src, "cmd", "main.go"), []byte("package main\n"), 0o644)
	for _, args := range [][]string{
		{"init", "-q", "-b", "main", src},
		{"-C", src, "add", "."},
		{"-C", src, "commit", "-q", "-m", "first"},
		{"clone", "-q", "--bare", src, filepath.Join(root, "repo.git")},
	} {
		cmd := exec.Command(git, args...)
		cmd.Env = gitEnv
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	backendHandler := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}, Stderr: io.Discard}
	evil, hits = new(atomic.Int32), new(atomic.Int32)
	srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Header.Get("X-Agentd-Test") != "" {
			evil.Add(1)
		}
		if strings.HasPrefix(r.URL.Path, "/moved.git/") {
			http.Redirect(w, r, "/repo.git/"+strings.TrimPrefix(r.URL.Path, "/moved.git/")+"?"+r.URL.RawQuery, http.StatusMovedPermanently)
			return
		}
		backendHandler.ServeHTTP(w, r)
	}))
	if tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv, evil, hits
}

func TestCloneRepository(t *testing.T) {
	base, evil, _ := gitServer(t)
	c := newClone(t, Options{AllowPrivateNetworks: true})
	tests := []struct {
		name     string
		url      string
		path     string
		want     string // in the result, or in the error when wantErr
		wantErr  bool
		wantFile string
	}{
		{name: "clones_into_new_folder", url: base + "/repo.git", path: "src/repo",
			want: "Cloned " + base + "/repo.git into src/repo (latest commit only).\nTop level: README.md, cmd/", wantFile: "src/repo/README.md"},
		{name: "missing_repository", url: base + "/missing.git", path: "gone", want: "not found", wantErr: true},
		{name: "redirect_not_followed", url: base + "/moved.git", path: "moved", want: "returned error: 301", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := workspace(t)
			// A model could write these into the workspace, which is git's HOME.
			evilConfig := "[http]\n\textraHeader = X-Agentd-Test: from-workspace-config\n[core]\n\thooksPath = hooks\n"
			os.WriteFile(filepath.Join(ws, ".gitconfig"), []byte(evilConfig), 0o644)
			os.MkdirAll(filepath.Join(ws, ".config", "git"), 0o755)
			os.WriteFile(filepath.Join(ws, ".config", "git", "config"), []byte(evilConfig), 0o644)
			got, err := run(context.Background(), t, c, ws, cloneArgs(tt.url, tt.path), 60*time.Second)
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("got %q, %v; want an error saying %q", got, err, tt.want)
				}
				if _, serr := os.Lstat(filepath.Join(ws, tt.path)); serr == nil {
					t.Errorf("failed clone left %s behind", tt.path)
				}
			} else if err != nil || !strings.Contains(got, tt.want) {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
			if tt.wantFile != "" {
				if b, err := os.ReadFile(filepath.Join(ws, tt.wantFile)); err != nil || !strings.Contains(string(b), "hello from the test repo") {
					t.Errorf("cloned file: %q, %v", b, err)
				}
			}
			if n := evil.Load(); n != 0 {
				t.Errorf("git read the workspace's config: %d requests carried its header", n)
			}
		})
	}

	t.Run("private_refused_by_default", func(t *testing.T) {
		_, err := run(context.Background(), t, newClone(t, Options{}), workspace(t), cloneArgs(base+"/repo.git", "r"), time.Minute)
		if !errors.Is(err, ErrURLRefused) || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("error %v; want a loopback refusal", err)
		}
	})
}
