// Package shell holds the commands that run programs: execute_shell, execute_python_file
// and clone_repository.
//
// They are the most dangerous things an agent can do, so they are not registered at init:
// the daemon builds them from its config with NewExecuteShell, NewExecutePythonFile and
// NewCloneRepository and adds them to an agent's command set only when the config enables
// them, and a person approves every run unless a policy allows it.
//
// Every program runs in the agent's workspace with a scrubbed environment, stdin from
// /dev/null, combined output capped, in its own process group that is killed as a whole when
// the command ends, times out or is cancelled. execute_shell and execute_python_file run
// inside a bubblewrap (bwrap) sandbox (see sandbox.go): no capabilities, an unprivileged
// uid, no network of the host unless granted, resource limits, the system read-only, the
// workspace the only writable place (its repositories' .git/hooks and .git/config and its
// helpers' agents/ folder excepted), and a pid namespace, so that even a process that left
// the group (setsid) dies with the command. With no working sandbox they are refused, unless
// the config says sandbox = "none"; unsandboxed, a setsid process outlives the command,
// unless the agent's box (Boxes, box.go) holds it: what is left in it is killed then.
// clone_repository needs the network, so it runs git unsandboxed but hardened: http(s) URLs
// only, no credentials, no hooks, no user or system git config, no proxy or GIT_*
// variables, and the network only through a forward proxy on 127.0.0.1 whose one way out
// is the network guard (commands/netguard), the same one read_webpage uses: public
// addresses only, checked in every numeric form before git starts and, for names, on the
// address the proxy connects to.
package shell

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Sandbox modes, the values of Options.Sandbox.
const (
	// SandboxAuto runs under bwrap when it is installed and works here; else the commands
	// are built but refuse to run, saying how to fix it, and CheckSandbox reports why.
	SandboxAuto = "auto"
	// SandboxBwrap requires bwrap: the constructors fail when it is missing or cannot
	// create its namespaces here.
	SandboxBwrap = "bwrap"
	// SandboxNone never sandboxes: the environment is still scrubbed and the process group
	// killed, but the programs run as agentd, with its network and files.
	SandboxNone = "none"
)

// DefaultOutputCap bounds the output a command keeps: under commands.Limits' default
// 16 KiB cap, with room for the exit status line that follows it.
const DefaultOutputCap = 12 << 10

// Errors the constructors return; test for them with errors.Is.
var (
	ErrNoSandbox = errors.New("sandbox unavailable")
	ErrNoPython  = errors.New("python3 not found")
	ErrNoGit     = errors.New("git not found")
)

// Options configure the commands; the zero value is usable (sandbox "auto", no extra env).
type Options struct {
	// Sandbox is "auto" (the default when empty), "bwrap" or "none"; see the Sandbox* constants.
	Sandbox string
	// Bwrap is the bubblewrap binary; empty looks "bwrap" up on the daemon's PATH.
	Bwrap string
	// PassEnv names variables of the daemon's environment passed on to the programs, such as
	// "GOPROXY" or "HTTPS_PROXY". PATH, HOME, LANG and TERM are fixed and cannot be passed.
	PassEnv []string
	// ReadOnlyPaths are extra absolute host paths made visible read-only inside the sandbox,
	// such as "/opt/toolchain". /usr, /bin, /lib* and /etc always are.
	ReadOnlyPaths []string
	// HidePaths are absolute host paths under those visible in the sandbox that are replaced
	// by an empty folder (or file) there, such as a config folder holding secrets under /etc.
	// /etc/agentd always is.
	HidePaths []string
	// OutputCap bounds the bytes of output kept; default DefaultOutputCap. Keep it under
	// commands.Limits.OutputCap so that the exit status line survives.
	OutputCap int
	// Python is the python3 binary; empty looks it up on the programs' PATH. One outside
	// /usr needs its folders in ReadOnlyPaths to be found in the sandbox.
	Python string
	// Git is the git binary; empty looks it up on the programs' PATH.
	Git string
	// Network gives sandboxed programs the internet through slirp4netns: a network
	// namespace of their own with a user-mode stack to the outside, never the host's, so
	// the host's loopback services and abstract unix sockets stay out of reach. Without
	// slirp4netns their commands refuse. Off, they have only a loopback of their own.
	// Unsandboxed (sandbox "none") programs have the host's network either way.
	Network bool
	// UID and GID are who the sandboxed programs run as when agentd runs as root; 0 means
	// DefaultUID and DefaultGID. Run as non-root, agentd's own uid is used, in a user
	// namespace of its own.
	UID, GID int
	// Limits bound each sandboxed program; zero fields take the defaults.
	Limits Limits
	// Boxes, when set, run each agent's programs in a cgroup of the agent's own (see
	// NewBoxes), sandboxed or not; the commands built from these options share it.
	Boxes *Boxes
	// AllowPrivateNetworks lets clone_repository reach loopback, private and link-local
	// addresses, for a git server on the local network. Off, a model-chosen URL can only
	// reach public addresses.
	AllowPrivateNetworks bool
}

// Limits are the resource limits of a sandboxed program, set inside its namespaces, and
// of an agent's box (Boxes).
type Limits struct {
	// Procs bounds the processes and threads of an agent's box (pids.max). Without one it
	// bounds the processes (RLIMIT_NPROC) of the sandbox's uid, which as root all the
	// sandboxes share (DefaultUID). Default 256.
	Procs int
	// Memory bounds, in bytes, the memory of an agent's box, every process of it
	// together, swap included; and each process's data segment, heap and private
	// mappings (RLIMIT_DATA). Default 2 GiB.
	Memory int64
	// CPUPercent caps the CPU time of an agent's box, in percent of one CPU (150: one
	// and a half); 0 is no cap beyond an equal share with the other agents' boxes.
	CPUPercent int
	// FileSize bounds a file a program writes (RLIMIT_FSIZE), in bytes; default 1 GiB.
	FileSize int64
	// OpenFiles bounds each process's open files (RLIMIT_NOFILE); default 1024.
	OpenFiles int
	// Tmp is the size of the sandbox's /tmp (and /dev/shm) in bytes; default 64 MiB.
	Tmp int64
}

// DefaultUID and DefaultGID are nobody and nogroup, whom the sandbox runs as under root.
const (
	DefaultUID = 65534
	DefaultGID = 65534
)

// withDefaults fills in the zero fields.
func (l Limits) withDefaults() Limits {
	if l.Procs <= 0 {
		l.Procs = 256
	}
	if l.Memory <= 0 {
		l.Memory = 2 << 30
	}
	if l.FileSize <= 0 {
		l.FileSize = 1 << 30
	}
	if l.OpenFiles <= 0 {
		l.OpenFiles = 1024
	}
	if l.Tmp <= 0 {
		l.Tmp = 64 << 20
	}
	return l
}

// programPath is the PATH every program gets, and where python3 and git are looked up.
const programPath = "/usr/local/bin:/usr/bin:/bin"

// fixedEnv are the variables agentd sets itself; PassEnv may not name them.
// The GIT_CONFIG_* variables (GIT_CONFIG_KEY_N…) are agentd's too, whatever their number.
var fixedEnv = []string{"PATH", "HOME", "LANG", "TERM", "GOENV", "LESSKEYIN", "LESSKEY",
	"PYTHONNOUSERSITE", "PYTHONSAFEPATH", "GIT_ALLOW_PROTOCOL", "GIT_CONFIG_NOSYSTEM"}

// homeConfigOff keeps programs from reading code-running settings from wherever they
// look besides HOME (an empty folder of the run's own): go's env file (GOFLAGS=-toolexec=…,
// as go env -w would), less's lesskey (an #env section setting LESSOPEN runs a command on
// every file) and python's user site-packages (a .pth file runs code at every start).
var homeConfigOff = []string{"GOENV=off", "LESSKEYIN=/dev/null", "LESSKEY=/dev/null", "PYTHONNOUSERSITE=1"}

// gitSafeEnv keeps git from obeying config the agent can write: no global config, and
// no bare repository found on its own (HEAD, objects/, refs/ and config written anywhere
// would be a repository whose config git obeys: `git fetch o` running
// remote.o.uploadpack). The run's repositories' .git/config and hooks are read-only
// (protected); a bounded run sets far more (boundedEnv).
var gitSafeEnv = gitConfigEnv([][2]string{{"safe.bareRepository", "explicit"}})

// gitConfigEnv gives git the settings kv in its command-line scope (GIT_CONFIG_COUNT),
// which no repository's config overrides, and no global config.
func gitConfigEnv(kv [][2]string) []string {
	env := []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_COUNT=" + strconv.Itoa(len(kv))}
	for i, p := range kv {
		n := strconv.Itoa(i)
		env = append(env, "GIT_CONFIG_KEY_"+n+"="+p[0], "GIT_CONFIG_VALUE_"+n+"="+p[1])
	}
	return env
}

// defaultHidden are host paths always hidden inside the sandbox: agentd's own config
// folder when it runs as a system service.
var defaultHidden = []string{"/etc/agentd"}

// Hidden are the host paths the sandbox of o hides from programs: agentd's own and
// o.HidePaths. What reads the read-only paths on an agent's behalf keeps to them too.
func (o Options) Hidden() []string {
	return append(append([]string{}, defaultHidden...), o.HidePaths...)
}

// check validates the options and fills in defaults.
func (o Options) check() (Options, error) {
	switch o.Sandbox {
	case "":
		o.Sandbox = SandboxAuto
	case SandboxAuto, SandboxBwrap, SandboxNone:
	default:
		return o, fmt.Errorf("shell: sandbox %q: want %q, %q or %q", o.Sandbox, SandboxAuto, SandboxBwrap, SandboxNone)
	}
	for _, name := range o.PassEnv {
		if name == "" || strings.ContainsAny(name, "=\x00") {
			return o, fmt.Errorf("shell: pass_env: %q is not a variable name", name)
		}
		if slices.Contains(fixedEnv, name) || strings.HasPrefix(name, "GIT_CONFIG") {
			return o, fmt.Errorf("shell: pass_env: %s is set by agentd and cannot be passed", name)
		}
	}
	for _, p := range append(append([]string{}, o.ReadOnlyPaths...), o.HidePaths...) {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p || p == "/" {
			return o, fmt.Errorf("shell: sandbox path %q: want a clean absolute path other than /", p)
		}
	}
	for _, p := range o.ReadOnlyPaths {
		if _, err := os.Stat(p); err != nil {
			return o, fmt.Errorf("shell: read-only path: %w", err)
		}
	}
	if o.OutputCap <= 0 {
		o.OutputCap = DefaultOutputCap
	}
	if o.UID < 0 || o.GID < 0 {
		return o, fmt.Errorf("shell: sandbox uid %d, gid %d: want unprivileged ids, not root", o.UID, o.GID)
	}
	if o.UID == 0 {
		o.UID = DefaultUID
	}
	if o.GID == 0 {
		o.GID = DefaultGID
	}
	o.Limits = o.Limits.withDefaults()
	return o, nil
}

// env is the scrubbed environment of a program with HOME home (never the workspace): the
// fixed variables, the PassEnv ones the daemon has, and the settings that keep programs
// from obeying config the agent wrote (gitSafeEnv, or for a bounded run boundedEnv and the
// protocols git may use, https only when it is online; and homeConfigOff).
func (o Options) env(home string, bounded, online bool) []string {
	env := []string{"PATH=" + programPath, "HOME=" + home, "LANG=C.UTF-8", "TERM=dumb"}
	for _, name := range o.PassEnv {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	switch {
	case bounded && online:
		env = append(append(env, boundedEnv...), "GIT_ALLOW_PROTOCOL=https")
	case bounded:
		env = append(append(env, boundedEnv...), "GIT_ALLOW_PROTOCOL=") // none
	default:
		env = append(env, gitSafeEnv...)
	}
	return append(env, homeConfigOff...)
}

// lookProgram finds name: configured, an absolute path that must be executable; else the
// first executable file called name on programPath.
func lookProgram(configured, name string) (string, error) {
	if configured != "" {
		if !filepath.IsAbs(configured) {
			return "", fmt.Errorf("%s: %q is not an absolute path", name, configured)
		}
		if !executable(configured) {
			return "", fmt.Errorf("%s: %s is not an executable file", name, configured)
		}
		return configured, nil
	}
	for _, dir := range filepath.SplitList(programPath) {
		if p := filepath.Join(dir, name); executable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s is not installed in %s", name, programPath)
}

func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
