// Package shelltest gives tests outside commands/shell a real execute_shell under
// bubblewrap (a schedule's check command, the wake engine's), or skips the test where
// bwrap cannot build a sandbox: the same skip, and the same AGENTD_REQUIRE_SANDBOX=1 that
// turns it into a failure, as commands/shell's own tests.
package shelltest

import (
	"os"
	"os/exec"
	"testing"

	"github.com/agentd/agentd/commands/shell"
)

// Sandboxed returns an execute_shell under bwrap as a shell.Checker, or skips the test.
func Sandboxed(t testing.TB) shell.Checker {
	t.Helper()
	path, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("bwrap is not installed (Debian package bubblewrap): check commands not tested")
	}
	c, err := shell.NewExecuteShell(shell.Options{Sandbox: shell.SandboxBwrap, Bwrap: path})
	if err != nil {
		if os.Getenv("AGENTD_REQUIRE_SANDBOX") == "1" {
			t.Fatalf("AGENTD_REQUIRE_SANDBOX=1 but %v", err)
		}
		t.Skipf("sandbox not available, check commands not tested: %v", err)
	}
	return c.(shell.Checker)
}
