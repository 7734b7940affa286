package server

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/internal/apitest"
	"github.com/agentd/agentd/internal/fakediscord"
	"github.com/agentd/agentd/internal/fakeslack"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/testutil"
)

func testConfig(t testing.TB, model *ollamatest.Fake, apiURL string) *config.Config {
	cfg := config.Default()
	cfg.StateDir = t.TempDir()
	cfg.Socket = filepath.Join(testutil.ShortTempDir(t), "s.sock")
	cfg.Ollama.Hosts, cfg.Ollama.Model = []config.OllamaHost{{URL: model.URL(), Slots: 1}}, ollamatest.TinyModelName
	cfg.Slack.Enabled = true
	cfg.Slack.APIURL = apiURL
	cfg.Slack.Approvers = []string{"UAPPROVER"}
	cfg.Slack.Channels = map[string]config.ChatAccess{"C0123ABCD": {}}
	return cfg
}

// runDaemon starts the daemon and returns a stop func that reports Run's error.
func runDaemon(t testing.TB, cfg *config.Config, log *slog.Logger) func() error {
	return runDaemonWith(t, cfg, log, Options{})
}

// runDaemonWith is runDaemon with opt's hooks (its Version and Ready are set here).
func runDaemonWith(t testing.TB, cfg *config.Config, log *slog.Logger, opt Options) func() error {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	opt.Version, opt.Ready = "test", func() { close(ready) }
	go func() { done <- Run(ctx, cfg, log, opt) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("the daemon did not start: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the daemon did not start")
	}
	return func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("the daemon did not stop")
			return nil
		}
	}
}

// startedInThread waits until the bot says in the thread of ts in C0123ABCD that a run started.
func startedInThread(fs *fakeslack.Fake, ts string) bool {
	return fs.Wait(10*time.Second, func(v fakeslack.View) bool {
		return slices.ContainsFunc(v.Messages("C0123ABCD", ts), func(m fakeslack.Message) bool { return strings.Contains(m.Text, "is on it") })
	})
}

func TestSlackBotRunsInsideTheDaemon(t *testing.T) {
	fs := fakeslack.NewFake(t)
	model := ollamatest.NewFake(t)
	cfg := testConfig(t, model, fs.APIURL())
	t.Setenv("TEST_SLACK_BOT_TOKEN", fs.BotToken)
	cfg.Slack.BotTokenEnv = "TEST_SLACK_BOT_TOKEN"
	cfg.Slack.AppTokenFile = filepath.Join(t.TempDir(), "app-token")
	os.WriteFile(cfg.Slack.AppTokenFile, []byte(fs.AppToken+"\n"), 0o600)
	logs := &testutil.SyncBuffer{}
	stop := runDaemon(t, cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))

	_, ts := fs.Mention("UAPPROVER", "C0123ABCD", "", "write a note")
	if !startedInThread(fs, ts) {
		t.Fatalf("no run started from Slack; logs:\n%s", logs)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{fs.BotToken, fs.AppToken} {
		if strings.Contains(logs.String(), secret) {
			t.Error("a Slack token is in the daemon's logs")
		}
	}
}

func TestDaemonRunsWhileSlackIsDown(t *testing.T) {
	model := ollamatest.NewFake(t)
	cfg := testConfig(t, model, "http://127.0.0.1:1/api/") // nothing listens there
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-unreachable")
	t.Setenv("SLACK_APP_TOKEN", "xapp-unreachable")
	logs := &testutil.SyncBuffer{}
	stop := runDaemon(t, cfg, slog.New(slog.NewTextHandler(logs, nil)))
	// The daemon keeps serving while the bot retries; stop it once a retry is logged.
	testutil.Wait(10*time.Second, func() bool { return strings.Contains(logs.String(), "auth.test failed; retrying") })
	if err := stop(); err != nil {
		t.Fatalf("the daemon failed because Slack is down: %v", err)
	}
	if !strings.Contains(logs.String(), "auth.test failed; retrying") {
		t.Errorf("no retry logged:\n%s", logs)
	}
}

func TestSlackAndDiscordShareTheDaemon(t *testing.T) {
	fs := fakeslack.NewFake(t)
	fd := fakediscord.Start(t, fakediscord.Config{HeartbeatInterval: 100 * time.Millisecond, Guilds: []fakediscord.Guild{{
		ID: "500000000000000001", Name: "home", Channels: []fakediscord.Channel{{ID: "500000000000000002", Name: "agents"}},
		Members: []fakediscord.Member{{User: &fakediscord.User{ID: "500000000000000003", Username: "alice"}}},
	}}})
	fd.Use(t)
	model := ollamatest.NewFake(t)
	cfg := testConfig(t, model, fs.APIURL())
	t.Setenv("SLACK_BOT_TOKEN", fs.BotToken)
	t.Setenv("SLACK_APP_TOKEN", fs.AppToken)
	t.Setenv("TEST_DISCORD_TOKEN", fd.Token())
	cfg.Discord.Enabled, cfg.Discord.TokenEnv, cfg.Discord.APIURL = true, "TEST_DISCORD_TOKEN", fd.URL()
	cfg.Discord.Guilds = []string{"500000000000000001"}
	cfg.Discord.Approvers = []string{"500000000000000003"}
	cfg.Discord.Channels = map[string]config.DiscordAccess{"500000000000000002": {}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	logs := &testutil.SyncBuffer{}
	stop := runDaemon(t, cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fd.WaitFrameFrom(ctx, 0, fakediscord.Op(fakediscord.OpIdentify))
	if err := fd.Settle(ctx); err != nil { // connected, and past discordgo's start-up race
		t.Fatalf("the Discord bot did not connect: %v; logs:\n%s", err, logs)
	}
	_, ts := fs.Mention("UAPPROVER", "C0123ABCD", "", "write a note")
	m, err := fd.Post("500000000000000002", fakediscord.User{ID: "500000000000000003", Username: "alice"}, "<@"+fd.BotUser().ID+"> write another note")
	if err != nil {
		t.Fatal(err)
	}
	if !startedInThread(fs, ts) {
		t.Fatalf("no run started from Slack; logs:\n%s", logs)
	}
	if _, err := fd.WaitCall(ctx, func(c fakediscord.Call) bool {
		return c.Method == "POST" && c.Path == "/channels/"+m.ID+"/messages" && strings.Contains(string(c.Body), "is on it")
	}); err != nil {
		t.Fatalf("no run started from Discord: %v; logs:\n%s", err, logs)
	}
	// agentctl status and doctor show both connections.
	c := &api.Client{Socket: cfg.Socket}
	st, err := api.StatusRoute.Do(ctx, c, "", api.None{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Bots) != 2 || st.Bots[0].Platform != "discord" || st.Bots[0].State != "connected" ||
		st.Bots[1].Platform != "slack" || st.Bots[1].State != "connected" {
		t.Errorf("status bots = %+v", st.Bots)
	}
	rep, err := api.DoctorRoute.Do(ctx, c, "", api.None{})
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, ch := range rep.Checks {
		if (ch.Name == "discord" || ch.Name == "slack") && ch.Status == api.CheckOK && strings.HasPrefix(ch.Detail, "connected since") {
			found++
		}
	}
	if found != 2 {
		t.Errorf("doctor = %+v", rep.Checks)
	}
	fd.Settle(ctx)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), fd.Token()) {
		t.Error("the Discord token is in the daemon's logs")
	}
}

// TestBotWithoutItsTokensDoesNotStart: an enabled bot whose tokens are missing is not
// started, said once in the log with every secret it lacks; the daemon serves on (agents,
// the other bot), and status and doctor name each missing secret with its fix. (A daemon
// that exited instead was restarted every 2 s by systemd, naming one token each time.)
func TestBotWithoutItsTokensDoesNotStart(t *testing.T) {
	fs := fakeslack.NewFake(t)
	model := ollamatest.NewFake(t)
	cfg := testConfig(t, model, fs.APIURL())
	t.Setenv("SLACK_BOT_TOKEN", fs.BotToken)
	t.Setenv("SLACK_APP_TOKEN", fs.AppToken)
	t.Setenv("DISCORD_BOT_TOKEN", "")
	cfg.Discord.Enabled, cfg.Discord.DirectMessages = true, true
	cfg.Discord.TokenFile = filepath.Join(t.TempDir(), "missing-discord-token")
	logs := &testutil.SyncBuffer{}
	stop := runDaemon(t, cfg, slog.New(slog.NewTextHandler(logs, nil)))
	defer stop()

	c := &api.Client{Socket: cfg.Socket}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var st *api.Status
	testutil.Eventually(t, time.Minute, "slack to connect", func() bool {
		var err error
		st, err = api.StatusRoute.Do(ctx, c, "", api.None{})
		return err == nil && len(st.Bots) == 2 && st.Bots[1].State == "connected"
	})
	if b := st.Bots[0]; b.Platform != "discord" || b.State != "not started" || !strings.Contains(b.Error, "missing-discord-token") {
		t.Errorf("status of the discord bot = %+v", b)
	}
	if _, err := api.CreateAgentRoute.Do(ctx, c, "", api.CreateAgentRequest{Name: "still-works"}); err != nil {
		t.Errorf("the daemon without its discord bot refuses agents: %v", err)
	}
	rep, err := api.DoctorRoute.Do(ctx, c, "", api.None{})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, ch := range rep.Checks {
		if ch.Name == "discord" {
			found = true
			if ch.Status != api.CheckFail || !strings.Contains(ch.Detail, "not started: discord bot token") ||
				!strings.Contains(ch.Fix, "umask 077; cat > "+cfg.Discord.TokenFile) {
				t.Errorf("doctor's discord check = %+v", ch)
			}
		}
	}
	if !found {
		t.Errorf("doctor has no discord check: %+v", rep.Checks)
	}
	if n := strings.Count(logs.String(), "discord bot not started"); n != 1 {
		t.Errorf("the log says %d times that the discord bot did not start, want once:\n%s", n, logs)
	}
}

func TestBotChecks(t *testing.T) {
	now := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	got := botChecks([]api.BotStatus{
		{Platform: "discord", State: "reconnecting", Since: now.Add(-time.Minute), Attempt: 3, Error: "no heartbeat ACK for 61s"},
		{Platform: "slack", State: "connecting", Since: now.Add(-time.Second)},
		{Platform: "slack", State: "connecting", Since: now.Add(-time.Minute)},
		{Platform: "slack", State: "connected", Since: now.Add(-time.Hour)},
	}, now)
	want := []api.Check{
		{Name: "discord", Status: api.CheckFail, Detail: "reconnecting since 2026-11-21T08:59:00Z (attempt 3): no heartbeat ACK for 61s", Fix: fixFor("discord")},
		{Name: "slack", Status: api.CheckWarn, Detail: "connecting"},
		{Name: "slack", Status: api.CheckFail, Detail: "connecting since 2026-11-21T08:59:00Z", Fix: fixFor("slack")},
		{Name: "slack", Status: api.CheckOK, Detail: "connected since 2026-11-21T08:00:00Z"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("botChecks =\n%+v\nwant\n%+v", got, want)
	}
}

// noGroups answers every group lookup with no: only listed users are approvers.
type noGroups struct{}

func (noGroups) InGroup(context.Context, string, string) (bool, error) { return false, nil }

// Approvers pasted as mentions are read as the ids they name, so they match; one that
// names no id is a config error naming the fix, never an entry that silently never matches.
func TestRulesReadPastedMentions(t *testing.T) {
	for _, tc := range []struct {
		name       string
		slack      []string
		discord    [2][]string // approvers, approver_roles
		wantUsers  []string
		wantGroups []string
		wantErr    string
	}{
		{name: "slack_plain_ids", slack: []string{"U1", "S2"}, wantUsers: []string{"U1"}, wantGroups: []string{"S2"}},
		{name: "slack_user_mention", slack: []string{"<@U1>", "<@U2|ann>"}, wantUsers: []string{"U1", "U2"}},
		{name: "slack_group_mention", slack: []string{"<!subteam^S9|@ops>"}, wantGroups: []string{"S9"}},
		{name: "slack_at_name", slack: []string{"@ann"}, wantErr: `[slack] approvers: approver "@ann" is not a user, role or group id`},
		{name: "slack_broken_mention", slack: []string{"<@>"}, wantErr: "write the id itself"},
		{name: "discord_mentions", discord: [2][]string{{"<@11>", "<@!12>", "<@&13>"}, {"14", "<@&15>"}},
			wantUsers: []string{"11", "12"}, wantGroups: []string{"13", "14", "15"}},
		{name: "discord_name", discord: [2][]string{nil, {"@admins"}}, wantErr: "[discord] approver_roles: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r bots.Rules
			var err error
			if tc.slack != nil {
				r, err = slackRules(&config.SlackConfig{Approvers: tc.slack})
			} else {
				r, err = discordRules(&config.DiscordConfig{Approvers: tc.discord[0], ApproverRoles: tc.discord[1]})
			}
			if testutil.WantErr(t, err, tc.wantErr) {
				return
			}
			if !reflect.DeepEqual(r.Approvers.Users, tc.wantUsers) || !reflect.DeepEqual(r.Approvers.Groups, tc.wantGroups) {
				t.Errorf("approvers = %+v, want users %v groups %v", r.Approvers, tc.wantUsers, tc.wantGroups)
			}
			for _, u := range tc.wantUsers {
				if ok, _ := r.Allowed(context.Background(), noGroups{}, "C1", "", u); !ok {
					t.Errorf("%s configured as a mention may not decide", u)
				}
			}
		})
	}
	_, err := slackRules(&config.SlackConfig{Channels: map[string]config.ChatAccess{"C1": {Approvers: []string{"<#C1>"}}}})
	if err == nil || !strings.Contains(err.Error(), "[slack.channels.C1] approvers") {
		t.Errorf("a channel's bad approver: err = %v, want it to name the channel", err)
	}
}

// TestReloadRestartsTheSlackBot: a reload that changes a [slack] key restarts the bot (it
// connects again) and a proposal posted before stays decidable from its thread; a reload
// that changes nothing of the bots keeps the connection; a rotated token file restarts
// the bot though no key changed; a token file gone is refused, the bot running on.
func TestReloadRestartsTheSlackBot(t *testing.T) {
	fs := fakeslack.NewFake(t)
	dir := t.TempDir()
	botFile, appFile := filepath.Join(dir, "bot-token"), filepath.Join(dir, "app-token")
	writeTokens := func(bot, app string) {
		t.Helper()
		for f, v := range map[string]string{botFile: bot, appFile: app} {
			if err := os.WriteFile(f, []byte(v+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	writeTokens(fs.BotToken, fs.AppToken)
	const channel, approver = "C0123ABCD", "UAPPROVER"
	body := func(approvers string) string {
		return fmt.Sprintf("model = \"m1\"\n[slack]\nenabled = true\napi_url = %q\nbot_token_file = %q\napp_token_file = %q\napprovers = [%s]\n[slack.channels.%s]\n",
			fs.APIURL(), botFile, appFile, approvers, channel)
	}
	d := startReloadDaemon(t, body(`"UAPPROVER"`))
	ctx := context.Background()
	wait := func(what string, cond func(v fakeslack.View) bool) {
		t.Helper()
		if !fs.Wait(10*time.Second, cond) {
			t.Fatalf("timed out waiting for %s; log:\n%s", what, d.log)
		}
	}
	wait("the bot to connect", func(v fakeslack.View) bool { return v.Connected() && v.Connections() == 1 })

	// A run from Slack, its first proposal waiting in its thread.
	_, thread := fs.Mention(approver, channel, "", "write some files")
	var agentID string
	if !testutil.Wait(10*time.Second, func() bool {
		list, _ := apitest.Agents(ctx, d.c)
		for _, a := range list {
			if a.Pending != nil && a.Pending.Status == api.ProposalPending {
				agentID = a.ID
			}
		}
		return agentID != ""
	}) {
		t.Fatalf("no proposal from the run started in Slack; log:\n%s", d.log)
	}
	// startReloadDaemon's model proposes write_file at every step.
	wait("the proposal in the thread", func(v fakeslack.View) bool {
		return slices.ContainsFunc(v.Messages(channel, thread), func(m fakeslack.Message) bool { return strings.Contains(m.Text, "write_file") })
	})

	reload := func() *api.ReloadResult {
		t.Helper()
		res, err := api.ReloadRoute.Do(ctx, d.c, "", api.None{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// Nothing of the bots changed: the connection stays.
	d.write(body(`"UAPPROVER"`) + "[log]\nlevel = \"debug\"\n")
	if res := reload(); res.BotsRestarted {
		t.Errorf("a reload changing no bot setting restarted the bots: %+v", res)
	}
	fs.Wait(0, func(v fakeslack.View) bool {
		if !v.Connected() || v.Connections() != 1 {
			t.Errorf("after a reload changing nothing of the bots: connected %v, %d connections; want the first one kept", v.Connected(), v.Connections())
		}
		return true
	})

	// A [slack] key changed: the bot restarts, and the proposal is decided from its thread.
	d.write(body(`"UAPPROVER", "UOTHER"`))
	if res := reload(); !res.BotsRestarted || !slices.Contains(res.Applied, "slack.approvers") {
		t.Errorf("reload result %+v, want slack.approvers applied and the bots restarted", res)
	}
	wait("the restarted bot to connect", func(v fakeslack.View) bool { return v.Connected() && v.Connections() == 2 })
	fs.Say(approver, channel, "channel", thread, "y", false)
	var ps []api.Proposal
	if !testutil.Wait(10*time.Second, func() bool {
		var err error
		if ps, err = api.ProposalsRoute.Do(ctx, d.c, agentID, api.None{}); err != nil {
			t.Fatal(err)
		}
		// Run, so decided: the folder does not exist, which fails the command itself.
		return len(ps) > 0 && (ps[0].Status == api.ProposalSucceeded || ps[0].Status == api.ProposalFailed)
	}) {
		t.Fatalf("the proposal posted before the restart was not decided from its thread: %+v; log:\n%s", ps, d.log)
	}

	// The tokens rotated: the files change, the config does not.
	fs.RotateTokens("xoxb-rotated-bot", "xapp-rotated-app")
	writeTokens("xoxb-rotated-bot", "xapp-rotated-app")
	if res := reload(); !res.BotsRestarted || !slices.Contains(res.Applied, "bot tokens") {
		t.Errorf("reload after a token rotation: %+v, want the bots restarted for their tokens", res)
	}
	wait("the bot to connect with the new tokens", func(v fakeslack.View) bool { return v.Connected() && v.Connections() == 3 })

	// A token file gone: refused, and the bot running keeps its connection.
	os.Remove(botFile)
	_, err := api.ReloadRoute.Do(ctx, d.c, "", api.None{})
	if err == nil || !strings.Contains(err.Error(), "slack bot token") {
		t.Errorf("reload with the bot token file gone: %v, want a refusal naming the slack bot token", err)
	}
	fs.Wait(0, func(v fakeslack.View) bool {
		if !v.Connected() || v.Connections() != 3 {
			t.Errorf("after a refused reload: connected %v, %d connections; want the bot kept", v.Connected(), v.Connections())
		}
		return true
	})
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{fs.BotToken, fs.AppToken, "xoxb-rotated-bot", "xapp-rotated-app"} {
		if strings.Contains(d.log.String(), secret) {
			t.Error("a Slack token is in the daemon's logs")
		}
	}
}
