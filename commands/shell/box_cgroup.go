package shell

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The cgroup side of Boxes: where agentd's own cgroups are, in cgroup v2 (one hierarchy
// with every controller) or v1 (a hierarchy per controller, as on hybrid systems), and
// the folders agentd makes beneath them:
//
//	<own>/agentd.<pid>.<n>/agent-<id>   one instance per Boxes, one folder per agent
//	<own>/daemon                        v2 only: agentd itself, when it had to leave <own>
//
// v2 lets a cgroup with controllers enabled for its children hold no process of its own
// ("no internal processes"), so agentd moves itself into a leaf before it enables them.

// boxControllers are the controllers a box uses: processes, memory and CPU.
var boxControllers = []string{"pids", "memory", "cpu"}

// hierarchy is one cgroup hierarchy boxes are made in.
type hierarchy struct {
	v2          bool
	own         string   // the folder instances are made in: agentd's own cgroup
	controllers []string // the box controllers it offers, in boxControllers' order
}

// mountedCgroup is a cgroup file system as /proc/self/mountinfo lists it.
type mountedCgroup struct {
	v2          bool
	root, dir   string   // the cgroup at the mount's root, and where it is mounted
	controllers []string // v1: the controllers it is the hierarchy of
}

// parseMountinfo lists the cgroup file systems in a /proc/PID/mountinfo.
func parseMountinfo(data []byte) []mountedCgroup {
	var out []mountedCgroup
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 {
			continue
		}
		m := mountedCgroup{root: unescapeMount(f[3]), dir: unescapeMount(f[4])}
		switch g[0] {
		case "cgroup2":
			m.v2 = true
		case "cgroup":
			for _, o := range strings.Split(g[2], ",") {
				if slices.Contains(boxControllers, o) {
					m.controllers = append(m.controllers, o)
				}
			}
		default:
			continue
		}
		out = append(out, m)
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// procCgroups is a /proc/PID/cgroup: the v2 path ("" when there is none) and the v1
// path of each controller.
type procCgroups struct {
	v2 string
	v1 map[string]string
}

// parseProcCgroup reads a /proc/PID/cgroup.
func parseProcCgroup(data []byte) procCgroups {
	pc := procCgroups{v1: map[string]string{}}
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			pc.v2 = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			pc.v1[c] = parts[2]
		}
	}
	return pc
}

// under is the folder of cgroup path p in a mount of m, or "" when p is not in it.
func (m mountedCgroup) under(p string) string {
	rel, ok := strings.CutPrefix(p, m.root)
	if !ok || (rel != "" && !strings.HasPrefix(rel, "/") && m.root != "/") {
		return ""
	}
	return filepath.Join(m.dir, rel)
}

// findHierarchies finds where agentd's programs can be given cgroups: the v2 hierarchy
// when agentd's cgroup there offers a box controller (cgroup.controllers), else the v1
// hierarchies of the box controllers. It says why when there are none.
func findHierarchies() ([]hierarchy, error) {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	pcData, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	mounts, pc := parseMountinfo(mi), parseProcCgroup(pcData)
	if len(mounts) == 0 {
		return nil, errors.New("no cgroup file system is mounted")
	}
	if pc.v2 != "" {
		for _, m := range mounts {
			dir := m.under(pc.v2)
			if !m.v2 || dir == "" {
				continue
			}
			have, _ := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
			h := hierarchy{v2: true, own: dir}
			for _, c := range boxControllers {
				if slices.Contains(strings.Fields(string(have)), c) {
					h.controllers = append(h.controllers, c)
				}
			}
			if len(h.controllers) > 0 {
				return []hierarchy{h}, nil
			}
		}
	}
	var out []hierarchy
	for _, m := range mounts {
		if m.v2 || len(m.controllers) == 0 {
			continue
		}
		p, ok := pc.v1[m.controllers[0]]
		dir := m.under(p)
		if !ok || dir == "" || slices.ContainsFunc(out, func(h hierarchy) bool { return h.own == dir }) {
			continue
		}
		out = append(out, hierarchy{own: dir, controllers: m.controllers})
	}
	if len(out) == 0 {
		return nil, errors.New("no cgroup hierarchy offers agentd the pids, memory or cpu controller " +
			"(cgroup v2 without them delegated to agentd's cgroup, or none mounted)")
	}
	return out, nil
}

// v2Base is, once per process, the v2 folder instances go in, with the box controllers
// enabled for its children: agentd's own cgroup, which it leaves for a leaf of its own
// first when it must (another daemon in the same process finds it ready).
var v2Base struct {
	once sync.Once
	dir  string
	err  error
}

// prepareV2 is v2Base for the v2 hierarchy h.
func prepareV2(h hierarchy) (string, error) {
	v2Base.once.Do(func() { v2Base.dir, v2Base.err = enableV2(h.own, h.controllers) })
	return v2Base.dir, v2Base.err
}

// enableV2 enables ctrls for the children of own, moving agentd into own/daemon first if
// own holds it: a cgroup with controllers enabled for its children holds no processes.
func enableV2(own string, ctrls []string) (string, error) {
	err := enableControllers(own, ctrls)
	if !errors.Is(err, unix.EBUSY) {
		return own, err
	}
	procs, _ := os.ReadFile(filepath.Join(own, "cgroup.procs"))
	for _, p := range strings.Fields(string(procs)) {
		if p != strconv.Itoa(os.Getpid()) {
			return "", fmt.Errorf("other processes share agentd's cgroup %s (run agentd as a systemd service with Delegate=yes, as systemd/agentd.service does)", own)
		}
	}
	leaf := filepath.Join(own, "daemon")
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("cannot make a cgroup for agentd itself: %w", err)
	}
	if err := writeCgroup(leaf, "cgroup.procs", strconv.Itoa(os.Getpid())); err != nil {
		return "", fmt.Errorf("cannot move agentd into %s: %w", leaf, err)
	}
	return own, enableControllers(own, ctrls)
}

// enableControllers writes "+c" for each of ctrls to dir's cgroup.subtree_control.
func enableControllers(dir string, ctrls []string) error {
	var b strings.Builder
	for _, c := range ctrls {
		b.WriteString(" +" + c)
	}
	return writeCgroup(dir, "cgroup.subtree_control", strings.TrimSpace(b.String()))
}

// writeCgroup writes value to a cgroup file, in one write as the kernel wants it.
func writeCgroup(dir, file, value string) error {
	f, err := os.OpenFile(filepath.Join(dir, file), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.Write([]byte(value))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %q to %s: %w", value, filepath.Join(dir, file), err)
	}
	return nil
}

// counter reads the number after key in a flat-keyed cgroup file (memory.events,
// memory.oom_control, pids.events); 0 when it is not there.
func counter(path, key string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// instanceName matches the folders Boxes make, agentd.<pid>.<n>.
var instanceName = regexp.MustCompile(`^agentd\.([0-9]+)\.[0-9]+$`)

// instanceSeq numbers the Boxes of this process.
var instanceSeq atomic.Int64

// makeInstance makes a new instance folder in dir, named for this process.
func makeInstance(dir string) (string, error) {
	for {
		p := filepath.Join(dir, fmt.Sprintf("agentd.%d.%d", os.Getpid(), instanceSeq.Add(1)))
		err := os.Mkdir(p, 0o755)
		if errors.Is(err, fs.ErrExist) {
			continue // a process before ours had our pid and left it: take the next number
		}
		return p, err
	}
}

// removeStale removes, from dir, the empty instance folders of processes that are gone
// (a daemon killed with -9): their agents' folders, then them. One a process still
// running owns, or with processes left in it, stays.
func removeStale(dir string) (removed int) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	for _, e := range entries {
		m := instanceName.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			continue
		}
		if pid, _ := strconv.Atoi(m[1]); pid == os.Getpid() || alive(pid) {
			continue
		}
		if removeCgroupTree(filepath.Join(dir, e.Name())) == nil {
			removed++
		}
	}
	return removed
}

// alive reports whether a process pid exists and is not a zombie (a daemon killed with
// -9 is one until its parent reaps it).
func alive(pid int) bool {
	if err := unix.Kill(pid, 0); err != nil && !errors.Is(err, unix.EPERM) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist) // gone meanwhile, or not ours to read: running
	}
	i := bytes.LastIndex(stat, []byte(") "))
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// removeCgroupTree removes a cgroup folder and the cgroups beneath it, deepest first; a
// cgroup's files go with it. It fails on one that still holds processes.
func removeCgroupTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := removeCgroupTree(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := unix.Rmdir(dir); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("removing cgroup %s: %w", dir, err)
	}
	return nil
}
