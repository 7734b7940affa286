package scripts_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/fakediscord"
	"github.com/agentd/agentd/internal/fakeslack"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/testutil"
)

// TestInstalledDaemonStartsWithItsFiles: scripts/install.sh --user into a temporary root
// writes the binaries, the unit, the config and the secrets file the unit reads; a person
// who fills in the secrets file's examples and enables [slack] and [discord] gets an
// agentd, started as the unit starts it, whose two bots connect.
func TestInstalledDaemonStartsWithItsFiles(t *testing.T) {
	tmp := testutil.ShortTempDir(t)
	home, dest := filepath.Join(tmp, "home"), filepath.Join(tmp, "root")
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	// A fresh HOME, but Go's own caches as they are: the build reuses what is compiled.
	env := append(cleanEnv(), "HOME="+home, "DESTDIR="+dest, "AGENTD_LOGS="+filepath.Join(tmp, "logs"))
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		env = append(env, k+"="+goEnv(t, k))
	}
	env = slices.DeleteFunc(env, func(kv string) bool {
		return strings.HasPrefix(kv, "XDG_CONFIG_HOME=") || strings.HasPrefix(kv, "XDG_CACHE_HOME=")
	})
	sh(t, root, env, "", "scripts/install.sh", "--user")

	under := func(p string) string { return filepath.Join(dest, home, p) }
	conf, secrets := under(".config/agentd/agentd.toml"), under(".config/agentd/agentd.env")
	unit := readFile(t, under(".config/systemd/user/agentd.service"))
	// The unit starts the binary installed and reads the secrets file written (%h is
	// HOME, %E is XDG_CONFIG_HOME, ~/.config by default).
	expand := strings.NewReplacer("%h", home, "%E", filepath.Join(home, ".config")).Replace
	start := regexp.MustCompile(`(?m)^ExecStart=(\S+)`).FindStringSubmatch(unit)
	envFile := regexp.MustCompile(`(?m)^EnvironmentFile=-?(\S+)`).FindStringSubmatch(unit)
	if start == nil || filepath.Join(dest, expand(start[1])) != under(".local/bin/agentd") {
		t.Fatalf("the unit's ExecStart %q is not the agentd installed", start)
	}
	if envFile == nil || filepath.Join(dest, expand(envFile[1])) != secrets {
		t.Fatalf("the unit's EnvironmentFile %q is not the secrets file written, %s", envFile, secrets)
	}
	if fi, err := os.Stat(secrets); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secrets file: %v, mode %v; want mode 0600", err, fi.Mode())
	}

	// The person's edits: the tokens in the secrets file's examples, the bots enabled.
	slack := fakeslack.NewFake(t)
	discord := fakediscord.New(fakediscord.Config{Guilds: []fakediscord.Guild{{ID: "500000000000000001", Name: "home"}}})
	t.Cleanup(discord.Close)
	model := ollamatest.NewFake(t)
	tokens := map[string]string{
		"[slack] bot_token_env": slack.BotToken, "[slack] app_token_env": slack.AppToken,
		"[discord] token_env": discord.Token(),
	}
	vars := fillSecrets(t, secrets, tokens)
	toml := readFile(t, conf)
	toml = setInSection(t, toml, "slack", "enabled", "true")
	toml = setInSection(t, toml, "slack", "direct_messages", "true")
	toml = setInSection(t, toml, "discord", "direct_messages", "true")
	toml = setInSection(t, toml, "slack", "api_url", `"`+slack.APIURL()+`"`)
	toml = setInSection(t, toml, "discord", "enabled", "true")
	toml = setInSection(t, toml, "discord", "api_url", `"`+discord.URL()+`"`)
	if err := os.WriteFile(conf, []byte(toml), 0o640); err != nil {
		t.Fatal(err)
	}

	// Started as the unit starts it: its ExecStart, with the secrets file's variables.
	socket := filepath.Join(tmp, "s.sock")
	cmd := exec.Command(under(".local/bin/agentd"), "--config", conf, "--state-dir", filepath.Join(tmp, "state"), "--socket", socket)
	cmd.Env = append(slices.DeleteFunc(cleanEnv(), func(kv string) bool {
		return strings.HasPrefix(kv, "SLACK_") || strings.HasPrefix(kv, "DISCORD_")
	}), append(vars, "OLLAMA_HOST="+model.URL())...)
	var logs testutil.SyncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		<-exited
	})
	c := &api.Client{Socket: socket}
	var bots []api.BotStatus
	connected := func() bool {
		select {
		case err := <-exited:
			t.Fatalf("the installed agentd exited (%v); its log:\n%s", err, logs.String())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, err := api.StatusRoute.Do(ctx, c, "", api.None{})
		if err != nil {
			return false
		}
		bots = st.Bots
		up := 0
		for _, b := range bots {
			if b.State == "connected" {
				up++
			}
		}
		return up == 2
	}
	if !testutil.Wait(2*time.Minute, connected) {
		t.Fatalf("the installed agentd's bots did not both connect: %+v; its log:\n%s", bots, logs.String())
	}
}

// fillSecrets fills in the secrets file's commented examples as a person would: each
// "# NAME=example" under a "# for [section] key:" line that tokens has gets its token,
// uncommented. It returns the file's variables as the unit reads them.
func fillSecrets(t *testing.T, path string, tokens map[string]string) []string {
	t.Helper()
	var out, vars []string
	for_ := regexp.MustCompile(`^# for (\[[a-z_]+\] [a-z_]+):$`)
	example := regexp.MustCompile(`^# ([A-Z][A-Z0-9_]*)=`)
	what, filled := "", map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(readFile(t, path)))
	for sc.Scan() {
		line := sc.Text()
		if m := for_.FindStringSubmatch(line); m != nil {
			what = m[1]
		} else if m := example.FindStringSubmatch(line); m != nil && tokens[what] != "" {
			line = m[1] + "=" + tokens[what]
			filled[what] = true
		}
		out = append(out, line)
		if line != "" && !strings.HasPrefix(line, "#") {
			vars = append(vars, line)
		}
	}
	for w := range tokens {
		if !filled[w] {
			t.Errorf("the secrets file has no example for %s:\n%s", w, readFile(t, path))
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(out, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return vars
}

// setInSection sets key to value in the TOML file's [section], as a person edits it.
func setInSection(t *testing.T, toml, section, key, value string) string {
	t.Helper()
	lines := strings.Split(toml, "\n")
	in := false
	for i, l := range lines {
		if strings.HasPrefix(l, "[") {
			in = l == "["+section+"]"
			continue
		}
		if k, _, ok := strings.Cut(l, "="); in && ok && strings.TrimSpace(k) == key {
			lines[i] = key + " = " + value
			return strings.Join(lines, "\n")
		}
	}
	t.Fatalf("the installed config has no %s in [%s]", key, section)
	return ""
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func goEnv(t *testing.T, key string) string {
	t.Helper()
	out, err := exec.Command("go", "env", key).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", key, err)
	}
	return strings.TrimSpace(string(out))
}
