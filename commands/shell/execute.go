package shell

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/agentd/agentd/commands"
)

// executor runs programs in an agent's workspace under the configured sandbox; the two
// execute commands share it.
type executor struct {
	spec commands.Spec
	opts Options
	box  *sandbox
}

// Spec implements commands.Command.
func (e *executor) Spec() commands.Spec { return e.spec }

func newExecutor(o Options) (*executor, error) {
	o, err := o.check()
	if err != nil {
		return nil, err
	}
	box, err := newSandbox(o)
	if err != nil {
		return nil, err
	}
	return &executor{opts: o, box: box}, nil
}

// description is the command's one prompt line; a sandboxed one tells the model up front
// that the network is off, rather than letting it learn from failed downloads, and one
// without a sandbox that it will be refused.
func (e *executor) description(what string) string {
	switch {
	case e.box.reason != "":
		return "Unavailable: no sandbox"
	case e.box.bwrap != "" && !e.opts.Network:
		return what + ", offline"
	}
	return what
}

// run runs argv in the agent's workspace and returns its output and exit status. A
// non-zero exit is a result, not an error: the model reads it like a person at a terminal.
func (e *executor) run(ctx context.Context, env commands.Env, argv []string) (string, error) {
	res, err := e.start(ctx, env, argv)
	if res == nil {
		return "", err
	}
	text := res.text()
	if err != nil {
		return text, fmt.Errorf("%s: killed with everything it started: %w", e.spec.Name, err)
	}
	return text, nil
}

// start runs argv in the agent's workspace under env.Profile and returns what it did. The
// result is nil when it was refused or could not start (the error says why); else a
// non-nil error is ctx's, which stopped it.
func (e *executor) start(ctx context.Context, env commands.Env, argv []string) (*runResult, error) {
	root, err := commands.OpenWorkspace(env.Workspace) // checked once: every bind is by descriptor from it
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.spec.Name, err)
	}
	defer root.Close()
	ws := root.Name()
	if e.box.reason != "" {
		return nil, e.box.refusal(e.spec.Name)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: not run: %w", e.spec.Name, err)
	}
	prof := env.Profile
	d, err := findDenied(root, prof.Paths)
	if err != nil {
		return nil, fmt.Errorf("%s: refused: %w", e.spec.Name, err)
	}
	v := view{denied: d, readOnly: prof.Bounded && !prof.Write, offline: prof.Bounded && !prof.Network || prof.Offline, at: env.SeenAt}
	home, dir := sandboxHome, ws
	if e.box.bwrap == "" {
		if prof.Bounded || !d.empty() {
			return nil, refuseUnconfined(e.spec.Name, prof, d)
		}
		if home, err = os.MkdirTemp("", "agentd-home-"); err != nil {
			return nil, fmt.Errorf("%s: cannot make an empty HOME: %w", e.spec.Name, err)
		}
		defer os.RemoveAll(home)
	} else {
		if prof.Bounded { // what prepare finds of the repositories holds until the run ends
			end, err := commands.GitRun(ctx, ws)
			if err != nil {
				return nil, fmt.Errorf("%s: not run: %w", e.spec.Name, err)
			}
			defer end()
		}
		if v.binds, err = e.box.prepare(root); err != nil {
			return nil, fmt.Errorf("%s: cannot prepare the workspace for the sandbox: %w", e.spec.Name, err)
		}
		if v.src, err = openSources(root, v.mounts(ws)); err != nil {
			return nil, fmt.Errorf("%s: not run: %w", e.spec.Name, err)
		}
		defer closeAll(v.src)
		if prof.Bounded { // git runs no program the repository names
			v.git = e.box.gitFor()
			v.git.held = v.heldConfigs(ws)
		}
		dir = "/" // bwrap binds the workspace by descriptor; its path is not walked again
	}
	cg, err := e.opts.Boxes.enter(env.AgentID) // the agent's cgroup
	if err != nil {
		return nil, fmt.Errorf("%s: not run: %w", e.spec.Name, err)
	}
	defer cg.leave()
	net, err := e.box.newNetRun(v)
	if err != nil {
		return nil, fmt.Errorf("%s: refused: %w", e.spec.Name, err)
	}
	extra, err := e.box.files(v)
	if err != nil {
		net.end()
		return nil, fmt.Errorf("%s: cannot start the sandbox: %w", e.spec.Name, err)
	}
	if net != nil {
		extra = append(extra, net.files...)
	}
	if testHookSandboxStarting != nil {
		testHookSandboxStarting()
	}
	res, err := runProgram(ctx, cg, dir, e.box.wrap(ws, v, argv), e.opts.env(home, prof.Bounded, e.box.online(v)), e.opts.OutputCap, net, extra...)
	if res == nil {
		return nil, fmt.Errorf("%s: cannot start %s: %w", e.spec.Name, argv[0], err)
	}
	return res, err
}

// testHookSandboxStarting, set by tests, runs after the workspace's checks and before
// bwrap starts, where a folder swapped for a link is the race the binds must win.
var testHookSandboxStarting func()

// executeShell is execute_shell: `/bin/sh -c LINE` in the workspace.
type executeShell struct{ *executor }

type executeShellArgs struct {
	CommandLine string `json:"command_line" desc:"sh command line, run in the workspace" max:"2000"`
}

// NewExecuteShell returns the execute_shell command. It fails on bad options and, in
// sandbox mode "bwrap", with ErrNoSandbox when bwrap is missing or cannot run here; in
// mode "auto" that command is returned but refuses to run, saying how to fix it.
func NewExecuteShell(o Options) (commands.Command, error) {
	e, err := newExecutor(o)
	if err != nil {
		return nil, err
	}
	e.spec = commands.Spec{
		Name:        "execute_shell",
		Description: e.description("Run a shell command"),
		Params:      commands.FromStruct(executeShellArgs{}),
		Class:       commands.ClassExecute,
		Subject:     "command_line",
	}
	return &executeShell{e}, nil
}

// Execute implements commands.Command.
func (c *executeShell) Execute(ctx context.Context, env commands.Env, raw json.RawMessage) (string, error) {
	var a executeShellArgs
	if err := commands.DecodeArgs(c.spec.Name, raw, &a); err != nil {
		return "", err
	}
	if strings.TrimSpace(a.CommandLine) == "" {
		return "", fmt.Errorf("execute_shell: empty command_line: give the shell command to run")
	}
	if strings.IndexByte(a.CommandLine, 0) >= 0 {
		return "", fmt.Errorf("execute_shell: command_line contains a NUL byte")
	}
	return c.run(ctx, env, []string{"/bin/sh", "-c", a.CommandLine})
}

// executePythonFile is execute_python_file: `python3 FILE ARGS...` for a file in the workspace.
type executePythonFile struct {
	*executor
	python string
}

type executePythonFileArgs struct {
	Path string   `json:"path" desc:"a .py file in the workspace" max:"256"`
	Args []string `json:"args,omitempty" desc:"arguments for the script" max:"20"`
}

// NewExecutePythonFile returns the execute_python_file command, under the same sandbox,
// environment and limits as execute_shell. It fails with ErrNoPython when python3 is not
// installed, so the daemon can leave the command out, and like NewExecuteShell otherwise.
func NewExecutePythonFile(o Options) (commands.Command, error) {
	python, err := lookProgram(o.Python, "python3")
	if err != nil {
		return nil, fmt.Errorf("shell: %w: %v", ErrNoPython, err)
	}
	e, err := newExecutor(o)
	if err != nil {
		return nil, err
	}
	e.spec = commands.Spec{
		Name:        "execute_python_file",
		Description: e.description("Run a Python file"),
		Params:      commands.FromStruct(executePythonFileArgs{}),
		Class:       commands.ClassExecute,
		Subject:     "path",
	}
	return &executePythonFile{executor: e, python: python}, nil
}

// Execute implements commands.Command.
func (c *executePythonFile) Execute(ctx context.Context, env commands.Env, raw json.RawMessage) (string, error) {
	var a executePythonFileArgs
	if err := commands.DecodeArgs(c.spec.Name, raw, &a); err != nil {
		return "", err
	}
	file, err := commands.ResolvePath(env.Workspace, a.Path)
	if err != nil {
		return "", fmt.Errorf("execute_python_file: %w", err)
	}
	if !strings.HasSuffix(file, ".py") {
		return "", fmt.Errorf("execute_python_file: %q is not a .py file", a.Path)
	}
	fi, err := os.Stat(file)
	if err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("execute_python_file: %q is not a file in the workspace; write it first", a.Path)
	}
	for _, arg := range a.Args {
		if strings.IndexByte(arg, 0) >= 0 {
			return "", fmt.Errorf("execute_python_file: an argument contains a NUL byte")
		}
	}
	if ws, err := commands.ResolvePath(env.Workspace, "."); err == nil {
		file = view{at: env.SeenAt}.inside(ws, file) // where the sandbox shows it
	}
	return c.run(ctx, env, append([]string{c.python, file}, a.Args...))
}
