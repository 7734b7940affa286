package localapi

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/apitest"
	"github.com/agentd/agentd/internal/testutil"
)

func TestListen(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, sock string) // prepares what is at the path
		wantErr string                          // substring; "" = Listen succeeds
	}{
		{name: "fresh_path", setup: func(t *testing.T, sock string) {}},
		{name: "stale_socket_replaced", setup: func(t *testing.T, sock string) {
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			ln.(*net.UnixListener).SetUnlinkOnClose(false)
			ln.Close()
		}},
		{name: "live_socket_refused", setup: func(t *testing.T, sock string) {
			ln, err := Listen(sock)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
		}, wantErr: "another agentd is already listening on " + "SOCK"},
		{name: "regular_file_kept", setup: func(t *testing.T, sock string) {
			if err := os.WriteFile(sock, []byte("mine"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, wantErr: "exists and is not a socket"},
		{name: "dir_writable_by_others_refused", setup: func(t *testing.T, sock string) {
			if err := os.Chmod(filepath.Dir(sock), 0o777); err != nil {
				t.Fatal(err)
			}
		}, wantErr: "is writable by others"},
		{name: "path_too_long", setup: func(t *testing.T, sock string) {}, wantErr: "unix sockets allow at most 107"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sock := tempSocket(t)
			if tt.name == "path_too_long" {
				sock = filepath.Join(filepath.Dir(sock), strings.Repeat("x", 120))
			}
			tt.setup(t, sock)
			ln, err := Listen(sock)
			if tt.wantErr != "" {
				want := strings.ReplaceAll(tt.wantErr, "SOCK", sock)
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("Listen error = %v, want one containing %q", err, want)
				}
				if tt.name == "regular_file_kept" {
					if b, _ := os.ReadFile(sock); string(b) != "mine" {
						t.Error("Listen removed a file that was not a socket")
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			fi, err := os.Stat(sock)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 || fi.Mode().Type() != os.ModeSocket {
				t.Errorf("socket mode = %v, want a socket with 0600", fi.Mode())
			}
			c, err := net.Dial("unix", sock)
			if err != nil {
				t.Fatalf("dialing the new socket: %v", err)
			}
			c.Close()
		})
	}
}

func TestListenCreatesPrivateDir(t *testing.T) {
	sock := tempSocket(t)
	dir := filepath.Join(filepath.Dir(sock), "run")
	ln, err := Listen(filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("socket directory mode = %v, want 0700", fi.Mode().Perm())
	}
}

func TestPeerRefusal(t *testing.T) {
	agentCmd := func(pid int32) bool { return pid == 4242 }
	tests := []struct {
		name string
		hook func(int32) bool
		peer Peer
		want string
	}{
		{"same_user", agentCmd, Peer{PID: 100, UID: 1000}, ""},
		{"root_peer", agentCmd, Peer{PID: 100, UID: 0}, ""},
		{"other_user", agentCmd, Peer{PID: 100, UID: 1001}, "uid 1001 is not agentd's"},
		{"agent_command", agentCmd, Peer{PID: 4242, UID: 1000}, MsgAgentCommandPeer},
		{"agent_command_as_root", agentCmd, Peer{PID: 4242, UID: 0}, MsgAgentCommandPeer},
		{"no_hook_allows_all_pids", nil, Peer{PID: 4242, UID: 1000}, ""},
		{"no_hook_still_checks_uid", nil, Peer{PID: 4242, UID: 1001}, "other users are refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &PeerGuard{IsAgentCommand: tt.hook, UID: 1000}
			got := g.refusal(tt.peer)
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Fatalf("refusal = %q, want %q", got, tt.want)
			}
		})
	}
}

// guardedServer serves 204 on a unix socket behind GuardPeers with hook.
func guardedServer(t *testing.T, hook func(int32) bool) (sock string) {
	t.Helper()
	sock = filepath.Join(testutil.ShortTempDir(t), "s.sock")
	ln, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })}
	GuardPeers(srv, hook, nil)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return sock
}

func unixGet(t *testing.T, sock string) (int, string) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	defer c.CloseIdleConnections()
	resp, err := c.Get("http://agentd/v0/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestGuardPeersAsksAboutTheConnectingProcess: the hook gets this very process's pid
// (SO_PEERCRED), and a yes refuses with 403 and the daemon's JSON error.
func TestGuardPeersAsksAboutTheConnectingProcess(t *testing.T) {
	var mu sync.Mutex
	var asked []int32
	refuse := false
	sock := guardedServer(t, func(pid int32) bool {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, pid)
		return refuse
	})
	if code, body := unixGet(t, sock); code != 204 {
		t.Fatalf("an allowed peer got %d: %s", code, body)
	}
	mu.Lock()
	refuse = true
	mu.Unlock()
	code, body := unixGet(t, sock)
	var e struct{ Error string }
	if code != http.StatusForbidden || json.Unmarshal([]byte(body), &e) != nil || e.Error != MsgAgentCommandPeer {
		t.Fatalf("a refused peer got %d %s, want 403 {\"error\": %q}", code, body, MsgAgentCommandPeer)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 2 || asked[0] != int32(os.Getpid()) || asked[1] != int32(os.Getpid()) {
		t.Errorf("hook asked about %v, want this process (%d) once per connection", asked, os.Getpid())
	}
}

// TestGuardPeersRefusesAnotherUser connects as uid 65534 to a socket opened up for the
// test: the kernel's uid, not the socket's mode, refuses it.
func TestGuardPeersRefusesAnotherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to connect as another user")
	}
	python := "/usr/bin/python3" // not a shim under /root: the other user must be able to run it
	if _, err := os.Stat(python); err != nil {
		t.Skip("needs /usr/bin/python3 for the other user's client")
	}
	sock := guardedServer(t, nil)
	os.Chmod(filepath.Dir(sock), 0o755)
	os.Chmod(sock, 0o666)
	cmd := exec.Command(python, "-c", `import socket,sys
s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(b"GET /v0/status HTTP/1.0\r\nHost: agentd\r\n\r\n")
out=b""
while True:
    b=s.recv(4096)
    if not b: break
    out+=b
sys.stdout.write(out.decode())`, sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("client as uid 65534: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "HTTP/1.0 403") || !strings.Contains(string(out), "uid 65534 is not agentd's") {
		t.Fatalf("another user got:\n%s", out)
	}
	if code, body := unixGet(t, sock); code != 204 {
		t.Fatalf("agentd's own user got %d: %s", code, body)
	}
}

// TestGuardFailsClosed: a handler wrapped without GuardPeers on its server cannot tell
// who connected, and refuses.
func TestGuardFailsClosed(t *testing.T) {
	g := &PeerGuard{UID: uint32(os.Getuid())}
	h := g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))
	sock := filepath.Join(testutil.ShortTempDir(t), "s.sock")
	ln, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	defer srv.Close()
	if code, _ := unixGet(t, sock); code != http.StatusForbidden {
		t.Fatalf("unguarded connection got %d, want 403", code)
	}
}

// TestDecidersAreNamedByTheKernel: behind the peer guard, a decision or answer carries
// the socket peer's uid whatever the body said, and one that names nobody, or only a
// uid ("uid 0" from a shell without $USER), gets that user's login name.
func TestDecidersAreNamedByTheKernel(t *testing.T) {
	me := "uid " + strconv.Itoa(os.Getuid())
	if u, err := user.Current(); err == nil && u.Username != "" {
		me = u.Username
	}
	var (
		mu        sync.Mutex
		decisions []api.DecideRequest
		answers   []api.AnswerRequest
	)
	fk := &apitest.Fake{}
	apitest.Handle(fk, api.DecideRoute, func(_ context.Context, _ string, req api.DecideRequest) (*api.Decision, error) {
		mu.Lock()
		defer mu.Unlock()
		decisions = append(decisions, req)
		return &api.Decision{ProposalID: req.ProposalID, Kind: req.Kind, By: req.By, UID: req.UID}, nil
	})
	apitest.Handle(fk, api.AnswerRoute, func(_ context.Context, _ string, req api.AnswerRequest) (api.None, error) {
		mu.Lock()
		defer mu.Unlock()
		answers = append(answers, req)
		return api.None{}, nil
	})
	sock := filepath.Join(testutil.ShortTempDir(t), "s.sock")
	ln, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: newHandler(nil, fk.Endpoints(), fk.Streams(), nil)}
	GuardPeers(srv, nil, nil)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c := &api.Client{Socket: sock}
	ctx := context.Background()

	forged := uint32(4242)
	tests := []struct {
		name, by, want string
	}{
		{"nobody_named", "", me},
		{"only_a_uid", "uid 0", me},
		{"a_name_is_kept", "ana", "ana"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := api.DecideRoute.Do(ctx, c, "a1", api.DecideRequest{ProposalID: "p1", Kind: api.DecisionApprove, By: tt.by, UID: &forged}); err != nil {
				t.Fatal(err)
			}
			if err := api.AnswerRoute.Send(ctx, c, "a1", api.AnswerRequest{ProposalID: "p1", Text: "blue", By: tt.by, UID: &forged}); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			d, a := decisions[i], answers[i]
			for _, got := range []struct {
				by  string
				uid *uint32
			}{{d.By, d.UID}, {a.By, a.UID}} {
				if got.by != tt.want {
					t.Errorf("by = %q, want %q", got.by, tt.want)
				}
				if got.uid == nil || *got.uid != uint32(os.Getuid()) {
					t.Errorf("uid = %v, want the kernel's %d, not the body's forged %d", got.uid, os.Getuid(), forged)
				}
			}
		})
	}
}
