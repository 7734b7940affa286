package server

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/daemon/config"
)

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
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to say %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
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
