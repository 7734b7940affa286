package shell

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A sandbox granted the network never gets the host's network namespace: that would
// hand it every service on the host's loopback (Ollama, the Agent Protocol, the web
// console) and every abstract unix socket (X11, session buses), which belong to the
// namespace. It gets one of its own, like any other, and slirp4netns gives that one a
// user-mode stack to the outside: a tap interface with a default route through it, and
// 10.0.2.3 as its DNS server, with the host's loopback behind it refused
// (--disable-host-loopback). bwrap says the sandbox's pid on --info-fd and holds the
// program on --block-fd until slirp4netns has configured the interface; slirp4netns
// runs in the program's process group, and so is killed with it, and ends when its
// exit pipe closes, whatever ends the daemon.

// slirpMissing is the fix a person makes when the network is granted without slirp4netns.
const slirpMissing = "slirp4netns is not installed, and a sandbox granted the network gets " +
	"one of its own only through it: install it (apt-get install slirp4netns), or set [shell] network = false"

// sandboxDNS is the resolv.conf programs with the network see: slirp4netns's DNS, which
// forwards to the host's resolvers.
const sandboxDNS = "nameserver 10.0.2.3\n"

// probeNet finds slirp4netns when the network is granted and checks, once per
// configuration, that a sandbox gets its network here: a tap interface with a default
// route (no /dev/net/tun, as in some containers, fails here).
func (s *sandbox) probeNet() error {
	if !s.o.Network {
		return nil
	}
	slirp, err := exec.LookPath("slirp4netns")
	if err != nil {
		return errors.New(slirpMissing)
	}
	s.slirp = slirp
	err = probed(fmt.Sprint(s.bwrap, s.asRoot, s.o.UID, s.o.GID, slirp), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		net, err := s.newNetRun(view{})
		if err != nil {
			return err
		}
		extra, err := s.files(view{})
		if err != nil {
			net.end()
			return err
		}
		argv := s.wrap("", view{}, []string{"/bin/cat", "/proc/net/route"})
		res, err := runProgram(ctx, nil, "/", argv, []string{"PATH=" + programPath}, 4096, net, append(extra, net.files...)...)
		switch {
		case res == nil:
			return err
		case !strings.Contains(string(res.out), "tap0\t00000000\t"):
			return fmt.Errorf("the sandbox has no default route through slirp4netns: %s", strings.TrimSpace(res.text()))
		}
		return nil
	})
	if err != nil {
		s.slirp = ""
		return fmt.Errorf("slirp4netns cannot give a sandbox a network here (%v): "+
			"fix that, or set [shell] network = false", err)
	}
	return nil
}

// online reports whether a run seen as v has the network: granted, and not taken away.
func (s *sandbox) online(v view) bool { return s.bwrap != "" && s.o.Network && !v.offline }

// netArgs are bwrap's arguments for a run with the network: where it says the sandbox's
// pid, what it waits on before the program starts, and the resolv.conf it shows, in the
// order of netRun.files, from descriptor fd (after the others the run is given).
func netArgs(a, bound []string, fd int) []string {
	a = append(a, "--info-fd", strconv.Itoa(fd), "--block-fd", strconv.Itoa(fd+1))
	if at := resolvConfAt(); at != "" {
		a = append(dirsTo(a, at, bound), "--perms", "0444", "--ro-bind-data", strconv.Itoa(fd+2), at)
	}
	return a
}

// resolvConfAt is where the sandbox's resolv.conf goes: /etc/resolv.conf, or where the
// host's link there leads (systemd-resolved's /run/systemd/resolve/stub-resolv.conf), a
// path bwrap can make. "" when there is none to replace: a missing file under /etc or /usr.
func resolvConfAt() string {
	p := "/etc/resolv.conf"
	for range 8 {
		fi, err := os.Lstat(p)
		switch {
		case err != nil:
			if within(p, []string{"/etc", "/usr"}) {
				return ""
			}
			return p
		case fi.Mode()&os.ModeSymlink == 0:
			return p
		}
		t, err := os.Readlink(p)
		if err != nil {
			return ""
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(p), t)
		}
		p = filepath.Clean(t)
	}
	return ""
}

// netRun is the network of one run: the pipes bwrap is given, and slirp4netns once started.
type netRun struct {
	slirp  string
	asRoot bool
	info   *os.File   // read: bwrap's JSON with the sandbox's pid
	block  *os.File   // write: a byte lets the program start
	files  []*os.File // bwrap's ends, in netArgs's order
	exit   *os.File   // write: slirp4netns ends when it closes
	cmd    *exec.Cmd
	done   bool   // slirp4netns is reaped
	log    capped // slirp4netns's output, for an error
}

// newNetRun makes the pipes of a run with the network; nil, nil for one without.
func (s *sandbox) newNetRun(v view) (*netRun, error) {
	if !s.online(v) {
		return nil, nil
	}
	if s.netErr != nil {
		return nil, s.netErr
	}
	n := &netRun{slirp: s.slirp, asRoot: s.asRoot}
	infoR, infoW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	blockR, blockW, err := os.Pipe()
	if err != nil {
		closeAll([]*os.File{infoR, infoW})
		return nil, err
	}
	n.info, n.block, n.files = infoR, blockW, []*os.File{infoW, blockR}
	if resolvConfAt() != "" {
		dns, err := dataPipe([]byte(sandboxDNS))
		if err != nil {
			n.close()
			return nil, err
		}
		n.files = append(n.files, dns)
	}
	return n, nil
}

// attach gives the sandbox of bwrap's process pid its network, and then lets the program
// start. An error leaves the program waiting: the caller kills the group, slirp4netns
// with it. ctx ending stops the wait.
func (n *netRun) attach(ctx context.Context, pid int, box *boxRun) error {
	if n == nil {
		return nil
	}
	stop := context.AfterFunc(ctx, func() { n.info.SetReadDeadline(past); n.block.SetWriteDeadline(past) })
	defer stop()
	var info struct {
		Pid int `json:"child-pid"`
	}
	if err := json.NewDecoder(n.info).Decode(&info); err != nil || info.Pid <= 0 {
		return fmt.Errorf("the sandbox's network: bwrap did not say the sandbox's pid (%v)", err)
	}
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", info.Pid))
	if err != nil {
		return fmt.Errorf("the sandbox's network: %w", err)
	}
	defer ns.Close()
	if ppid, ok := parentOf(info.Pid); !ok || ppid != pid {
		return errors.New("the sandbox's network: the sandbox's process is gone")
	}
	if err := loopbackUp(ctx, info.Pid); err != nil {
		return fmt.Errorf("the sandbox's network: %w", err)
	}
	ready, err := n.start(ns, pid, box)
	if err != nil {
		return fmt.Errorf("the sandbox's network: cannot start slirp4netns: %w", err)
	}
	stopReady := context.AfterFunc(ctx, func() { ready.SetReadDeadline(past) })
	defer stopReady()
	b := make([]byte, 1)
	_, err = ready.Read(b)
	ready.Close()
	if err != nil || b[0] != '1' {
		n.stop()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("the sandbox's network did not come up: slirp4netns: %s", n.log.text())
	}
	if _, err := n.block.Write([]byte{1}); err != nil {
		return fmt.Errorf("the sandbox's network: the sandbox did not wait for it: %w", err)
	}
	return nil
}

// loopbackUp waits until bwrap has given the sandbox of process pid its loopback
// address, which it does once it has said the pid: slirp4netns brings the loopback up
// too, and bwrap fails to add the address to one already up.
func loopbackUp(ctx context.Context, pid int) error {
	fib := fmt.Sprintf("/proc/%d/net/fib_trie", pid)
	for wait := 100 * time.Microsecond; ; wait = min(2*wait, 10*time.Millisecond) {
		b, err := os.ReadFile(fib)
		switch {
		case err != nil:
			return err
		case bytes.Contains(b, []byte("-- 127.0.0.1\n")):
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// past is a deadline that has passed: it ends a blocked read or write at once.
var past = time.Unix(1, 0)

// start starts slirp4netns on the network namespace ns, in the process group pid leads
// and in the agent's box, and returns the pipe it says it is ready on. As root it runs in
// a mount namespace of its own without capabilities (--enable-sandbox); as non-root it
// joins the user namespace that owns ns, where it may configure the interface, and runs
// without one: slirp4netns 1.2's --enable-sandbox then becomes uid and gid 0 in that
// namespace (setegid(0)), which bwrap maps to agentd's uid alone, so it fails ("setegid(0);
// parent failed"), and mapping 0 would make the programs root there. Its seccomp filter
// and the agent's box are what bound it.
func (n *netRun) start(ns *os.File, pid int, box *boxRun) (*os.File, error) {
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	exitR, exitW, err := os.Pipe()
	if err != nil {
		closeAll([]*os.File{readyR, readyW})
		return nil, err
	}
	extra := []*os.File{readyW, exitR, ns} // fds 3, 4, 5
	argv := []string{n.slirp, "--configure", "--mtu=65520", "--disable-host-loopback", "--enable-seccomp",
		"--ready-fd=3", "--exit-fd=4", "--netns-type=path"}
	if n.asRoot {
		argv = append(argv, "--enable-sandbox")
	} else {
		fd, err := unix.IoctlRetInt(int(ns.Fd()), unix.NS_GET_USERNS)
		if err != nil {
			closeAll([]*os.File{readyR, readyW, exitR, exitW})
			return nil, fmt.Errorf("the sandbox's user namespace: %w", err)
		}
		extra = append(extra, os.NewFile(uintptr(fd), "userns")) // fd 6
		argv = append(argv, "--userns-path=/proc/self/fd/6")
	}
	cmd := exec.Command(argv[0], append(argv[1:], "/proc/self/fd/5", "tap0")...)
	cmd.Dir, cmd.Env = "/", []string{"PATH=" + programPath}
	cmd.Stdout, cmd.Stderr = &n.log, &n.log
	cmd.ExtraFiles = extra
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pid}
	err = box.start(cmd)
	closeAll([]*os.File{readyW, exitR})
	if len(extra) > 3 {
		extra[3].Close()
	}
	if err != nil {
		closeAll([]*os.File{readyR, exitW})
		return nil, err
	}
	n.cmd, n.exit = cmd, exitW
	return readyR, nil
}

// end ends slirp4netns and closes what is left of the run's pipes.
func (n *netRun) end() {
	if n != nil {
		n.close()
		n.stop()
	}
}

// stop kills slirp4netns, if it was started and is not reaped yet (so that its pid is
// still its own), and reaps it, its output read to the end.
func (n *netRun) stop() {
	if n.cmd == nil || n.done {
		return
	}
	n.done = true
	n.exit.Close()
	n.cmd.Process.Kill()
	pid := n.cmd.Process.Pid
	waitExited(pid)
	untrack(pid) // before the reap, after which the number may name a stranger
	n.cmd.Wait()
}

// close closes the run's pipes but slirp4netns's exit pipe.
func (n *netRun) close() {
	closeAll(append([]*os.File{n.info, n.block}, n.files...))
}

// capped keeps the first 4 KiB written to it, for an error message.
type capped struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if keep := 4096 - c.buf.Len(); keep > 0 {
		c.buf.Write(p[:min(len(p), keep)])
	}
	return len(p), nil
}

func (c *capped) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := strings.TrimSpace(c.buf.String()); t != "" {
		return strings.ReplaceAll(t, "\n", "; ")
	}
	return "it exited without saying why"
}
