package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/daemon/config"
)

// TestTokenFileCheck: real token files with real modes. One that group or others may
// read or write fails, naming the file, its key, its mode and the chmod that fixes it.
func TestTokenFileCheck(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mode    os.FileMode // of the Slack bot token file; 0: it does not exist
		enabled bool
		want    string // status, then what the detail and the fix name ("|" between)
	}{
		{"private", 0o600, true, "ok mode 0600|"},
		{"owner_read_only", 0o400, true, "ok mode 0400|"},
		{"world_readable", 0o644, true, "fail $ (slack.bot_token_file) has mode 0644|chmod 600 $"},
		{"group_readable", 0o640, true, "fail has mode 0640|chmod 600 $"},
		{"others_writable", 0o602, true, "fail has mode 0602|chmod 600 $"},
		{"open_while_the_bot_is_off", 0o644, false, "fail has mode 0644|chmod 600 $"},
		{"missing_is_said_by_the_bots_check", 0, true, ""},
		{"missing_while_the_bot_is_off", 0, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "slack-bot.token")
			if tc.mode != 0 {
				if err := os.WriteFile(path, []byte("xoxb-test"), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(path, tc.mode); err != nil {
					t.Fatal(err)
				}
			}
			cfg := config.Default()
			cfg.Slack.Enabled, cfg.Slack.BotTokenFile = tc.enabled, path
			checks := tokenFileCheck(cfg)(context.Background())
			if tc.want == "" {
				if len(checks) != 0 {
					t.Fatalf("checks = %+v, want none", checks)
				}
				return
			}
			if len(checks) != 1 {
				t.Fatalf("checks = %+v, want one", checks)
			}
			c := checks[0]
			status, names, _ := strings.Cut(strings.ReplaceAll(tc.want, "$", path), " ")
			inDetail, inFix, _ := strings.Cut(names, "|")
			if c.Status != status || !strings.Contains(c.Detail, inDetail) || !strings.Contains(c.Fix, inFix) {
				t.Errorf("check = %+v\nwant %s, naming %q and %q", c, status, inDetail, inFix)
			}
			if strings.Contains(c.Detail+c.Fix, "xoxb-test") {
				t.Errorf("the check shows the token: %+v", c)
			}
		})
	}
	if tokenFileCheck(config.Default()) != nil {
		t.Error("a config without token files has a token file check")
	}
}
