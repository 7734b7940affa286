package shell

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// sandbox is how a program is confined: under bwrap, or not at all when bwrap is "".
type sandbox struct {
	bwrap    string
	reason   string // why there is no sandbox in mode auto; "" when bwrap is set or mode is none
	readOnly []string
	hide     []string
}

// newSandbox picks the sandbox o asks for, probing bwrap once per binary.
func newSandbox(o Options) (*sandbox, error) {
	s := &sandbox{readOnly: o.ReadOnlyPaths, hide: append(append([]string{}, defaultHidden...), o.HidePaths...)}
	if o.Sandbox == SandboxNone {
		return s, nil
	}
	bwrap, err := findBwrap(o.Bwrap)
	if err == nil {
		err = probeBwrap(bwrap)
	}
	switch {
	case err == nil:
		s.bwrap = bwrap
	case o.Sandbox == SandboxBwrap:
		return nil, fmt.Errorf("shell: %w: %v", ErrNoSandbox, err)
	default:
		s.reason = err.Error()
	}
	return s, nil
}

// CheckSandbox reports the bwrap binary the commands built from o run their programs
// under. With "" it returns nil in mode "none" and, in mode "auto", the reason they will
// run unsandboxed, for the daemon to log at startup; in mode "bwrap" that is an error
// wrapping ErrNoSandbox, the one the constructors return.
func CheckSandbox(o Options) (bwrap string, err error) {
	o, err = o.check()
	if err != nil {
		return "", err
	}
	s, err := newSandbox(o)
	if err != nil {
		return "", err
	}
	if s.reason != "" {
		return "", fmt.Errorf("shell: %w: %s", ErrNoSandbox, s.reason)
	}
	return s.bwrap, nil
}

// findBwrap returns the configured binary, or bwrap from the daemon's PATH.
func findBwrap(configured string) (string, error) {
	if configured != "" {
		if !executable(configured) {
			return "", fmt.Errorf("bwrap %s is not an executable file", configured)
		}
		return configured, nil
	}
	p, err := exec.LookPath("bwrap")
	if err != nil {
		return "", errors.New("bwrap is not installed (Debian package bubblewrap)")
	}
	return p, nil
}

// probes caches, per bwrap binary, whether it can build a sandbox here: that depends on
// the kernel and the container the daemon runs in, which do not change while it runs.
var probes sync.Map // string → *probe

type probe struct {
	once sync.Once
	err  error
}

func probeBwrap(bwrap string) error {
	v, _ := probes.LoadOrStore(bwrap, &probe{})
	p := v.(*probe)
	p.once.Do(func() { p.err = runProbe(bwrap) })
	return p.err
}

// runProbe runs `true` in the sandbox the commands use. A kernel or container without
// unprivileged user namespaces fails here, and bwrap's stderr says why.
func runProbe(bwrap string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bwrap, append(bwrapArgs("", nil, defaultHidden), "true")...)
	cmd.Env = []string{"PATH=" + programPath}
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("%s cannot create a sandbox here: %s (are user namespaces disabled, as in many containers?)", bwrap, msg)
	}
	return nil
}

// wrap returns argv to run in workspace under the sandbox.
func (s *sandbox) wrap(workspace string, argv []string) []string {
	if s.bwrap == "" {
		return argv
	}
	a := append([]string{s.bwrap}, bwrapArgs(workspace, s.readOnly, s.hide)...)
	return append(a, argv...)
}

// bwrapArgs builds the sandbox: every namespace unshared (so no network: only a loopback
// of its own), killed with its parent, a new session (no terminal to inject input into),
// the system read-only, fresh /proc, /dev and /tmp, the workspace read-write at its own
// path as the only other writable place, and nothing else of the host: no /home, /root,
// /run, /var or /sys. An empty workspace leaves it out (the probe).
func bwrapArgs(workspace string, readOnly, hide []string) []string {
	a := []string{"--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr"}
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&fs.ModeSymlink != 0: // merged /usr: /bin -> usr/bin
			if target, err := os.Readlink(d); err == nil {
				a = append(a, "--symlink", target, d)
			}
		case fi.IsDir():
			a = append(a, "--ro-bind", d, d)
		}
	}
	a = append(a, "--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp")
	for _, p := range readOnly {
		a = append(a, "--ro-bind", p, p)
	}
	if workspace != "" {
		a = append(a, "--bind", workspace, workspace, "--chdir", workspace)
	} else {
		a = append(a, "--chdir", "/")
	}
	// Last, so that nothing bound above uncovers them.
	for _, h := range hide {
		fi, err := os.Stat(h)
		switch {
		case err != nil:
		case fi.IsDir():
			a = append(a, "--tmpfs", h)
		default:
			a = append(a, "--ro-bind", "/dev/null", h)
		}
	}
	return a
}
