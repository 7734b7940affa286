package localapi

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
