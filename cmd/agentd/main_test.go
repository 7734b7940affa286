package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
