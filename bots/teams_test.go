package bots

import (
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/team"
)

// Each kind of transcript entry gets its label and reason; a long message is cut and
// attached whole.
func TestFormatTeamTurn(t *testing.T) {
	long := strings.Repeat("word ", 200)
	for _, tc := range []struct {
		name    string
		turn    api.TeamTurn
		text    string
		summary string
		file    bool
	}{
		{"message", api.TeamTurn{Kind: api.TurnMessage, Role: "programmer"}, "done it", "[programmer] done it", false},
		{"long_message", api.TeamTurn{Kind: api.TurnMessage, Role: "ceo"}, long, "[ceo] word word", true},
		{"conclusion", api.TeamTurn{Kind: api.TurnConclusion, Phase: "code", Mode: "code"}, "main.go", "📌 code concluded → code: main.go", false},
		{"phase_end", api.TeamTurn{Kind: api.TurnPhaseEnd, Phase: "code", Mode: "role_flip"}, "the assistant gave instructions", "⏹ Phase code ended (role_flip): the assistant gave instructions", false},
		{"transition", api.TeamTurn{Kind: api.TurnTransition, State: "test"}, "code → test: rule", "➡️ code → test: rule", false},
		{"end", api.TeamTurn{Kind: api.TurnEnd, Mode: api.TeamTurnLimit}, "the run used its 40 turns", "🏁 Team run turn_limit: the run used its 40 turns", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, file := FormatTeamTurn(tc.turn, tc.text, 300)
			if !strings.HasPrefix(m.Summary, tc.summary) {
				t.Errorf("summary = %q, want %q…", m.Summary, tc.summary)
			}
			if (file != "") != tc.file || (tc.file && file != strings.TrimSpace(tc.text)) {
				t.Errorf("file = %d bytes, want attached: %v", len(file), tc.file)
			}
			if tc.file && !strings.Contains(m.Parts[len(m.Parts)-1].Spans[0].Text, "attached") {
				t.Errorf("a long turn does not say it is attached: %+v", m.Parts)
			}
		})
	}
}

func TestTeamAgentPrefix(t *testing.T) {
	for id, want := range map[string]string{"t-3f2a9c1b2c3d": "t3f2a9c1b-", "t-ab": "tab-", "t-": ""} {
		if got := teamAgentPrefix(id); got != want {
			t.Errorf("teamAgentPrefix(%q) = %q, want %q", id, got, want)
		}
		if want != "" && !strings.HasPrefix(team.AgentName(id, "programmer"), want) {
			t.Errorf("team.AgentName(%q) = %q: the relay would not find its team", id, team.AgentName(id, "programmer"))
		}
	}
}

// A team run's end names who stopped it as a mention on the platform they acted on;
// elsewhere, and for any other end, the text stays as recorded.
func TestStoppedBy(t *testing.T) {
	end := api.TeamTurn{Kind: api.TurnEnd, Mode: api.TeamStopped}
	for _, tc := range []struct {
		name     string
		turn     api.TeamTurn
		text     string
		platform string
		user     string
	}{
		{"same_platform", end, "stopped by slack:U1", "slack", "U1"},
		{"other_platform", end, "stopped by slack:U1", "discord", ""},
		{"by_agentctl", end, "stopped by a person", "slack", ""},
		{"not_an_end", api.TeamTurn{Kind: api.TurnMessage, Role: "ceo"}, "stopped by slack:U1", "slack", ""},
		{"spaces_in_user", end, "stopped by slack:U1 and more", "slack", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := FormatTeamTurn(tc.turn, tc.text, 300)
			stoppedBy(&m, tc.turn, tc.text, tc.platform)
			spans := m.Parts[0].Spans
			last := spans[len(spans)-1]
			if last.User != tc.user {
				t.Fatalf("last span = %+v, want a mention of %q", last, tc.user)
			}
			if tc.user == "" && last.Text != tc.text {
				t.Errorf("text = %q, want it as recorded", last.Text)
			}
			if tc.user != "" && spans[len(spans)-2].Text != "stopped by " {
				t.Errorf("spans = %+v", spans)
			}
		})
	}
}
