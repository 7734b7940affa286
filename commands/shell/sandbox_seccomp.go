package shell

import (
	"encoding/binary"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// seccompFD is the descriptor the filter is given to bwrap on: the first of ExtraFiles.
const seccompFD = "3"

// sysClone3 is clone3's number, the same on every architecture; its flags are in memory a
// filter cannot read, so it fails with ENOSYS and the C library falls back to clone.
const sysClone3 = 435

// seccompArch is the audit architecture whose syscall numbers the filter is built with;
// 0 where agentd does not know it, and then no filter is used.
var seccompArch = map[string]uint32{"amd64": unix.AUDIT_ARCH_X86_64, "arm64": unix.AUDIT_ARCH_AARCH64}[runtime.GOARCH]

// seccompFilter is the classic BPF program bwrap loads (--seccomp) before it execs the
// sandboxed program: no new user namespace (unshare or clone with CLONE_NEWUSER, clone3).
// As non-root bwrap forbids them itself (--disable-userns); as root, with no user
// namespace of bwrap's own, this filter is what does, and a program cannot gain
// capabilities in a namespace of its own making and reach the kernel's code behind them.
// Another architecture's syscalls (i386 on amd64, x32) kill the process.
//
// The kernel's keyrings (add_key, request_key, keyctl) fail with ENOSYS too: they are per
// uid, not per namespace, so every sandbox of the uid would share one store, outliving
// each run, between agents that are otherwise apart.
//
// io_uring (io_uring_setup, io_uring_enter, io_uring_register) and Linux AIO (io_setup,
// io_submit, …) fail with ENOSYS, and programs fall back to plain reads and writes: a
// ring's registered files and either one's requests in flight (an AIO poll that never
// completes keeps the socket it polls, and what waits in its queue, after its last
// descriptor is closed) are held where no /proc listing shows them, so a file deleted but
// kept there would grow past the disk watch, which counts what the run's processes hold
// through /proc. They are also among the kernel's most exposed interfaces for a sandboxed
// program.
func seccompFilter() []byte {
	const (
		ld    = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge   = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		jset  = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret   = unix.BPF_RET | unix.BPF_K
		allow = unix.SECCOMP_RET_ALLOW
	)
	enosys := []uint32{sysClone3, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_KEYCTL,
		unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
		unix.SYS_IO_SETUP, unix.SYS_IO_SUBMIT, unix.SYS_IO_CANCEL, unix.SYS_IO_GETEVENTS, unix.SYS_IO_PGETEVENTS, unix.SYS_IO_DESTROY}
	// Jt counts the instructions to skip: after the list come the 8 of the tail below,
	// EPERM the next to last and ENOSYS the last.
	n := len(enosys)
	prog := []unix.SockFilter{
		{Code: ld, K: 4}, // arch
		{Code: jeq, K: seccompArch, Jt: 1},
		{Code: ret, K: unix.SECCOMP_RET_KILL_PROCESS},
		{Code: ld, K: 0},                             // syscall number
		{Code: jge, K: 0x40000000, Jt: uint8(n + 6)}, // x32: EPERM
	}
	for i, nr := range enosys {
		prog = append(prog, unix.SockFilter{Code: jeq, K: nr, Jt: uint8(n - i + 6)})
	}
	prog = append(prog,
		unix.SockFilter{Code: jeq, K: unix.SYS_UNSHARE, Jt: 2},
		unix.SockFilter{Code: jeq, K: unix.SYS_CLONE, Jt: 1},
		unix.SockFilter{Code: ret, K: allow},
		unix.SockFilter{Code: ld, K: 16}, // flags: the first argument's low half on a little-endian machine
		unix.SockFilter{Code: jset, K: unix.CLONE_NEWUSER, Jt: 1},
		unix.SockFilter{Code: ret, K: allow},
		unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
	)
	b := make([]byte, 0, 8*len(prog))
	for _, f := range prog {
		b = binary.NativeEndian.AppendUint16(b, f.Code)
		b = append(b, f.Jt, f.Jf)
		b = binary.NativeEndian.AppendUint32(b, f.K)
	}
	return b
}

// seccompFile returns a pipe to give bwrap as seccompFD, the filter written and its write
// end closed; nil where there is no filter for this architecture.
func seccompFile() (*os.File, error) {
	if seccompArch == 0 {
		return nil, nil
	}
	return dataPipe(seccompFilter()) // a few hundred bytes
}

// dataPipe returns the read end of a pipe holding b, its write end closed, for bwrap to
// read when it builds the sandbox (--seccomp, --ro-bind-data). b must fit in the pipe's
// buffer (64 KiB on Linux), as nothing reads it meanwhile.
func dataPipe(b []byte) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	_, err = w.Write(b)
	w.Close()
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}
