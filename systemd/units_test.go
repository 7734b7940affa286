package systemd

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var units = []struct {
	file string
	user bool
}{
	{file: "agentd.service"},
	{file: "agentd-user.service", user: true},
}

// parse reads a unit file into section → key → values (a key may repeat).
func parse(t *testing.T, path string) map[string]map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			out[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: not a key=value line in a section: %q", path, n, line)
			}
			out[section][k] = append(out[section][k], v)
		}
	}
	return out
}

// The settings agentd relies on: readiness by sd_notify, systemd-made private state and
// runtime directories (where agentd and agentctl look by default), secrets from an
// environment file, restart on failure, and the sandboxing hardening of the unit.
func TestUnitSettings(t *testing.T) {
	common := map[string]map[string]string{
		"Unit": {"After": "ollama.service", "Wants": "ollama.service"},
		"Service": {"Type": "notify", "NotifyAccess": "main", "Restart": "on-failure", "RestartPreventExitStatus": "78", "StateDirectory": "agentd", "StateDirectoryMode": "0700", "RuntimeDirectory": "agentd", "NoNewPrivileges": "yes", "UMask": "0077", "ExecReload": "/bin/kill -HUP $MAINPID",
			"Delegate": "yes"}, // a cgroup per agent
	}
	system := map[string]map[string]string{
		"Service": {"User": "agentd", "EnvironmentFile": "-/etc/agentd/agentd.env", "ProtectSystem": "strict", "ProtectHome": "yes",
			"PrivateTmp": "yes", "ReadWritePaths": "/var/lib/agentd", "ExecStart": "/usr/local/bin/agentd --config /etc/agentd/agentd.toml"},
		"Install": {"WantedBy": "multi-user.target"},
	}
	user := map[string]map[string]string{
		"Service": {"EnvironmentFile": "-%E/agentd/agentd.env", "ExecStart": "%h/.local/bin/agentd"},
		"Install": {"WantedBy": "default.target"},
	}
	for _, u := range units {
		t.Run(u.file, func(t *testing.T) {
			got := parse(t, u.file)
			check := func(want map[string]map[string]string) {
				for sec, kv := range want {
					for k, v := range kv {
						vals := got[sec][k]
						if !strings.Contains(strings.Join(vals, " "), v) {
							t.Errorf("[%s] %s = %q, want it to contain %q", sec, k, vals, v)
						}
					}
				}
			}
			check(common)
			if u.user {
				check(user)
				// PrivateTmp and ProtectSystem need privileges a user manager lacks on many machines.
				for _, k := range []string{"PrivateTmp", "ProtectSystem", "User"} {
					if _, ok := got["Service"][k]; ok {
						t.Errorf("the user unit sets %s, which a user manager cannot always honour", k)
					}
				}
			} else {
				check(system)
				// bubblewrap (execute_shell's sandbox) needs user namespaces.
				for _, k := range []string{"RestrictNamespaces", "PrivateUsers"} {
					if _, ok := got["Service"][k]; ok {
						t.Errorf("the system unit sets %s, which breaks execute_shell's bubblewrap sandbox", k)
					}
				}
				// Agents' cgroups are made in the delegated one, which this would make read-only.
				if v := got["Service"]["ProtectControlGroups"]; len(v) > 0 && v[0] != "no" {
					t.Errorf("the system unit sets ProtectControlGroups=%s: agentd could not make agents' cgroups in its delegated one", v[0])
				}
			}
		})
	}
}

// TestUnitsVerify runs systemd-analyze verify on each unit, with ExecStart pointed at an
// executable that exists here; any warning fails the test.
func TestUnitsVerify(t *testing.T) {
	tool, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed")
	}
	for _, u := range units {
		t.Run(u.file, func(t *testing.T) {
			b, err := os.ReadFile(u.file)
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			for _, l := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(l, "ExecStart=") {
					l = "ExecStart=/bin/true"
				}
				lines = append(lines, l)
			}
			dir := t.TempDir()
			path := filepath.Join(dir, "agentd.service")
			if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"verify", path}
			cmd := exec.Command(tool)
			if u.user {
				args = append([]string{"--user"}, args...)
				runtime := filepath.Join(dir, "run")
				os.Mkdir(runtime, 0o700)
				cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+runtime)
			}
			cmd.Args = append(cmd.Args, args...)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err = cmd.Run()
			// Units this one orders itself after may be missing here (ollama.service).
			var problems []string
			for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				if l != "" && !strings.Contains(l, "ollama.service") && !strings.Contains(l, "network-online.target") {
					problems = append(problems, l)
				}
			}
			if err != nil || len(problems) > 0 {
				t.Errorf("systemd-analyze %s: %v\n%s", strings.Join(args, " "), err, strings.Join(problems, "\n"))
			}
		})
	}
}

// TestInstallScript installs into a temporary root (DESTDIR) for a user and for the
// machine, checks what lands where with which mode, and that a second run keeps the
// config a person edited.
func TestInstallScript(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries")
	}
	env := os.Environ()
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", k, err)
		}
		env = append(env, k+"="+strings.TrimSpace(string(out)))
	}
	run := func(dest string, args ...string) string {
		t.Helper()
		cmd := exec.Command("bash", append([]string{"../scripts/install.sh"}, args...)...)
		cmd.Env = append(env, "DESTDIR="+dest, "HOME=/home/someone", "XDG_CONFIG_HOME=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("install.sh %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	mode := func(path string, want os.FileMode) {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Error(err)
			return
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s has mode %v, want %v", path, fi.Mode().Perm(), want)
		}
	}

	sys := t.TempDir()
	out := run(sys, "--system")
	mode(filepath.Join(sys, "usr/local/bin/agentd"), 0o755)
	mode(filepath.Join(sys, "usr/local/bin/agentctl"), 0o755)
	mode(filepath.Join(sys, "etc/systemd/system/agentd.service"), 0o644)
	mode(filepath.Join(sys, "etc/agentd/agentd.toml"), 0o640)
	mode(filepath.Join(sys, "etc/agentd/agentd.env"), 0o600)
	if !strings.Contains(out, "systemctl enable --now agentd") {
		t.Errorf("install.sh --system does not say how to start the service:\n%s", out)
	}
	if b, _ := os.ReadFile(filepath.Join(sys, "etc/systemd/system/agentd.service")); !bytes.Contains(b, []byte("Type=notify")) {
		t.Error("the installed system unit is not systemd/agentd.service")
	}

	usr := t.TempDir()
	run(usr, "--user")
	home := filepath.Join(usr, "home/someone")
	mode(filepath.Join(home, ".local/bin/agentd"), 0o755)
	mode(filepath.Join(home, ".config/systemd/user/agentd.service"), 0o644)
	cfg := filepath.Join(home, ".config/agentd/agentd.toml")
	mode(cfg, 0o640)
	if err := os.WriteFile(cfg, []byte("# edited\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	out = run(usr, "--user")
	if b, _ := os.ReadFile(cfg); string(b) != "# edited\n" {
		t.Errorf("a second install overwrote the edited config: %q", b)
	}
	if !strings.Contains(out, "keeping the existing") {
		t.Errorf("install.sh does not say it kept the config:\n%s", out)
	}

	cmd := exec.Command("bash", "../scripts/install.sh", "--bogus")
	cmd.Env = env
	if b, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(b), "unknown option --bogus") {
		t.Errorf("install.sh --bogus = %v\n%s", err, b)
	}
}
