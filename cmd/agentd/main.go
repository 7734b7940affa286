// Command agentd is the agent daemon: it hosts long-running autonomous agents on a local
// Ollama model and serves the local API that agentctl and the chat bots use.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	sd "github.com/coreos/go-systemd/v22/daemon"

	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/server"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

const usage = `agentd hosts autonomous agents on a local Ollama model.

Each agent repeats one cycle: think, propose exactly one command, wait for a person to
approve it (or for its policy to), run it, remember the result. Steer agents with agentctl.

Usage:
  agentd [--config FILE] [--state-dir DIR] [--socket PATH]
  agentd --check-config [--config FILE]

Flags:
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// SIGHUP reloads the config (systemctl reload agentd); caught from the start, since
	// its default action would end the daemon.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr, hup))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, reloads <-chan os.Signal) int {
	fs := flag.NewFlagSet("agentd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "config file (default "+config.DefaultConfigPath()+" if it exists)")
	stateDir := fs.String("state-dir", "", "state directory (default "+config.DefaultStateDir()+")")
	socket := fs.String("socket", "", "unix socket for the local API (default $AGENTD_SOCKET or under $XDG_RUNTIME_DIR)")
	check := fs.Bool("check-config", false, "check the config file, print every problem, and exit")
	showVersion := fs.Bool("version", false, "print the version and exit")
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
		fmt.Fprint(stderr, "\nSee agentd.example.toml for every configuration setting.\n")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agentd: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	if *showVersion {
		fmt.Fprintln(stdout, version)
		return 0
	}
	path := *cfgPath
	if path == "" {
		if _, err := os.Stat(config.DefaultConfigPath()); err == nil {
			path = config.DefaultConfigPath()
		}
	}
	// load reads the file and applies the flags over it: at start and on every reload.
	// warns are the last load's warnings: settings that do nothing as written.
	var warns []config.Problem
	load := func() (*config.Config, error) {
		// With the daemon's own checks (command and component names), so that
		// --check-config and a reload find what a start would refuse.
		cfg, w, err := config.LoadChecked(path, server.CheckConfig)
		warns = w
		if err != nil {
			return nil, err
		}
		if *stateDir != "" {
			cfg.StateDir = *stateDir
		}
		if *socket != "" {
			cfg.Socket = *socket
		}
		return cfg, nil
	}
	cfg, err := load()
	if err != nil {
		fmt.Fprintf(stderr, "agentd: %v\n", err)
		printWarnings(stderr, warns)
		return 1
	}
	if *check {
		where := path
		if where == "" {
			where = "(defaults, no config file)"
		}
		switch len(warns) {
		case 0:
			fmt.Fprintf(stdout, "%s: ok\n", where)
		case 1:
			fmt.Fprintf(stdout, "%s: ok, 1 warning\n", where)
		default:
			fmt.Fprintf(stdout, "%s: ok, %d warnings\n", where, len(warns))
		}
		printWarnings(stderr, warns)
		return 0
	}
	level := new(slog.LevelVar)
	level.Set(cfg.Log.SlogLevel())
	log := cfg.Log.LoggerWithLevel(stderr, level)
	for _, w := range warns {
		log.Warn("config: "+w.String(), "file", path)
	}
	if err := harden(); err != nil {
		log.Error("cannot harden agentd: processes of its uid may read its tokens from /proc, or its programs inherit its descriptors", "err", err)
	}
	// Under systemd (Type=notify) the unit is active once the socket accepts connections,
	// so units ordered after agentd can use agentctl at once. Outside systemd these are no-ops.
	notify := func(state string) { sd.SdNotify(false, state) }
	err = server.RunWith(ctx, cfg, log, server.Options{
		Version: version, Ready: func() { notify(sd.SdNotifyReady) },
		Load: load, ConfigPath: path, Reloads: reloads, LogLevel: level, Notify: notify,
	})
	sd.SdNotify(false, sd.SdNotifyStopping)
	if err != nil {
		log.Error("agentd failed", "err", err)
		return 1
	}
	return 0
}

// printWarnings lists the config's warnings, each at its line, after the result.
func printWarnings(w io.Writer, warns []config.Problem) {
	for _, p := range warns {
		fmt.Fprintf(w, "agentd: warning: %s\n", p)
	}
}
