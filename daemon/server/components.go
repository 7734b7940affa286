package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/mcp"
	"github.com/agentd/agentd/commands/shell"
	"github.com/agentd/agentd/commands/web"
	"github.com/agentd/agentd/daemon/agent"
	"github.com/agentd/agentd/daemon/client"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/llm"
)

// components builds the components config asks for beyond the supervisor's own: web,
// shell and MCP. The bridge, when there is one, is started by the caller and closed on exit.
func components(cfg *config.Config, live *liveConfig, lc *llm.Client, log *slog.Logger) ([]commands.Component, *mcp.Bridge, error) {
	var out []commands.Component
	if cmds := webCommands(cfg, live, lc, log); len(cmds) > 0 {
		out = append(out, commands.CommandList{ID: "web", Cmds: cmds})
	}
	if cfg.Shell.Enabled {
		cmds, err := shellCommands(cfg, log)
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

func webCommands(cfg *config.Config, live *liveConfig, lc *llm.Client, log *slog.Logger) commands.Set {
	w := cfg.Web
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
		log.Info("web_search not offered: set [web] searxng_url or duckduckgo = true")
	}
	f := &web.Fetcher{MaxBytes: int64(w.MaxPageBytes), Timeout: w.Timeout.Duration, AllowPrivate: w.AllowPrivate}
	cmds = append(cmds, web.NewReadWebpage(f, askModel(live, lc)))
	if w.Clone {
		c, err := shell.NewCloneRepository(shell.Options{AllowPrivateNetworks: w.AllowPrivate})
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
		res, err := lc.Chat(ctx, llm.ChatRequest{
			Model: cfg.Ollama.Model, NumCtx: min(cfg.Ollama.MaxContext, 8192), NumPredict: 400,
			KeepAlive: cfg.Ollama.KeepAlive.Ptr(),
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

func shellCommands(cfg *config.Config, log *slog.Logger) (commands.Set, error) {
	opt := shell.Options{Sandbox: cfg.Shell.Sandbox, PassEnv: cfg.Shell.Env, OutputCap: max(1024, cfg.Agent.OutputCap-1024)}
	if bwrap, err := shell.CheckSandbox(opt); err != nil {
		log.Warn("execute_shell runs without a sandbox", "reason", err)
	} else if bwrap != "" {
		log.Info("execute_shell runs inside bubblewrap", "bwrap", bwrap)
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

// healthChecks are agentctl doctor's checks of the components built here.
func healthChecks(cfg *config.Config, bridge *mcp.Bridge) []agent.HealthCheck {
	var out []agent.HealthCheck
	if cfg.Shell.Enabled {
		out = append(out, func(context.Context) []client.Check {
			opt := shell.Options{Sandbox: cfg.Shell.Sandbox, PassEnv: cfg.Shell.Env}
			bwrap, err := shell.CheckSandbox(opt)
			switch {
			case err != nil && cfg.Shell.Sandbox == "none":
				return nil
			case err != nil:
				return []client.Check{{Name: "shell", Status: client.CheckWarn, Detail: "execute_shell runs without a sandbox: " + err.Error(),
					Fix: "sudo apt install bubblewrap (and allow unprivileged user namespaces), or set [shell] sandbox = \"none\" to accept it"}}
			case bwrap == "":
				return []client.Check{{Name: "shell", Status: client.CheckWarn, Detail: "execute_shell runs without a sandbox ([shell] sandbox = \"none\")"}}
			}
			return []client.Check{{Name: "shell", Status: client.CheckOK, Detail: "execute_shell runs inside bubblewrap (" + bwrap + ")"}}
		})
	}
	if bridge != nil {
		out = append(out, func(context.Context) []client.Check {
			var checks []client.Check
			for _, st := range bridge.Status() {
				c := client.Check{Name: "mcp " + st.Name, Status: client.CheckOK, Detail: fmt.Sprintf("up, %d tools", st.Tools)}
				if !st.Up {
					c.Status, c.Detail = client.CheckFail, "down: "+st.Error
					c.Fix = "check the server's command or url in [[mcp.servers]]; agentd restarts it with backoff and logs why it stopped"
				}
				checks = append(checks, c)
			}
			return checks
		})
	}
	return out
}
