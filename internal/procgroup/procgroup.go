// Package procgroup starts a process as the leader of a process group of its own and
// ends the whole group, so a daemon or an Ollama server a test started leaves no child
// behind (a runner outlives its server otherwise). It imports nothing of the repository,
// so the test doubles (internal/ollamatest) and the end-to-end harness share it.
package procgroup

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Group is a process a test started as the leader of its own process group (a daemon,
// an Ollama server), so that ending it ends the children it left behind too.
type Group struct {
	Cmd  *exec.Cmd
	done chan struct{} // closed once Cmd has been waited for
}

// Start starts cmd in a process group of its own and waits for it in the background.
func Start(cmd *exec.Cmd) (*Group, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	g := &Group{Cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(g.done)
	}()
	return g, nil
}

// Done is closed once the leader has exited and been waited for.
func (g *Group) Done() <-chan struct{} { return g.done }

// Running reports whether the leader is still alive; a nil Group is not.
func (g *Group) Running() bool {
	if g == nil {
		return false
	}
	select {
	case <-g.done:
		return false
	default:
		return true
	}
}

// End sends sig to the whole group and waits up to grace for the leader to exit, then
// kills whatever is left of the group (a runner child may outlive its server) and waits
// for the leader. With SIGKILL nothing waits first. Ending a nil Group does nothing.
func (g *Group) End(sig syscall.Signal, grace time.Duration) {
	if g == nil {
		return
	}
	pgid := g.Cmd.Process.Pid // Setpgid: the group id is the leader's pid
	if sig != syscall.SIGKILL {
		_ = syscall.Kill(-pgid, sig)
		select {
		case <-g.done:
		case <-time.After(grace):
		}
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-g.done
}

// Environ is this process's environment without the variables whose "NAME=" starts
// with one of drop: what a child a test starts gets before its own settings.
func Environ(drop ...string) []string {
	var env []string
next:
	for _, kv := range os.Environ() {
		for _, p := range drop {
			if strings.HasPrefix(kv, p) {
				continue next
			}
		}
		env = append(env, kv)
	}
	return env
}
