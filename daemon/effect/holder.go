package effect

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/commands"
)

// holderName is the name the daemon runs its own program under to hold a preview's
// quota in a namespace of its own (holdOverlay): any program that links this package.
const holderName = "agentd-preview-overlay"

func init() {
	if len(os.Args) == 5 && os.Args[0] == holderName {
		os.Exit(holdOverlay(os.Args[1], os.Args[2], os.Args[3], os.Args[4]))
	}
}

// holdInNamespace starts the holder of a quota of size bytes on view and dir, over the
// workspace ws, open at lower, in a user namespace that maps agentd's uid and gid to
// themselves (so the sandbox run there is agentd's uid, as any), with a mount namespace
// of its own. It returns once the quota is mounted; killing the holder drops it, and
// so does the end of its input, which the daemon's end closes too.
func holdInNamespace(lower *os.File, ws, view, dir string, size int64) (*exec.Cmd, error) {
	uid, gid := os.Getuid(), os.Getgid()
	cmd := &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{holderName, ws, view, dir, strconv.FormatInt(size, 10)},
		Env:        []string{},
		ExtraFiles: []*os.File{lower},
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
			// Not root in its namespace, it holds there only what mounting takes, and what
			// overlay's own work folder (mode 000) takes of the one who mounted it.
			AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_DAC_OVERRIDE},
		},
	}
	if _, err := cmd.StdinPipe(); err != nil { // closed by Wait
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("no user namespace for it: %w", err)
	}
	said := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		said <- strings.TrimSpace(line)
	}()
	var why string
	select {
	case why = <-said:
	case <-time.After(30 * time.Second):
		why = "its holder did not answer"
	}
	if why != "mounted" {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, errors.New(strings.TrimPrefix(why, "not mounted: "))
	}
	return cmd, nil
}

// holdOverlay is the holder's program: it mounts the quota (mountLayers, with the
// overlay's marks as user.* attributes, as an unprivileged mount keeps them), says
// "mounted", and holds it until its input ends. It returns the exit status.
//
// Overlay takes no lower layer from another mount namespace, so ws is opened again here,
// by the one resolver, and must be the very folder the daemon opened (descriptor 3): a
// link swapped onto its path since cannot feed the preview another tree.
func holdOverlay(ws, view, dir, size string) int {
	n, err := strconv.ParseInt(size, 10, 64)
	var here *os.File
	if err == nil {
		here, err = commands.OpenWorkspaceDir(ws)
	}
	var was, is unix.Stat_t
	if err == nil {
		err = errors.Join(unix.Fstat(3, &was), unix.Fstat(int(here.Fd()), &is))
	}
	if err == nil && (was.Dev != is.Dev || was.Ino != is.Ino) {
		err = errors.New("the workspace changed while it was opened, through a symlink")
	}
	if err == nil {
		err = mountLayers(int(here.Fd()), view, dir, n, ",userxattr")
	}
	if err != nil {
		fmt.Println("not mounted:", strings.ReplaceAll(err.Error(), "\n", "; "))
		return 1
	}
	fmt.Println("mounted")
	io.Copy(io.Discard, os.Stdin)
	return 0
}
