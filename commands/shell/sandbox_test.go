package shell

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestSandbox checks what a command under bwrap can and cannot reach. Each case that must
// fail inside the sandbox has an unsandboxed control where it works, so a case cannot pass
// because the test itself is broken.
func TestSandbox(t *testing.T) {
	bwrap := bwrapHere(t)
	if _, err := lookProgram("", "bash"); err != nil {
		t.Skip("bash (for /dev/tcp) is not installed")
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			conn.Close()
		}
	}()

	ro := t.TempDir()
	os.Chmod(ro, 0o755) // like /opt/toolchain: the sandbox's uid reads it
	os.WriteFile(filepath.Join(ro, "visible.txt"), []byte("visible-content\n"), 0o644)
	os.MkdirAll(filepath.Join(ro, "secret"), 0o755)
	os.WriteFile(filepath.Join(ro, "secret", "token"), []byte("secret-token\n"), 0o644)

	// Places a sandboxed write must not reach; removed afterwards in case one does.
	outside := t.TempDir()
	home, err := os.UserHomeDir()
	if err != nil {
		home = outside
	}
	marker := fmt.Sprintf(".agentd-sandbox-test-%d", os.Getpid())
	hostHome := filepath.Join(home, marker)
	hostTmp := filepath.Join(os.TempDir(), marker)
	hostSys := []string{filepath.Join("/usr", marker), filepath.Join("/etc", marker)} // writable by root only
	for _, p := range append([]string{hostHome, hostTmp}, hostSys...) {
		t.Cleanup(func() { os.Remove(p) })
	}

	connect := fmt.Sprintf("bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d' 2>/dev/null && echo connected || echo no-connection", ln.Addr().(*net.TCPAddr).Port)
	tests := []struct {
		name       string
		line       string
		want       []string
		notWant    []string
		absent     []string // host paths that must not exist afterwards
		present    []string // workspace files that must
		controlled bool     // the unsandboxed run must give the opposite
	}{
		{name: "network_off", line: connect, want: []string{"no-connection"}, controlled: true},
		{name: "only_loopback_interface", line: "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '", want: []string{"lo\n"},
			notWant: []string{"eth", "ens", "wl", "docker", "veth"}},
		{name: "workspace_writable", line: "mkdir -p sub && echo in > sub/inside.txt && cat sub/inside.txt", want: []string{"in\n", "exit status 0"},
			present: []string{"sub/inside.txt"}},
		{name: "outside_not_writable", line: fmt.Sprintf("echo x > %s/out.txt; echo x > %s; echo x > %s; echo done", outside, hostHome, hostTmp),
			want: []string{"done\n"}, absent: []string{filepath.Join(outside, "out.txt"), hostHome, hostTmp}, controlled: true},
		{name: "system_read_only", line: fmt.Sprintf("touch %s %s && echo wrote || echo refused", hostSys[0], hostSys[1]),
			want: []string{"refused\n"}, absent: hostSys},
		{name: "host_dirs_hidden", line: "for d in /root /var /run /sys /srv; do test -e $d && echo visible $d; done; ls -A /home | grep -vx sandbox | sed 's/^/visible home: /'; echo done",
			want: []string{"done\n"}, notWant: []string{"visible"}},
		{name: "read_only_paths_and_hidden", line: fmt.Sprintf("cat %[1]s/visible.txt; cat %[1]s/secret/token; echo x > %[1]s/new.txt", ro),
			want: []string{"visible-content\n"}, notWant: []string{"secret-token"}, absent: []string{filepath.Join(ro, "new.txt")}},
		{name: "setsid_escape_killed", line: "setsid sleep 1000.5151 & echo started", want: []string{"started\n"}},
	}
	o := Options{Sandbox: SandboxBwrap, Bwrap: bwrap, ReadOnlyPaths: []string{ro}, HidePaths: []string{filepath.Join(ro, "secret")}}
	c := mustShell(t, o)
	if d := c.Spec().Description; d != "Run a shell command, offline" {
		t.Errorf("description %q; want it to say the network is off", d)
	}
	if b, err := CheckSandbox(o); b != bwrap || err != nil {
		t.Errorf("CheckSandbox = %q, %v; want %q", b, err, bwrap)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := workspace(t)
			got, err := run(context.Background(), t, c, ws, shellLine(tt.line), 20*time.Second)
			if err != nil {
				t.Fatalf("error %v; output:\n%s", err, got)
			}
			checkResult(t, got, "", tt.want, tt.notWant)
			for _, p := range tt.absent {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("the sandbox wrote %s on the host", p)
				}
			}
			for _, p := range tt.present {
				if _, err := os.Stat(filepath.Join(ws, p)); err != nil {
					t.Errorf("workspace write lost: %v", err)
				}
			}
			if tt.controlled {
				ctl, _ := run(context.Background(), t, mustShell(t, Options{Sandbox: SandboxNone}), workspace(t), shellLine(tt.line), 20*time.Second)
				for _, w := range tt.want {
					if strings.Contains(ctl, w) && w != "done\n" {
						t.Errorf("unsandboxed control also gives %q, so the case proves nothing:\n%s", w, ctl)
					}
				}
				for _, p := range tt.absent {
					if _, err := os.Lstat(p); err != nil {
						t.Errorf("unsandboxed control did not write %s, so the case proves nothing", p)
					}
					os.Remove(p)
				}
			}
			waitGone(t, "1000.5151")
		})
	}
	if accepted.Load() != 1 {
		t.Errorf("the listener accepted %d connections; want 1, the unsandboxed control's", accepted.Load())
	}
}
