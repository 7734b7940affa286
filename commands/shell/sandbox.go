package shell

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The sandbox is bubblewrap, run one of two ways:
//
//   - agentd as non-root: bwrap makes an unprivileged user namespace (the programs keep
//     agentd's uid, which is no one's root), drops every capability in it and forbids
//     nested user namespaces.
//   - agentd as root: a user namespace made by root maps its uids to the host's root, so
//     one is no confinement (/etc/shadow stays readable, capabilities stay full). bwrap runs
//     as root without one, so that it can mount, and the program it starts is setpriv,
//     which becomes Options.UID/GID, clears the groups and every capability set (bounding
//     and ambient included) and sets no_new_privs before it execs the rest. The workspace
//     is chowned to that uid before each run (ownTree) so that it stays writable.
//
// Either way prlimit then sets the resource limits inside the namespaces, and only then
// is the model's program started.

// fixed helpers the sandbox needs besides bwrap; all are util-linux, Essential on Debian.
const (
	setprivPath = "/usr/bin/setpriv"
	prlimitPath = "/usr/bin/prlimit"
	nsenterPath = "/usr/bin/nsenter"
)

// sandbox is how a program is confined: under bwrap, or not at all when bwrap is "".
type sandbox struct {
	o      Options
	bwrap  string
	asRoot bool   // agentd runs as root: setpriv drops to o.UID/o.GID, no user namespace
	reason string // mode auto without a working sandbox: why, and the commands refuse to run
	hide   []string
	slirp  string                   // slirp4netns, when the network is granted and it works here
	netErr error                    // the network is granted and slirp4netns is missing or fails: runs with it refuse
	git    atomic.Pointer[boundGit] // the host's git, once found: gitFor
}

// newSandbox picks the sandbox o asks for, probing it once per configuration.
func newSandbox(o Options) (*sandbox, error) {
	s := &sandbox{o: o, asRoot: os.Geteuid() == 0, hide: o.Hidden()}
	if o.Sandbox == SandboxNone {
		return s, nil
	}
	bwrap, err := findBwrap(o.Bwrap)
	if err == nil {
		s.bwrap = bwrap
		err = s.probe()
	}
	switch {
	case err == nil:
		s.netErr = s.probeNet()
	case o.Sandbox == SandboxBwrap:
		return nil, fmt.Errorf("shell: %w: %v", ErrNoSandbox, err)
	default:
		s.bwrap, s.reason = "", err.Error()
	}
	return s, nil
}

// CheckNetwork reports why programs granted the network by o cannot have it, or nil: they
// do, or o grants none, or they are unsandboxed (and so have the host's). Their commands
// then refuse, saying the same.
func CheckNetwork(o Options) error {
	o, err := o.check()
	if err != nil || !o.Network {
		return err
	}
	s, err := newSandbox(o)
	if err != nil || s.bwrap == "" {
		return nil // no sandbox: CheckSandbox says so
	}
	return s.netErr
}

// CheckSandbox reports the bwrap binary the commands built from o run their programs
// under. With "" it returns nil in mode "none" and, in mode "auto", the reason there is no
// sandbox (the commands then refuse to run), for the daemon to log and show; in mode
// "bwrap" that is an error wrapping ErrNoSandbox, the one the constructors return.
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

// DescribeSandbox is one line for people (agentctl status, doctor) on the sandbox the
// commands built from o run in, and whether it is a sandbox at all.
func DescribeSandbox(o Options) (line string, ok bool) {
	o, err := o.check()
	if err != nil {
		return err.Error(), false
	}
	s, err := newSandbox(o)
	switch {
	case err != nil:
		return "refused: " + err.Error(), false
	case s.reason != "":
		return "refused: no sandbox works here (" + s.reason + ")", false
	case s.bwrap == "":
		return `unconfined ([shell] sandbox = "none")`, false
	}
	return s.describe(), true
}

// describe says what confines the programs, e.g. "bubblewrap (/usr/bin/bwrap), uid 65534, no network".
func (s *sandbox) describe() string {
	who := "agentd's uid in a user namespace"
	if s.asRoot {
		who = fmt.Sprintf("uid %d", s.o.UID)
	}
	net := "no network"
	switch {
	case s.o.Network && s.netErr != nil:
		net = "network granted but refused: " + s.netErr.Error()
	case s.o.Network:
		net = "a network of its own through slirp4netns, without the host's loopback"
	}
	return fmt.Sprintf("bubblewrap (%s), %s, no capabilities, %s", s.bwrap, who, net)
}

// refusal is the error a command gives when mode auto found no working sandbox.
func (s *sandbox) refusal(name string) error {
	return fmt.Errorf("%s: refused: no sandbox works on this machine (%s). Tell the person: "+
		"install bubblewrap (apt-get install bubblewrap) and allow unprivileged user namespaces, "+
		"or set [shell] sandbox = \"none\" in agentd's config to run programs unconfined knowingly", name, s.reason)
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

// probes caches, per sandbox configuration, whether it holds here: that depends on the
// kernel and the container the daemon runs in, which do not change while it runs.
var probes sync.Map // string → *probe

type probe struct {
	once sync.Once
	err  error
}

func (s *sandbox) probe() error {
	return probed(fmt.Sprint(s.bwrap, s.asRoot, s.o.UID, s.o.GID), s.runProbe)
}

// probed runs check once per key and returns what it found.
func probed(key string, check func() error) error {
	v, _ := probes.LoadOrStore(key, &probe{})
	p := v.(*probe)
	p.once.Do(func() { p.err = check() })
	return p.err
}

// runProbe runs a program in the sandbox the commands use and checks, from its
// /proc/self/status, that it holds: no capability in any set, no uid 0, no_new_privs. A
// kernel or container without user namespaces fails here, and bwrap's stderr says why.
func (s *sandbox) runProbe() error {
	for _, p := range []string{setprivPath, prlimitPath} {
		if (p == prlimitPath || s.asRoot) && !executable(p) {
			return fmt.Errorf("%s is missing (Debian package util-linux)", p)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	argv := s.wrap("", view{offline: true}, []string{"/bin/cat", "/proc/self/status"}) // the network is probeNet's
	extra, err := s.files(view{})
	if err != nil {
		return err
	}
	defer closeAll(extra)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=" + programPath}
	cmd.ExtraFiles = extra
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("%s cannot create a sandbox here: %s (are user namespaces disabled, as in many containers?)", s.bwrap, msg)
	}
	if err := checkConfined(string(out)); err != nil {
		return fmt.Errorf("%s makes a sandbox that does not hold here: %v", s.bwrap, err)
	}
	return nil
}

// files are the descriptors bwrap is given for a run as v shows it: the seccomp filter,
// when there is one, a bounded run's git (boundGit.files) and what it binds of the
// workspace (v.src). None unsandboxed.
func (s *sandbox) files(v view) ([]*os.File, error) {
	if s.bwrap == "" {
		return nil, nil
	}
	var out []*os.File
	if seccompArch != 0 {
		f, err := seccompFile()
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	if v.git.real != "" {
		g, err := v.git.files(!v.readOnly)
		if err != nil {
			closeAll(out)
			return nil, err
		}
		out = append(out, g...)
	}
	return append(out, v.src...), nil
}

// gitFor is how a bounded run reaches git: found once, and looked for again by each run
// while it is not installed, so that one installed later is bounded too.
func (s *sandbox) gitFor() boundGit {
	if g := s.git.Load(); g != nil {
		return *g
	}
	g := findGit()
	if g.real != "" {
		s.git.Store(&g)
	}
	return g
}

// checkConfined reads a /proc/PID/status and says what, if anything, is not confined.
func checkConfined(status string) error {
	want := map[string]bool{"CapInh": false, "CapPrm": false, "CapEff": false, "CapBnd": false, "CapAmb": false, "Uid": false, "NoNewPrivs": false}
	for _, line := range strings.Split(status, "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb":
			if strings.Trim(v, "0") != "" {
				return fmt.Errorf("%s is %s, want no capabilities", k, v)
			}
		case "Uid":
			for _, id := range strings.Fields(v) {
				if id == "0" {
					return fmt.Errorf("runs as uid 0 (%s)", v)
				}
			}
		case "NoNewPrivs":
			if v != "1" {
				return errors.New("no_new_privs is not set")
			}
		default:
			continue
		}
		want[k] = true
	}
	for k, seen := range want {
		if !seen {
			return fmt.Errorf("%s not reported", k)
		}
	}
	return nil
}
