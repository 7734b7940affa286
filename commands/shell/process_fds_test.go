package shell

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestNoInheritedDescriptors checks that a program gets only its stdin, stdout and stderr
// (and what the sandbox itself hands bwrap), never a descriptor the daemon holds open
// without close-on-exec: one it inherited from whatever started it (a shell script, a
// supervisor), or one a library opened so. Such a descriptor could be the database, a
// socket or a log, open for writing past every mount the sandbox makes.
func TestNoInheritedDescriptors(t *testing.T) {
	canary := filepath.Join(t.TempDir(), "inherited-canary")
	if err := os.WriteFile(canary, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open(canary, syscall.O_RDWR, 0) // no O_CLOEXEC, as an inherited one
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	high := 200
	if err := syscall.Dup2(fd, high); err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(high)
	tests := []struct {
		name string
		line string
	}{
		{name: "shell_fd_table", line: `ls -l /proc/$$/fd/`},
		{name: "read_by_number", line: `cat <&200; echo status=$?`},
		{name: "child_fd_table", line: `sh -c 'ls -l /proc/self/fd/'`},
	}
	for _, mode := range modes(t) {
		for _, tt := range tests {
			t.Run(mode+"/"+tt.name, func(t *testing.T) {
				got, err := run(context.Background(), t, mustShell(t, Options{Sandbox: mode}), workspace(t), shellLine(tt.line), 30*time.Second)
				if err != nil {
					t.Fatalf("error %v; output:\n%s", err, got)
				}
				for _, leak := range []string{"inherited-canary", "secret", " 200 ->", fmt.Sprintf(" %d ->", fd)} {
					if strings.Contains(got, leak) {
						t.Errorf("the program inherited the daemon's descriptor (%q):\n%s", leak, got)
					}
				}
			})
		}
	}
}
