package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/internal/testutil"
)

// TestCheckConfigGolden runs `agentd --check-config --config testdata/NAME.toml` for each
// file and compares the exit code and output with testdata/NAME.golden.
func TestCheckConfigGolden(t *testing.T) {
	for _, k := range []string{"OLLAMA_HOST", "AGENTD_SOCKET", "RUNTIME_DIRECTORY", "STATE_DIRECTORY",
		"SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "DISCORD_BOT_TOKEN", "AGENTD_HTTP_TOKEN"} {
		t.Setenv(k, "")
	}
	t.Setenv("AGENTD_TEST_HTTP_TOKEN", "a-test-token-long-enough-for-the-listener-0123456789")
	files, err := filepath.Glob("testdata/check_*.toml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no configs: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".toml")
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"--check-config", "--config", file}, &stdout, &stderr, nil)
			got := fmt.Sprintf("[exit %d]\n--- stdout\n%s--- stderr\n%s", code, stdout.String(), stderr.String())
			testutil.Golden(t, filepath.Join("testdata", name+".golden"), []byte(got))
		})
	}
}

// TestCheckConfigReadsTheServiceSecretsFile: run from a shell, --check-config finds the
// tokens the service gets from agentd.env beside the config (the units' EnvironmentFile),
// and says which are still missing there.
func TestCheckConfigReadsTheServiceSecretsFile(t *testing.T) {
	for _, k := range []string{"SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "DISCORD_BOT_TOKEN"} {
		t.Setenv(k, "")
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "agentd.toml")
	os.WriteFile(conf, []byte("[slack]\nenabled = true\n[discord]\nenabled = true\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "agentd.env"), []byte("# secrets\nSLACK_BOT_TOKEN=xoxb-1\nSLACK_APP_TOKEN=\"xapp-1\"\n"), 0o600)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--check-config", "--config", conf}, &stdout, &stderr, nil)
	if code != 1 || strings.Contains(stderr.String(), "SLACK") || !strings.Contains(stderr.String(), "discord.token_env: discord bot token: $DISCORD_BOT_TOKEN is not set") {
		t.Errorf("exit %d; stderr:\n%s", code, stderr.String())
	}
}

// TestHarden checks that harden clears the dumpable flag.
func TestHarden(t *testing.T) {
	if os.Getenv("AGENTD_HARDEN_CHILD") != "" {
		t.Skip("run as the child of TestHardenEnviron")
	}
	// The flag is the process's: another test that started the daemon in this process
	// (or this one, run again with -count) cleared it. Set it, and put it back after.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0) })
	before, err := dumpable()
	if err != nil || !before {
		t.Fatalf("dumpable before harden: %v, %v; want true", before, err)
	}
	inherited, err := syscall.Dup(2) // dup leaves close-on-exec off, as in an inherited one
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(inherited)
	if err := harden(); err != nil {
		t.Fatal(err)
	}
	if after, err := dumpable(); err != nil || after {
		t.Errorf("dumpable after harden: %v, %v; want false", after, err)
	}
	if flags, err := unix.FcntlInt(uintptr(inherited), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("inherited descriptor flags %#x, %v after harden; want close-on-exec", flags, err)
	}
}

// TestHardenEnviron checks what harden is for: a process of the daemon's uid cannot read
// its environment from /proc. As root that uid could read anything, so the daemon is
// played by this test binary run as uid 65534, hardened or not (the control), and its
// child, of the same uid, reads /proc/$PPID/environ.
func TestHardenEnviron(t *testing.T) {
	if os.Getenv("AGENTD_HARDEN_CHILD") != "" {
		hardenChild()
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the daemon's stand-in as another uid")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755) // and its parent, t.TempDir's own: the stand-in must reach the binary
	os.Chmod(filepath.Dir(dir), 0o755)
	bin := filepath.Join(dir, "agentd.test")
	copyFile(t, exe, bin)
	for _, tt := range []struct {
		name, harden, want string
	}{
		{"hardened", "1", "environ: denied"},
		{"control_not_hardened", "0", "environ: AGENTD_TEST_TOKEN=xoxb-secret"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bin, "-test.run=^TestHardenEnviron$")
			cmd.Env = []string{"AGENTD_HARDEN_CHILD=" + tt.harden, "AGENTD_TEST_TOKEN=xoxb-secret", "PATH=/usr/bin:/bin"}
			cmd.Dir = dir
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), tt.want) {
				t.Errorf("got %v:\n%s\nwant %q", err, out, tt.want)
			}
		})
	}
}

// hardenChild is the daemon's stand-in: hardened or not, it has a child of its uid read
// its environment, and prints what it got.
func hardenChild() {
	if os.Getenv("AGENTD_HARDEN_CHILD") == "1" {
		if err := harden(); err != nil {
			panic(err)
		}
	}
	out, err := exec.Command("/bin/cat", "/proc/"+strconv.Itoa(os.Getpid())+"/environ").Output()
	if err != nil {
		os.Stdout.WriteString("environ: denied\n")
		return
	}
	for _, v := range strings.Split(string(out), "\x00") {
		if strings.HasPrefix(v, "AGENTD_TEST_TOKEN=") {
			os.Stdout.WriteString("environ: " + v + "\n")
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// dumpable reports the flag harden clears.
func dumpable() (bool, error) {
	v, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	return v != 0, err
}
