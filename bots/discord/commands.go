package discord

import (
	"fmt"
	"strings"

	"github.com/bwmarrin/discordgo"
)

// CommandName is the one slash command agentd registers.
const CommandName = "agent"

// Sub-commands of /agent.
const (
	SubRun    = "run"
	SubStatus = "status"
	SubList   = "list"
	SubStop   = "stop"
	SubPause  = "pause"
	SubResume = "resume"
	// SubSchedule lists schedules or fires one now (action ls|run, name).
	SubSchedule = "schedule"
	// SubTeam starts a team run of a workflow (file, task), stops one (stop), or lists
	// the workflows.
	SubTeam = "team"
	// SubRewind asks in the agent's thread to put its workspace back as it was before a
	// step (to, run) or to undo a rewind (undo).
	SubRewind = "rewind"
)

// maxTask bounds a task typed into /agent run (Discord allows up to 6,000 in a string option).
const maxTask = 4000

// Commands are the application commands to register at start (bulk overwrite, globally or
// per configured guild).
func Commands() []*discordgo.ApplicationCommand {
	str := func(name, desc string, maxLen int, required bool) *discordgo.ApplicationCommandOption {
		return &discordgo.ApplicationCommandOption{Type: discordgo.ApplicationCommandOptionString, Name: name, Description: desc,
			MaxLength: maxLen, Required: required}
	}
	agentOpt := func(required bool) *discordgo.ApplicationCommandOption {
		return str("agent", "Agent name or ID", 100, required)
	}
	sub := func(name, desc string, opts ...*discordgo.ApplicationCommandOption) *discordgo.ApplicationCommandOption {
		return &discordgo.ApplicationCommandOption{Type: discordgo.ApplicationCommandOptionSubCommand, Name: name, Description: desc, Options: opts}
	}
	return []*discordgo.ApplicationCommand{{
		Type: discordgo.ChatApplicationCommand, Name: CommandName, Description: "Run and steer agentd agents",
		Options: []*discordgo.ApplicationCommandOption{
			sub(SubRun, "Start a task in a new thread",
				str("task", "What the agent should do", maxTask, true),
				agentOpt(false)),
			sub(SubStatus, "Show an agent's state, or all agents'", agentOpt(false)),
			sub(SubList, "List agents"),
			sub(SubStop, "Stop an agent's run", agentOpt(true)),
			sub(SubPause, "Pause an agent", agentOpt(true)),
			sub(SubResume, "Resume a paused agent", agentOpt(true)),
			sub(SubRewind, "Ask to put an agent's workspace back as it was before a step",
				agentOpt(true),
				str("to", "Step number, as agentctl history shows it", 10, false),
				str("run", "Run of that step (default: the latest run with it)", 100, false),
				str("undo", "ID of a rewind to undo (rw-…)", 100, false)),
			sub(SubSchedule, "List schedules, or run one now",
				&discordgo.ApplicationCommandOption{Type: discordgo.ApplicationCommandOptionString, Name: "action",
					Description: "ls or run", Required: true, Choices: []*discordgo.ApplicationCommandOptionChoice{
						{Name: "ls", Value: "ls"}, {Name: "run", Value: "run"}}},
				str("name", "Schedule name (for run)", 100, false)),
			sub(SubTeam, "Start a team run of a workflow in a new thread, or stop one; alone, list the workflows",
				str("file", "Workflow name from the teams directory", 500, false),
				str("task", "What the team should do", maxTask, false),
				str("stop", "ID of a team run to stop (approvers only)", 100, false)),
		},
	}}
}

// SlashCommand is a parsed /agent invocation.
type SlashCommand struct {
	Sub   string // one of the Sub* constants
	Agent string // empty when not given (run: a new agent; status: all)
	Task  string // run only
	// Action and Name are schedule's: ls, or run NAME.
	Action string
	Name   string
	// File is team's workflow (with Task); both empty list the workflows.
	File string
	// Stop is team's: the team run to stop (without File and Task).
	Stop string
	// Rewind is rewind's options as /agent rewind takes them typed: " --to 3 --run r-1".
	Rewind string
}

// ParseSlash reads an /agent invocation strictly: the command name, exactly one known
// sub-command, its declared options with string values, and the required ones present.
func ParseSlash(d discordgo.ApplicationCommandInteractionData) (SlashCommand, error) {
	if d.Name != CommandName {
		return SlashCommand{}, fmt.Errorf("discord: unknown command /%s", d.Name)
	}
	if len(d.Options) != 1 || d.Options[0].Type != discordgo.ApplicationCommandOptionSubCommand {
		return SlashCommand{}, fmt.Errorf("discord: /%s needs exactly one sub-command", CommandName)
	}
	sub := d.Options[0]
	var decl *discordgo.ApplicationCommandOption
	for _, o := range Commands()[0].Options {
		if o.Name == sub.Name {
			decl = o
		}
	}
	if decl == nil {
		return SlashCommand{}, fmt.Errorf("discord: unknown sub-command /%s %s", CommandName, sub.Name)
	}
	got := map[string]string{}
	for _, o := range sub.Options {
		known := false
		for _, do := range decl.Options {
			known = known || do.Name == o.Name
		}
		v, isString := o.Value.(string)
		if !known || o.Type != discordgo.ApplicationCommandOptionString || !isString {
			return SlashCommand{}, fmt.Errorf("discord: /%s %s: unexpected option %q", CommandName, sub.Name, o.Name)
		}
		got[o.Name] = strings.TrimSpace(v)
	}
	for _, do := range decl.Options {
		if do.Required && got[do.Name] == "" {
			return SlashCommand{}, fmt.Errorf("discord: /%s %s: %s is required", CommandName, sub.Name, do.Name)
		}
	}
	if sub.Name == SubTeam && got["stop"] != "" && (got["file"] != "" || got["task"] != "") {
		return SlashCommand{}, fmt.Errorf("discord: /%s %s: stop takes no file or task", CommandName, SubTeam)
	}
	if sub.Name == SubTeam && (got["file"] == "") != (got["task"] == "") {
		return SlashCommand{}, fmt.Errorf("discord: /%s %s: give both file and task to start a team, or neither to list the workflows", CommandName, SubTeam)
	}
	rewind := ""
	for _, o := range []string{"to", "run", "undo"} {
		if v := got[o]; v != "" && sub.Name == SubRewind {
			rewind += " --" + o + " " + strings.Join(strings.Fields(v), "")
		}
	}
	return SlashCommand{Sub: sub.Name, Agent: got["agent"], Task: got["task"], Action: got["action"], Name: got["name"], File: got["file"], Stop: got["stop"],
		Rewind: rewind}, nil
}
