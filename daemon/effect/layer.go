package effect

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentd/agentd/commands"
)

// layer is where a run ahead writes: an overlay mounted over the agent's copy of the
// workspace, whose writable layer is a tmpfs of a fixed size and inode count, in a mount
// namespace of its own (a user namespace too when agentd is not root, as the kernel
// allows). The copy itself is the overlay's lower layer and is never written, so the
// run needs no putting back; what the run writes, however it writes it (many files,
// sparse files, extended attributes, hard links), lands in the tmpfs and stops at its
// size: the bound holds by construction, and the statfs watch is the second wall. The
// namespace lives as long as its holder, a shell waiting on its stdin, which the
// sandbox enters (Enter) and through whose /proc root the change is captured (Merged).
type layer struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	view    string
	nsenter string
}

// layerScript mounts the tmpfs ($2, size $3 bytes, $4 inodes) and the overlay on the
// copy ($1) with its root's owner, mode and time; says "ready", and holds the namespace
// until its stdin ends. $5 is the overlay's extra options.
const layerScript = `set -e
mount --make-rprivate /
mount -t tmpfs -o "size=$3,nr_inodes=$4,mode=0700" tmpfs "$2"
mkdir "$2/u" "$2/w"
chown --reference="$1" "$2/u"; chmod --reference="$1" "$2/u"; touch -r "$1" "$2/u"
mount -t overlay -o "lowerdir=$1,upperdir=$2/u,workdir=$2/w$5" overlay "$1"
echo ready
read -r _ || true
`

// openLayer mounts a layer of room bytes (each file counting as commands.MinEntryBytes
// at least) over view, with an empty folder upper as the tmpfs's mount point. The error
// says why no layer can be built here.
func openLayer(ctx context.Context, view, upper string, room int64) (*layer, error) {
	if room < commands.MinEntryBytes {
		return nil, fmt.Errorf("no room is left for what it would write")
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return nil, fmt.Errorf("no bounded layer for its writes: util-linux's nsenter is not installed: %w", err)
	}
	if err := os.Mkdir(upper, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("no bounded layer for its writes: %w", err)
	}
	attr := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	opts := ",redirect_dir=on" // a folder renamed moves, as on the workspace
	if uid, gid := os.Getuid(), os.Getgid(); uid != 0 {
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}}
		opts = ",userxattr" // the only overlay a user namespace may mount
	}
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", layerScript, "sh", view, upper,
		strconv.FormatInt(room, 10), strconv.FormatInt(room/commands.MinEntryBytes, 10), opts)
	cmd.SysProcAttr, cmd.Env = attr, []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("no bounded layer for its writes (a mount namespace of its own): %w", err)
	}
	l := &layer{cmd: cmd, in: in, view: view, nsenter: nsenter}
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		l.close()
		return nil, fmt.Errorf("no bounded layer for its writes (a tmpfs under an overlay): %s", strings.TrimSpace(stderr.String()))
	}
	return l, nil
}

// Merged is the copy as the run ahead sees it: its overlay, read from the daemon.
func (l *layer) Merged() string {
	return "/proc/" + strconv.Itoa(l.cmd.Process.Pid) + "/root" + l.view
}

// Upper is the tmpfs the run's writes take, read from the daemon.
func (l *layer) Upper(upper string) string {
	return "/proc/" + strconv.Itoa(l.cmd.Process.Pid) + "/root" + upper
}

// Enter is the argv the sandbox starts under to see the overlay at the copy's path.
func (l *layer) Enter() []string {
	a := []string{l.nsenter, "--target=" + strconv.Itoa(l.cmd.Process.Pid), "--mount"}
	if os.Getuid() != 0 {
		a = append(a, "--user", "--preserve-credentials")
	}
	return append(a, "--")
}

// close ends the namespace: the overlay and the tmpfs, with all the run wrote, are gone.
func (l *layer) close() {
	l.in.Close()
	l.cmd.Wait() // it ends at its stdin's end; killed with ctx
}
