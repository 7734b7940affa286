package shell

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/netguard"
	"github.com/agentd/agentd/commands/permission"
)

// preview says where and how the executor would run programs: the workspace it starts
// in, and the sandbox and network of the options this command was built with.
func (e *executor) preview(env commands.Env) *api.Preview {
	pv := &api.Preview{Kind: api.PreviewProgram, Network: "host (unsandboxed: agentd's own network)"}
	if ws, err := commands.ResolvePath(env.Workspace, "."); err == nil {
		pv.Dir = ws
	} else {
		pv.Note = "it will be refused: " + err.Error()
	}
	switch {
	case e.box.reason != "":
		pv.Sandbox = "refused: no sandbox works here (" + e.box.reason + ")"
		pv.Network = "none (it will not run)"
	case e.box.bwrap == "":
		pv.Sandbox = `none: runs as agentd ([shell] sandbox = "none")`
	default:
		pv.Sandbox = e.box.describe()
		pv.Network = "none (a namespace of its own)"
		if e.opts.Network {
			pv.Network = "its own through slirp4netns (the internet; not the host's loopback services)"
		}
	}
	return pv
}

// Preview implements commands.Previewer: the programs and arguments of the line, read by
// the parser the permission rules use, and where and how they would run.
func (c *executeShell) Preview(_ context.Context, env commands.Env, raw json.RawMessage) *api.Preview {
	var a executeShellArgs
	if json.Unmarshal(raw, &a) != nil {
		return nil
	}
	pv := c.preview(env)
	cmds, problem := permission.ParseShell(a.CommandLine)
	if problem != "" {
		pv.Programs = [][]string{{"/bin/sh", "-c", a.CommandLine}}
		pv.Note = join(pv.Note, "not plain commands: "+problem+"; read the line itself")
		return pv
	}
	pv.Programs = cmds
	if rs := permission.CodeRunners(a.CommandLine); len(rs) > 0 {
		pv.Note = join(pv.Note, strings.Join(rs, ", ")+" runs code given in its arguments: read them too")
	}
	return pv
}

// Preview implements commands.Previewer: python3 with the script and its arguments.
func (c *executePythonFile) Preview(_ context.Context, env commands.Env, raw json.RawMessage) *api.Preview {
	var a executePythonFileArgs
	if json.Unmarshal(raw, &a) != nil {
		return nil
	}
	pv := c.preview(env)
	pv.Programs = [][]string{append([]string{c.python, a.Path}, a.Args...)}
	if _, err := commands.ResolvePath(env.Workspace, a.Path); err != nil {
		pv.Note = join(pv.Note, "it will be refused: "+err.Error())
	}
	return pv
}

// Preview implements commands.Previewer: the host git would reach, as the network guard
// reads it (user info dropped, an international name in ASCII, a numeric host as its
// address), and whether the guard would refuse it.
func (c *cloneRepository) Preview(_ context.Context, _ commands.Env, raw json.RawMessage) *api.Preview {
	var a cloneRepositoryArgs
	if json.Unmarshal(raw, &a) != nil {
		return nil
	}
	pv := &api.Preview{Kind: api.PreviewHost}
	u, perr := url.Parse(a.URL)
	if perr != nil || u.Host == "" {
		pv.Note = "it will be refused: the url is not an http(s) URL with a host"
		return pv
	}
	pv.Host = netguard.DescribeHost(u)
	if _, err := checkRepoURL(a.URL); err != nil {
		pv.Note = "it will be refused: " + err.Error()
	} else if err := c.checkHost(u); err != nil {
		pv.Note = "it will be refused: " + err.Error()
	}
	return pv
}

// EffectPreview implements commands.EffectPreviewer: a command runs ahead only in a
// sandbox, and only when it has no network to lose.
func (e *executor) EffectPreview() string {
	switch {
	case e.box.reason != "":
		return "no sandbox works here, so it does not run at all"
	case e.box.bwrap == "":
		return `it would run unsandboxed ([shell] sandbox = "none"), so not on a copy either`
	case e.opts.Network:
		return "this agent's commands have the network, which a run ahead takes away"
	}
	return ""
}

// RunAheadMemory implements commands.EffectPreviewer: the box's memory limit.
func (e *executor) RunAheadMemory() int64 { return e.opts.Limits.Memory }

// join joins two notes with "; ", either may be empty.
func join(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}
