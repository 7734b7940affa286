// Command agentd is the agent daemon: it hosts long-running autonomous agents on a local
// Ollama model and serves the local API that agentctl and the chat bots use.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	sd "github.com/coreos/go-systemd/v22/daemon"

	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/server"
	"github.com/agentd/agentd/internal/display"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// exitConfig is agentd's status when its config or a secret it cannot run without is
// wrong (EX_CONFIG, sysexits.h): the units' RestartPreventExitStatus names it, so systemd
// does not restart agentd every 2 s over a file only a person can fix.
const exitConfig = 78

const usage = `agentd hosts autonomous agents on a local Ollama model.

Each agent repeats one cycle: think, propose exactly one command, wait for a person to
approve it (or for its policy to), run it, remember the result. Steer agents with agentctl.

Usage:
  agentd [--config FILE] [--state-dir DIR] [--socket PATH]
  agentd --check-config [--config FILE]

--check-config reads the config as a start would, and also checks every secret it needs
(chat bot tokens, the HTTP token): each problem is listed with its line and its fix. A
start with a bad config or HTTP token exits with status 78, which the systemd units do
not restart; an enabled bot whose token is missing does not start, and the rest runs.

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
	checkOnly := fs.Bool("check-config", false, "check the config file and the secrets it names, print every problem, and exit")
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
	check := server.CheckConfig
	if *checkOnly {
		// --check-config also finds every secret the config needs and agentd cannot
		// read: a start would run without those bots (or refuse the HTTP listener).
		getenv := serviceEnv(path, stderr)
		check = func(c *config.Config) []config.Problem {
			return append(server.CheckConfig(c), server.CheckSecrets(c, getenv)...)
		}
	}
	load := func() (*config.Config, error) {
		// With the daemon's own checks (command and component names), so that
		// --check-config and a reload find what a start would refuse.
		cfg, w, err := config.Load(path, check)
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
		if *checkOnly {
			return 1
		}
		return exitConfig
	}
	if *checkOnly {
		return reportCheck(stdout, stderr, path, warns)
	}
	return serve(ctx, cfg, stderr, path, warns, server.Options{Load: load, ConfigPath: path, Reloads: reloads})
}

// reportCheck says what --check-config found in a config that loads: ok, with its warnings.
func reportCheck(stdout, stderr io.Writer, path string, warns []config.Problem) int {
	where := cmp.Or(path, "(defaults, no config file)")
	if len(warns) == 0 {
		fmt.Fprintf(stdout, "%s: ok\n", where)
	} else {
		fmt.Fprintf(stdout, "%s: ok, %s\n", where, display.Count(len(warns), "warning", "warnings"))
	}
	printWarnings(stderr, warns)
	return 0
}

// serve runs the daemon with cfg, loaded from path with warns, until ctx ends; opt
// says how to load the config again. It returns the exit code.
func serve(ctx context.Context, cfg *config.Config, stderr io.Writer, path string, warns []config.Problem, opt server.Options) int {
	level := new(slog.LevelVar)
	level.Set(cfg.Log.SlogLevel())
	log := cfg.Log.Logger(stderr, level)
	for _, w := range warns {
		log.Warn("config: "+w.String(), "file", path)
	}
	if err := harden(); err != nil {
		log.Error("cannot harden agentd: processes of its uid may read its tokens from /proc, or its programs inherit its descriptors", "err", err)
	}
	// Under systemd (Type=notify) the unit is active once the socket accepts connections,
	// so units ordered after agentd can use agentctl at once. Outside systemd these are no-ops.
	notify := func(state string) { sd.SdNotify(false, state) }
	opt.Version, opt.Ready, opt.LogLevel, opt.Notify = version, func() { notify(sd.SdNotifyReady) }, level, notify
	err := server.Run(ctx, cfg, log, opt)
	sd.SdNotify(false, sd.SdNotifyStopping)
	if err != nil {
		log.Error("agentd failed", "err", err)
		if cfgErr := (*config.Error)(nil); errors.As(err, &cfgErr) {
			return exitConfig
		}
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

// serviceEnv is the environment agentd would start with as a service: this one, and the
// secrets file beside the config (agentd.env, the units' EnvironmentFile), so that
// --check-config, run from a shell, finds the tokens the service will have. A secrets
// file that exists but cannot be read is said on w.
func serviceEnv(cfgPath string, w io.Writer) func(string) (string, bool) {
	if cfgPath == "" {
		cfgPath = config.DefaultConfigPath()
	}
	file := filepath.Join(filepath.Dir(cfgPath), "agentd.env")
	vars := map[string]string{}
	b, err := os.ReadFile(file)
	switch {
	case err == nil:
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || line[0] == '#' || line[0] == ';' {
				continue
			}
			if k, v, ok := strings.Cut(line, "="); ok {
				vars[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"'`)
			}
		}
	case !errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(w, "agentd: warning: %v: the secrets it gives the service are not checked (run --check-config as the service's user)\n", err)
	}
	return func(k string) (string, bool) {
		if v, ok := os.LookupEnv(k); ok && v != "" {
			return v, true
		}
		v, ok := vars[k]
		return v, ok
	}
}
