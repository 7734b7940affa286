package cli

import "github.com/agentd/agentd/api"

// The verbs that change where an agent's run stands: each calls the daemon on one AGENT
// and prints the agent as it is then (agentAction).
var (
	pauseCmd = &command{
		name:  "pause",
		args:  "AGENT",
		short: "pause an agent after its current step",
		long: `Pause stops the agent from taking further steps once the current one is done; a
command already running finishes. Nothing is lost: 'agentctl resume AGENT' carries on
where it stopped.`,
		run: agentAction(api.PauseRoute),
	}
	resumeCmd = &command{
		name:  "resume",
		args:  "AGENT",
		short: "resume a paused or failed agent",
		long: `Resume lets a paused agent (paused by you, or by the daemon when it got stuck) or a
failed one carry on with its current run. An agent marked with an unchecked change (a
step wrote what the write-deny rules could not check: 'agentctl show' says which) starts
every run paused until you resume it: resuming says you looked at the workspace, and
clears the mark. To give an idle agent new work, use 'agentctl task' instead.`,
		run: agentAction(api.ResumeRoute),
	}
	stopCmd = &command{
		name:  "stop",
		args:  "AGENT",
		short: "end an agent's run; the agent stays, idle",
		long: `Stop ends the agent's current run: a proposal waiting for a decision is dropped, a
question withdrawn and a running command cancelled. The agent and its history stay;
give it a new task with 'agentctl task AGENT "TASK"'. To delete it, use 'agentctl rm'.`,
		run: agentAction(api.StopRoute),
	}
)
