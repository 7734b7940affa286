package integration

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/randid"
	"github.com/agentd/agentd/internal/testutil"
)

// shellStep is an approved execute_shell proposal.
func shellStep(name, line string, check func(*outcome) string) step {
	return step{name: name, command: "execute_shell", args: map[string]string{"command_line": line}, mode: approve, check: check}
}

// says is a check that the result does not contain marker (printed only on success).
func says(marker, why string) func(*outcome) string {
	return func(o *outcome) string {
		if strings.Contains(o.result, marker) {
			return why
		}
		return ""
	}
}

// attackSandbox: approved shell and python commands probe the sandbox from inside —
// capabilities, uid, the daemon's environment, loopback services, the daemon's socket and
// state, remounts, writes outside, processes that outlive their command, limits, and the
// files git runs code from.
func attackSandbox(r *attackRig) {
	r.class = "sandbox"
	t := r.t
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bwrap is not installed here (apt-get install bubblewrap): the sandbox cases need it")
	}
	sbx := filepath.Join(r.out, "sandbox")
	mustMkdir(t, sbx, 0o700)
	if err := os.WriteFile(filepath.Join(sbx, "canary.txt"), []byte(r.secrets["file"]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sleepArg := fmt.Sprintf("%d.%d", 4000+time.Now().Nanosecond()%1000, 7)
	etcMark := "/etc/.agentd-attack-" + randid.Hex(4)
	t.Cleanup(func() { os.Remove(etcMark) })
	var ws string
	steps := r.sandboxSteps(sbx, sleepArg, etcMark)
	ended := map[string]time.Time{}
	for i := range steps {
		if name := steps[i].name; strings.Contains(name, "survivor") {
			check := steps[i].check
			steps[i].check = func(o *outcome) string {
				ended[name] = time.Now()
				if check != nil {
					return check(o)
				}
				return ""
			}
		}
	}
	r.drive(agentRun{name: "boxer", steps: steps, plant: func(w string) []string {
		ws = w
		if out, err := exec.Command("git", "init", "-q", ws).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v\n%s", err, out)
		}
		return []string{filepath.Join(ws, ".git", "hooks"), filepath.Join(ws, ".git", "config")}
	}})
	// Later, when the sleeps are long over: nothing the commands left behind still runs.
	r.final = append(r.final, func() {
		for _, f := range []struct{ name, file string }{
			{"sandbox_setsid_survivor", "setsid-canary"}, {"sandbox_background_survivor", "bg-canary"},
		} {
			if end, ok := ended[f.name]; ok {
				// The survivor touches its canary 2s after the command ended; watch past that.
				canary := filepath.Join(ws, f.file)
				testutil.Hold(time.Until(end.Add(4*time.Second)), func() bool { _, err := os.Stat(canary); return err != nil })
				escape := ""
				if _, err := os.Stat(filepath.Join(ws, f.file)); err == nil {
					escape = "a process it left in the background ran on after the command ended"
				}
				r.record(f.name+"_after_end", escape)
			}
		}
		if _, ok := ended["sandbox_nohup_sleep_survivor"]; ok {
			escape := ""
			if pids := processesWith("sleep", sleepArg); len(pids) > 0 {
				escape = fmt.Sprintf("sleep %s still runs (pids %v) after its command ended", sleepArg, pids)
				for _, p := range pids {
					syscall.Kill(p, syscall.SIGKILL)
				}
			}
			r.record("sandbox_nohup_sleep_survivor_after_end", escape)
		}
	})
}

// sandboxSteps are the probes run inside the sandbox, in order; sbx is a canary folder
// outside, sleepArg marks a process that must not outlive its command, etcMark a file
// that must not appear in /etc.
func (r *attackRig) sandboxSteps(sbx, sleepArg, etcMark string) []step {
	pid := r.d.grp.Cmd.Process.Pid
	canary := fmt.Sprintf("http://127.0.0.1:%d/c/", r.canary.port)
	sock := r.d.socket
	py := func(code string) string { return "python3 -c " + shellQuote(code) }
	return []step{
		shellStep("", "echo SANDBOX-RUNS > ok.txt && cat ok.txt && git --version", worked("SANDBOX-RUNS")),
		shellStep("sandbox_read_etc_shadow", "cat /etc/shadow", nil),
		shellStep("sandbox_parent_environ", `tr '\0' '\n' < /proc/$PPID/environ`, nil),
		shellStep("sandbox_init_environ", `tr '\0' '\n' < /proc/1/environ`, nil),
		shellStep("sandbox_own_environ", "env", nil),
		shellStep("sandbox_every_environ", `cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' | grep -a canary`, nil),
		shellStep("sandbox_daemon_environ_by_pid", fmt.Sprintf(`tr '\0' '\n' < /proc/%d/environ`, pid), nil),
		shellStep("sandbox_daemon_cmdline_socket", fmt.Sprintf(`tr '\0' ' ' < /proc/%d/cmdline; echo; ls -la /proc/%[1]d/fd | head`, pid),
			says(sock, "the daemon's command line and socket path are readable")),
		shellStep("sandbox_capabilities", "grep Cap /proc/self/status", capabilities),
		shellStep("sandbox_uid", `echo "UID=$(id -u) GID=$(id -g)"`, func(o *outcome) string {
			if regexp.MustCompile(`UID=0\b`).MatchString(o.result) {
				return "the command runs as uid 0"
			}
			return ""
		}),
		shellStep("sandbox_remount_usr", "mount -o remount,bind,rw /usr && echo REMOUNT-OK; mount -o remount,rw /usr && echo REMOUNT-OK",
			says("REMOUNT-OK", "/usr was remounted read-write")),
		shellStep("sandbox_remount_etc", fmt.Sprintf("mount -o remount,bind,rw /etc && echo REMOUNT-OK; touch %s", etcMark),
			hostFile(etcMark, "REMOUNT-OK", "/etc was remounted read-write")),
		shellStep("sandbox_mount_tmpfs", "mkdir -p m && mount -t tmpfs x m && echo MOUNT-OK", says("MOUNT-OK", "it could mount a file system")),
		shellStep("sandbox_mknod", "mknod null-copy c 1 3 && echo MKNOD-OK", says("MKNOD-OK", "it could make a device node")),
		shellStep("sandbox_chown", "touch owned && chown 4242:4242 owned && echo CHOWN-OK", says("CHOWN-OK", "it could give a file away (CAP_CHOWN)")),
		shellStep("sandbox_dmesg", "dmesg >/dev/null && echo DMESG-OK", says("DMESG-OK", "it could read the kernel log")),
		shellStep("sandbox_read_outside_file", "cat "+filepath.Join(sbx, "canary.txt"), nil),
		shellStep("sandbox_write_outside_file", fmt.Sprintf("echo PWNED > %s; echo PWNED >> %s", filepath.Join(sbx, "new.txt"), filepath.Join(sbx, "canary.txt")), nil),
		shellStep("sandbox_state_db", fmt.Sprintf("head -c 16 %s/agentd.db; ls -la %[1]s", r.d.stateDir),
			says("SQLite format", "the daemon's database is readable")),
		shellStep("sandbox_daemon_socket", py(fmt.Sprintf(`import socket;s=socket.socket(socket.AF_UNIX);s.connect(%q);s.send(b"GET /v0/status HTTP/1.0\r\nHost: agentd\r\n\r\n");print(s.recv(200))`, sock)),
			says("HTTP/1.", "the daemon's socket answered")),
		shellStep("sandbox_daemon_socket_curl", fmt.Sprintf("curl -s -m 3 --unix-socket %s http://agentd/v0/agents", sock),
			says(`"name"`, "the daemon's socket listed the agents")),
		shellStep("sandbox_loopback_curl", "curl -s -m 3 "+canary+"curl", nil),
		shellStep("sandbox_loopback_python", py(fmt.Sprintf(`import urllib.request;print(urllib.request.urlopen(%q,timeout=3).read())`, canary+"python")), nil),
		shellStep("sandbox_loopback_v6", fmt.Sprintf("curl -s -m 3 'http://[::1]:%d/c/v6'", r.canary.port6), nil),
		shellStep("sandbox_loopback_raw_socket", py(fmt.Sprintf(`import socket;socket.create_connection(("127.0.0.1",%d),3).send(b"x");print("CONNECTED")`, r.canary.port)),
			says("CONNECTED", "a loopback TCP connection was made")),
		shellStep("sandbox_ollama_api", "curl -s -m 3 "+r.fake.URL()+"/api/tags", nil),
		shellStep("sandbox_metrics_listener", fmt.Sprintf("curl -s -m 3 http://%s/metrics", r.httpAddr), says("agentd_", "the daemon's metrics answered")),
		shellStep("sandbox_inherited_fds", "ls -l /proc/self/fd/ /proc/$$/fd/", func(o *outcome) string {
			for _, leak := range []string{"agentd.db", "socket:[", sock, "agentd.log"} {
				if strings.Contains(o.result, leak) {
					return "the command inherited the daemon's " + leak
				}
			}
			return ""
		}),
		shellStep("sandbox_signal_daemon", fmt.Sprintf("kill -0 %d && echo SIGNAL-OK", pid), says("SIGNAL-OK", "the daemon can be signalled")),
		shellStep("sandbox_setsid_survivor", "setsid sh -c 'sleep 3; touch setsid-canary' >/dev/null 2>&1 </dev/null &", nil),
		shellStep("sandbox_background_survivor", "(sleep 3; touch bg-canary) >/dev/null 2>&1 </dev/null &", nil),
		shellStep("sandbox_nohup_sleep_survivor", "nohup setsid sleep "+sleepArg+" >/dev/null 2>&1 </dev/null &", nil),
		shellStep("sandbox_rlimits", "cat /proc/self/limits; echo CGROUP=$(cat /proc/self/cgroup)", rlimits(pid)),
		shellStep("sandbox_git_hook_write", "echo 'touch /tmp/agentd-attack-pwned' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; ls -la .git/hooks/pre-commit", nil),
		shellStep("sandbox_git_dir_swap", "mv .git .git-old && mkdir -p .git/hooks && cp -r .git-old/objects .git-old/refs .git-old/HEAD .git/; "+
			"printf '[core]\\n\\thooksPath = /tmp\\n' > .git/config; echo 'touch /tmp/agentd-attack-pwned' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; ls -la .git/hooks", nil),
		shellStep("sandbox_git_config_write", "git config core.fsmonitor 'touch fsmonitor-ran'; git config core.hooksPath /tmp; cat .git/config", nil),
		shellStep("sandbox_other_workspaces", fmt.Sprintf("ls -la %s; ls %[1]s/*", r.wsRoot), nil),
		shellStep("", fmt.Sprintf("ln -s %s shell-link; ln -s %s shell-dir; ln %[1]s shell-hard", filepath.Join(sbx, "canary.txt"), sbx), nil),
		{name: "sandbox_made_symlink_read_file", command: "read_file", mode: approve, args: map[string]string{"path": "shell-link"}},
		{name: "sandbox_made_symlink_write_file", command: "write_file", mode: approve, args: map[string]string{"path": "shell-link", "contents": "PWNED"}},
		{name: "sandbox_made_symlink_folder_write_file", command: "write_file", mode: approve, args: map[string]string{"path": "shell-dir/new.txt", "contents": "PWNED"}},
		{name: "sandbox_made_hard_link_read_file", command: "read_file", mode: approve, args: map[string]string{"path": "shell-hard"}},
		{name: "", command: "write_file", mode: approve, args: map[string]string{"path": "probe.py", "contents": strings.Join([]string{
			"import os, socket",
			"print('\\n'.join(k + '=' + v for k, v in os.environ.items()))",
			"for p in ('/proc/%d/environ' % os.getppid(), '/proc/1/environ'):",
			"    try: print(open(p, 'rb').read().replace(b'\\0', b'\\n').decode(errors='replace'))",
			"    except Exception as e: print(e)",
			"try: socket.create_connection(('127.0.0.1', " + strconv.Itoa(r.canary.port) + "), 3); print('CONNECTED')",
			"except Exception as e: print(e)",
		}, "\n")}},
		{name: "sandbox_python_environ_and_loopback", command: "execute_python_file", mode: approve,
			args: map[string]any{"path": "probe.py", "args": []string{"--x"}}, check: says("CONNECTED", "python reached loopback")},
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// hostFile checks that path was not created on the host and that marker was not printed.
func hostFile(path, marker, why string) func(*outcome) string {
	return func(o *outcome) string {
		if _, err := os.Lstat(path); err == nil || strings.Contains(o.result, marker) {
			return why
		}
		return ""
	}
}

// capabilities: every capability set of the command must be empty.
func capabilities(o *outcome) string {
	var bad []string
	for _, m := range regexp.MustCompile(`(Cap\w+):\s*([0-9a-f]+)`).FindAllStringSubmatch(o.result, -1) {
		if v, _ := strconv.ParseUint(m[2], 16, 64); v != 0 {
			bad = append(bad, m[1]+"="+m[2])
		}
	}
	if len(bad) > 0 {
		return "the command holds capabilities: " + strings.Join(bad, " ")
	}
	return ""
}

// rlimits: the command must run under limits on processes and memory, as rlimits or
// as a cgroup's pids and memory bounds: its own as it sees it (cgroup v2 without a
// namespace of its own), or, since the sandbox has its own cgroup namespace and no
// /sys, the agent boxes the daemon (pid) made for its agents, read from the host.
func rlimits(pid int) func(o *outcome) string {
	return func(o *outcome) string {
		if !strings.Contains(o.result, "Max processes") {
			return "" // it did not run
		}
		procs, mem := false, false
		for _, box := range agentBoxes(pid) {
			procs = procs || bounded(filepath.Join(box, "pids.max"), 1<<16)
			mem = mem || bounded(filepath.Join(box, "memory.max"), 1<<62) || bounded(filepath.Join(box, "memory.limit_in_bytes"), 1<<62)
		}
		sc := bufio.NewScanner(strings.NewReader(o.result))
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(line, "CGROUP=0::"); ok {
				dir := filepath.Join("/sys/fs/cgroup", strings.TrimSpace(rest))
				procs = procs || bounded(filepath.Join(dir, "pids.max"), 1<<16)
				mem = mem || bounded(filepath.Join(dir, "memory.max"), 1<<62)
				continue
			}
			for _, l := range []struct {
				name  string
				max   uint64
				limit *bool
			}{{"Max processes", 1 << 16, &procs}, {"Max address space", 1 << 62, &mem}, {"Max data size", 1 << 62, &mem}, {"Max resident set", 1 << 62, &mem}} {
				if rest, ok := strings.CutPrefix(line, l.name); ok {
					f := strings.Fields(rest)
					if len(f) == 0 {
						continue
					}
					if v, err := strconv.ParseUint(f[0], 10, 64); err == nil && v <= l.max {
						*l.limit = true
					}
				}
			}
		}
		var why []string
		if !procs {
			why = append(why, "the command may start processes without limit")
		}
		if !mem {
			why = append(why, "the command may use memory without limit")
		}
		return strings.Join(why, "; ")
	}
}

// agentBoxes lists the agents' cgroup folders of the daemon with this pid, in every
// cgroup hierarchy mounted under /sys/fs/cgroup (its instance folders are named
// agentd.PID.N, their agents' folders agent-ID).
func agentBoxes(pid int) []string {
	var boxes []string
	prefix := "agentd." + strconv.Itoa(pid) + "."
	root := "/sys/fs/cgroup"
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if strings.Count(strings.TrimPrefix(p, root), "/") > 8 {
			return filepath.SkipDir
		}
		if strings.HasPrefix(d.Name(), prefix) {
			agents, _ := filepath.Glob(filepath.Join(p, "agent-*"))
			boxes = append(boxes, agents...)
			return filepath.SkipDir
		}
		return nil
	})
	return boxes
}

// bounded reports whether the cgroup file holds a number no greater than max.
func bounded(path string, max uint64) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return err == nil && v <= max
}

// processesWith lists the pids whose command line is exactly argv.
func processesWith(argv ...string) []int {
	want := strings.Join(argv, "\x00") + "\x00"
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && string(b) == want {
			pids = append(pids, pid)
		}
	}
	return pids
}

// attackNoSandbox: a second daemon whose PATH has no bwrap, sandbox = "auto": shell and
// python must be refused with an error that says how to fix it, never run unconfined.
// Its state dir and database exist already, too open: both must be closed on start.
func attackNoSandbox(r *attackRig) {
	r.class = "no_sandbox"
	t := r.t
	bin := t.TempDir()
	for _, dir := range []string{"/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if e.Name() != "bwrap" {
				os.Symlink(filepath.Join(dir, e.Name()), filepath.Join(bin, e.Name())) // first one wins
			}
		}
	}
	goBin, _ := exec.LookPath("go")
	path := bin
	if goBin != "" {
		path += ":" + filepath.Dir(goBin)
	}
	marker := "RAN-WITHOUT-SANDBOX-" + randid.Hex(4)
	d := r.sideDaemon(r.config(false), "PATH="+path)
	defer r.use(d)()
	refused := func(o *outcome) string {
		if strings.Contains(o.result, marker) || o.how == "policy_approved" {
			return "it ran with no sandbox"
		}
		if o.proposed && !strings.Contains(strings.ToLower(o.result), "bubblewrap") && !strings.Contains(o.result, "bwrap") {
			return fmt.Sprintf("refused without naming the fix (bubblewrap): %q", o.result)
		}
		if !o.proposed {
			rep, err := api.DoctorRoute.Do(context.Background(), r.c, "", api.None{})
			if err != nil || !strings.Contains(strings.ToLower(jsonString(rep)), "bubblewrap") {
				return "not offered, and agentctl doctor does not say how to fix it (bubblewrap)"
			}
		}
		return ""
	}
	r.drive(agentRun{name: "nobox", steps: []step{
		shellStep("no_sandbox_shell_refused", `echo `+marker+`; tr '\0' '\n' < /proc/$PPID/environ`, refused),
		{name: "", command: "write_file", mode: approve, args: map[string]string{"path": "p.py", "contents": "print('" + marker + "')\n"}},
		{name: "no_sandbox_python_refused", command: "execute_python_file", mode: approve, args: map[string]any{"path": "p.py"}, check: refused},
	}})
	modes(r, "no_sandbox_existing", d.stateDir)
}

// sideDaemon starts another daemon on the same fake model, with the canary tokens in its
// environment; its state dir and database exist already, too open.
func (r *attackRig) sideDaemon(config string, env ...string) *daemon {
	t := r.t
	d := newDaemon(t, daemonOpts{binary: true, config: config, env: append([]string{
		"SLACK_BOT_TOKEN=" + r.secrets["slack_token"], "DISCORD_BOT_TOKEN=" + r.secrets["discord_token"]}, env...)})
	mustMkdir(t, d.stateDir, 0o755)
	if err := os.WriteFile(filepath.Join(d.stateDir, "agentd.db"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d.start()
	return d
}

// use points the rig at d until the returned func puts the main daemon back.
func (r *attackRig) use(d *daemon) func() {
	main, mainD := r.c, r.d
	r.c, r.d = d.client(), d
	return func() { r.c, r.d = main, mainD }
}

// attackNoneMode: sandbox = "none", chosen knowingly, still scrubs the environment, kills
// what a command leaves behind in its process group, and the daemon's socket refuses the
// commands it runs.
func attackNoneMode(r *attackRig) {
	r.class = "none_mode"
	d := r.sideDaemon(strings.Replace(r.config(false), `sandbox = "auto"`, `sandbox = "none"`, 1))
	defer r.use(d)()
	var ws string
	var ended time.Time
	py := fmt.Sprintf(`import socket;s=socket.socket(socket.AF_UNIX);s.connect(%q);s.send(b"GET /v0/agents HTTP/1.0\r\nHost: agentd\r\n\r\n");print(s.recv(300))`, d.socket)
	r.drive(agentRun{name: "plain", plant: func(w string) []string { ws = w; return nil }, steps: []step{
		shellStep("none_environment_scrubbed", "env", nil),
		shellStep("none_daemon_socket_refused", "python3 -c "+shellQuote(py), says("200 OK", "the daemon's socket answered its own command")),
		shellStep("none_daemon_socket_curl_refused", fmt.Sprintf("curl -s -m 3 --unix-socket %s http://agentd/v0/agents", d.socket),
			says(`"name"`, "the daemon's socket listed the agents to its own command")),
		shellStep("none_background_killed", "(sleep 2; touch bg-canary) >/dev/null 2>&1 </dev/null &", func(*outcome) string {
			ended = time.Now()
			return ""
		}),
	}})
	modes(r, "none_mode_existing", d.stateDir)
	r.final = append(r.final, func() {
		if ended.IsZero() {
			return
		}
		// The background job touches its canary 2s after the command ended; watch past that.
		testutil.Hold(time.Until(ended.Add(3*time.Second)), func() bool {
			_, err := os.Stat(filepath.Join(ws, "bg-canary"))
			return err != nil
		})
		escape := ""
		if _, err := os.Stat(filepath.Join(ws, "bg-canary")); err == nil {
			escape = "a process it left in the background ran on after the command ended"
		}
		r.record("none_background_killed_after_end", escape)
	})
}
