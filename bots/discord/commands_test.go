package discord

import (
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"
)

func opt(name string, v any) *discordgo.ApplicationCommandInteractionDataOption {
	return &discordgo.ApplicationCommandInteractionDataOption{Name: name, Type: discordgo.ApplicationCommandOptionString, Value: v}
}

func sub(name string, opts ...*discordgo.ApplicationCommandInteractionDataOption) *discordgo.ApplicationCommandInteractionDataOption {
	return &discordgo.ApplicationCommandInteractionDataOption{Name: name, Type: discordgo.ApplicationCommandOptionSubCommand, Options: opts}
}

func TestParseSlash(t *testing.T) {
	cases := []struct {
		name    string
		data    discordgo.ApplicationCommandInteractionData
		want    SlashCommand
		wantErr string
	}{
		{"run", data("agent", sub("run", opt("task", " tidy the logs "))), SlashCommand{Sub: SubRun, Task: "tidy the logs"}, ""},
		{"run_with_agent", data("agent", sub("run", opt("task", "x"), opt("agent", "walker"))), SlashCommand{Sub: SubRun, Task: "x", Agent: "walker"}, ""},
		{"status_all", data("agent", sub("status")), SlashCommand{Sub: SubStatus}, ""},
		{"list", data("agent", sub("list")), SlashCommand{Sub: SubList}, ""},
		{"stop", data("agent", sub("stop", opt("agent", "walker"))), SlashCommand{Sub: SubStop, Agent: "walker"}, ""},
		{"pause", data("agent", sub("pause", opt("agent", "walker"))), SlashCommand{Sub: SubPause, Agent: "walker"}, ""},
		{"resume", data("agent", sub("resume", opt("agent", "walker"))), SlashCommand{Sub: SubResume, Agent: "walker"}, ""},
		{"schedule_run", data("agent", sub("schedule", opt("action", "run"), opt("name", "nightly"))), SlashCommand{Sub: SubSchedule, Action: "run", Name: "nightly"}, ""},
		{"team", data("agent", sub("team", opt("file", "software_company"), opt("task", "a word counter"))), SlashCommand{Sub: SubTeam, File: "software_company", Task: "a word counter"}, ""},
		{"team_list", data("agent", sub("team")), SlashCommand{Sub: SubTeam}, ""},
		{"team_stop", data("agent", sub("team", opt("stop", " t-1a2b3c4d5e6f "))), SlashCommand{Sub: SubTeam, Stop: "t-1a2b3c4d5e6f"}, ""},
		{"team_stop_with_file", data("agent", sub("team", opt("stop", "t-1"), opt("file", "build"), opt("task", "x"))), SlashCommand{}, "stop takes no file or task"},
		{"team_file_without_task", data("agent", sub("team", opt("file", "software_company"))), SlashCommand{}, "give both file and task"},
		{"schedule_without_action", data("agent", sub("schedule")), SlashCommand{}, "action is required"},
		{"other_command", data("weather"), SlashCommand{}, "unknown command /weather"},
		{"no_sub", data("agent"), SlashCommand{}, "exactly one sub-command"},
		{"unknown_sub", data("agent", sub("explode")), SlashCommand{}, "unknown sub-command"},
		{"run_without_task", data("agent", sub("run")), SlashCommand{}, "task is required"},
		{"blank_task", data("agent", sub("run", opt("task", "  "))), SlashCommand{}, "task is required"},
		{"stop_without_agent", data("agent", sub("stop")), SlashCommand{}, "agent is required"},
		{"undeclared_option", data("agent", sub("list", opt("agent", "x"))), SlashCommand{}, `unexpected option "agent"`},
		{"wrong_type", data("agent", sub("stop", &discordgo.ApplicationCommandInteractionDataOption{Name: "agent", Type: discordgo.ApplicationCommandOptionInteger, Value: 3.0})), SlashCommand{}, "unexpected option"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseSlash(c.data)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("ParseSlash = %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

func data(name string, opts ...*discordgo.ApplicationCommandInteractionDataOption) discordgo.ApplicationCommandInteractionData {
	return discordgo.ApplicationCommandInteractionData{Name: name, Options: opts}
}
