package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/mcp"
	"github.com/agentd/agentd/commands/shell"
	"github.com/agentd/agentd/commands/web"
	"github.com/agentd/agentd/daemon/agent"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/internal/display"
)

// components builds the components config asks for beyond the supervisor's own: web,
// shell (its programs in boxes, nil without [shell]) and MCP. The bridge, when there is
// one, is started by the caller and closed on exit.
func components(cfg *config.Config, live *liveConfig, lc *llm.Client, boxes *shell.Boxes, log *slog.Logger) ([]commands.Component, *mcp.Bridge, error) {
	var out []commands.Component
	if cmds := webCommands(cfg, live, lc, boxes, log); len(cmds) > 0 {
		out = append(out, commands.CommandList{ID: "web", Cmds: cmds})
	}
	if cfg.Shell.Enabled {
		cmds, err := shellCommands(cfg, boxes, log)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, commands.CommandList{ID: "shell", Cmds: cmds})
	}
	var bridge *mcp.Bridge
	if len(cfg.MCP.Servers) > 0 {
		var servers []mcp.ServerConfig
		for _, s := range cfg.MCP.Servers {
			servers = append(servers, s.ServerConfig())
		}
		var err error
		if bridge, err = mcp.New(servers, log); err != nil {
			return nil, nil, err
		}
		out = append(out, commands.CommandFunc{ID: "mcp", F: func() []commands.Command { return available(bridge.Commands()) }})
	}
	return out, bridge, nil
}

// available leaves out the tools of servers that are down: the prompt offers only what
// can run now.
func available(cmds []commands.Command) []commands.Command {
	var out []commands.Command
	for _, c := range cmds {
		if a, ok := c.(interface{ Available() bool }); ok && !a.Available() {
			continue
		}
		out = append(out, c)
	}
	return out
}

func webCommands(cfg *config.Config, live *liveConfig, lc *llm.Client, boxes *shell.Boxes, log *slog.Logger) commands.Set {
	w := cfg.WebCommands
	if !w.Enabled {
		return nil
	}
	var cmds commands.Set
	var searchers web.Fallback
	if w.SearxngURL != "" {
		searchers = append(searchers, &web.SearxNG{BaseURL: w.SearxngURL})
	}
	if w.DuckDuckGo {
		searchers = append(searchers, &web.DuckDuckGoHTML{})
	}
	if len(searchers) > 0 {
		cmds = append(cmds, web.NewWebSearch(searchers, 0))
	} else {
		log.Info("web_search not offered: set [web_commands] searxng_url or duckduckgo = true")
	}
	cmds = append(cmds, web.NewReadWebpage(pageFetcher(cfg), askModel(live, lc)))
	if w.Clone {
		c, err := shell.NewCloneRepository(shell.Options{AllowPrivateNetworks: w.AllowPrivate, Boxes: boxes})
		switch {
		case errors.Is(err, shell.ErrNoGit):
			log.Info("clone_repository not offered: git is not installed")
		case err != nil:
			log.Warn("clone_repository not offered", "err", err)
		default:
			cmds = append(cmds, c)
		}
	}
	return cmds
}

// askModel answers read_webpage's question about a page with the agents' model, as the
// config in use now names it.
func askModel(live *liveConfig, lc *llm.Client) web.AskFunc {
	return func(ctx context.Context, question, text string) (string, error) {
		cfg := live.load()
		// The model's one num_ctx, as the agents' steps use it (another would reload the
		// model): the part of the page is cut to what that context holds.
		ld, err := lc.LoadFor(ctx, cfg.Ollama.Model)
		if err != nil {
			return "", err
		}
		numPredict := 400
		if ld.NumCtx > 0 {
			numPredict = min(numPredict, ld.NumCtx/4)
			if room := max(500, (ld.NumCtx-numPredict-100)*3-len(question)); len(text) > room {
				text = display.Cut(text, room, display.Ellipsis) + "\n[the rest did not fit the model's context]"
			}
		}
		res, err := lc.Chat(ctx, llm.ChatRequest{
			Model: cfg.Ollama.Model, NumCtx: ld.NumCtx, NumPredict: numPredict, KeepAlive: ld.KeepAlive,
			Messages: []llm.Message{
				{Role: "system", Content: "Answer from the text below only, in a few sentences. If the text does not say, answer: not found in this part."},
				{Role: "user", Content: "Text:\n" + text + "\n\nQuestion: " + question},
			},
		})
		if err != nil {
			return "", err
		}
		return res.Content, nil
	}
}

// shellOptions are the shell commands' options from the config, without their boxes.
func shellOptions(cfg *config.Config) shell.Options {
	return shell.Options{Sandbox: cfg.Shell.Sandbox, PassEnv: cfg.Shell.Env, Network: cfg.Shell.Network,
		UID: cfg.Shell.UID, GID: cfg.Shell.GID, OutputCap: max(1024, cfg.Agent.OutputCap-1024),
		HidePaths: tokenFiles(cfg), Limits: shellLimits(cfg)}
}

// shellLimits are [shell]'s bounds on each agent's programs.
func shellLimits(cfg *config.Config) shell.Limits {
	return shell.Limits{Procs: cfg.Shell.Procs, Memory: int64(cfg.Shell.Memory), CPUPercent: cfg.Shell.CPUPercent}
}

// newBoxes makes the cgroups agents' programs run in when [shell] is on (nil when it is
// off), and says once in the log what bounds each agent, or what is weaker without them.
func newBoxes(cfg *config.Config, log *slog.Logger) *shell.Boxes {
	if !cfg.Shell.Enabled {
		return nil
	}
	b := shell.NewBoxes(shellLimits(cfg))
	if line, full := b.Describe(); full {
		log.Info("each agent's programs are bounded together", "limits", line)
	} else {
		log.Warn("agents' programs are not bounded per agent", "limits", line)
	}
	return b
}

// tokenFiles are the secret files the config names, hidden inside the sandbox wherever
// they live (/etc/agentd always is): a token file elsewhere under /etc stays out of reach.
func tokenFiles(cfg *config.Config) []string {
	var out []string
	for _, s := range tokenSources(cfg) {
		if f := filepath.Clean(s.file); filepath.IsAbs(f) && f != "/" {
			out = append(out, f)
		}
	}
	return out
}

// sandboxFix is what a person does when no sandbox works here.
const sandboxFix = "apt-get install bubblewrap (as non-root, also allow unprivileged user namespaces: " +
	"sysctl kernel.apparmor_restrict_unprivileged_userns=0 where AppArmor restricts them), " +
	"or set [shell] sandbox = \"none\" to run programs unconfined knowingly"

func shellCommands(cfg *config.Config, boxes *shell.Boxes, log *slog.Logger) (commands.Set, error) {
	opt := shellOptions(cfg)
	opt.Boxes = boxes
	bwrap, err := shell.CheckSandbox(opt)
	switch line, _ := shell.DescribeSandbox(opt); {
	case err != nil && errors.Is(err, shell.ErrNoSandbox) && cfg.Shell.Sandbox == shell.SandboxAuto:
		log.Error("execute_shell and execute_python_file are refused: no sandbox works here", "reason", err, "fix", sandboxFix)
	case err != nil:
	case bwrap == "":
		log.Warn("execute_shell runs unconfined", "sandbox", line)
	default:
		log.Info("execute_shell runs sandboxed", "sandbox", line)
	}
	sh, err := shell.NewExecuteShell(opt)
	if err != nil {
		return nil, err
	}
	cmds := commands.Set{sh}
	if cfg.Shell.Python {
		py, err := shell.NewExecutePythonFile(opt)
		switch {
		case errors.Is(err, shell.ErrNoPython):
			log.Info("execute_python_file not offered: python3 is not installed")
		case err != nil:
			return nil, err
		default:
			cmds = append(cmds, py)
		}
	}
	return cmds, nil
}

// shellStatus is the shell commands' sandbox and limits as agentctl status shows them.
func shellStatus(cfg *config.Config, boxes *shell.Boxes) api.ShellStatus {
	if !cfg.Shell.Enabled {
		return api.ShellStatus{}
	}
	line, ok := shell.DescribeSandbox(shellOptions(cfg))
	limits, perAgent := boxes.Describe()
	return api.ShellStatus{Enabled: true, Sandbox: line, Confined: ok, Limits: limits, LimitsPerAgent: perAgent}
}

// sandboxCheck is doctor's check of the sandbox execute_shell runs in: a failure when
// the commands are refused (all, or those granted the network), a warning when they run unconfined.
func sandboxCheck(cfg *config.Config) api.Check {
	line, ok := shell.DescribeSandbox(shellOptions(cfg))
	switch {
	case ok && shell.CheckNetwork(shellOptions(cfg)) != nil: // the line says why
		return api.Check{Name: "shell", Status: api.CheckFail, Detail: "execute_shell runs in " + line,
			Fix: "apt-get install slirp4netns, or set [shell] network = false"}
	case ok:
		return api.Check{Name: "shell", Status: api.CheckOK, Detail: "execute_shell runs in " + line}
	case cfg.Shell.Sandbox == shell.SandboxNone:
		return api.Check{Name: "shell", Status: api.CheckWarn, Detail: "execute_shell runs " + line,
			Fix: "apt-get install bubblewrap and set [shell] sandbox = \"auto\" to confine it"}
	}
	return api.Check{Name: "shell", Status: api.CheckFail, Detail: "execute_shell and execute_python_file are " + line, Fix: sandboxFix}
}

// limitsCheck is doctor's check of how agents' programs are bounded together: a warning,
// saying what is weaker and the fix, without a cgroup per agent.
func limitsCheck(boxes *shell.Boxes) api.Check {
	line, full := boxes.Describe()
	if full {
		return api.Check{Name: "limits", Status: api.CheckOK, Detail: line}
	}
	return api.Check{Name: "limits", Status: api.CheckWarn, Detail: line, Fix: shell.BoxesFix}
}

// healthChecks are agentctl doctor's checks of the components built here.
func healthChecks(cfg *config.Config, bridge *mcp.Bridge, boxes *shell.Boxes) []agent.HealthCheck {
	var out []agent.HealthCheck
	if cfg.Shell.Enabled {
		out = append(out, func(context.Context) []api.Check {
			return []api.Check{sandboxCheck(cfg), limitsCheck(boxes)}
		})
	}
	if tc := tokenFileCheck(cfg); tc != nil {
		out = append(out, tc)
	}
	if bridge != nil {
		out = append(out, func(context.Context) []api.Check {
			var checks []api.Check
			for _, st := range bridge.Status() {
				c := api.Check{Name: "mcp " + st.Name, Status: api.CheckOK, Detail: fmt.Sprintf("up, %d tools", st.Tools)}
				if !st.Up {
					c.Status, c.Detail = api.CheckFail, "down: "+st.Error
					c.Fix = "check the server's command or url in [[mcp.servers]]; agentd restarts it with backoff and logs why it stopped"
				}
				checks = append(checks, c)
			}
			return checks
		})
	}
	return out
}
