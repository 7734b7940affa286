package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/apitest"
	"github.com/agentd/agentd/internal/fakeslack"
	"github.com/agentd/agentd/internal/testutil"
)

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
		res, err := d.c.Reload(ctx)
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
	_, err := d.c.Reload(ctx)
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
