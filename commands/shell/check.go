package shell

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentd/agentd/commands"
)

// CheckResult is what a check line did (ExecuteShell's Check).
type CheckResult struct {
	// Output is the first OutputCap bytes of what it wrote, stdout and stderr as written,
	// not ending on half a character; Bytes counts all it wrote.
	Output string
	Bytes  int64
	// Exit is its exit status, or -1 when it did not exit by itself.
	Exit int
	// Stopped says why it was killed before it exited, for a person: its time ran out,
	// it flooded its output, its box ran out of memory. "" when it exited by itself.
	Stopped string
	// Note is what the agent's box saw meanwhile (forks refused, memory run out), or "".
	Note string
}

// Checker runs a shell line to decide something, as execute_shell runs it: a schedule's
// check command. execute_shell (NewExecuteShell) is one.
type Checker interface {
	Check(ctx context.Context, env commands.Env, line string) (*CheckResult, error)
}

var _ Checker = (*executeShell)(nil)

// Check runs line with /bin/sh -c in env's workspace exactly as execute_shell would (the
// same sandbox, environment, limits and agent box, under env.Profile) and returns its exit
// status beside its output. The error is a refusal, or a failure to start, naming the fix;
// a program that ran is a result, whatever its status, and ctx ending stops it with
// everything it started (Stopped says so).
func (c *executeShell) Check(ctx context.Context, env commands.Env, line string) (*CheckResult, error) {
	if strings.TrimSpace(line) == "" {
		return nil, errors.New("execute_shell: empty command line: give the shell command to run")
	}
	if strings.IndexByte(line, 0) >= 0 {
		return nil, errors.New("execute_shell: the command line contains a NUL byte")
	}
	res, err := c.start(ctx, env, []string{"/bin/sh", "-c", line})
	if res == nil {
		return nil, err
	}
	out, _ := res.kept()
	r := &CheckResult{Output: string(out), Bytes: res.total, Exit: -1}
	if res.state != nil && res.state.Exited() {
		r.Exit = res.state.ExitCode()
	}
	r.Note = res.box
	switch {
	case err != nil && errors.Is(err, context.DeadlineExceeded):
		r.Stopped = "its time ran out"
	case err != nil:
		r.Stopped = "it was cancelled: " + err.Error()
	case res.flooded:
		r.Stopped = fmt.Sprintf("it wrote more than %d bytes of output", res.total)
	case r.Exit < 0 && res.box != "":
		r.Stopped = res.box
	case r.Exit < 0 && res.state != nil:
		r.Stopped = res.state.String()
	case r.Exit < 0:
		r.Stopped = "it did not exit"
	}
	if r.Stopped != "" {
		r.Exit = -1
	}
	return r, nil
}
