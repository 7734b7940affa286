// Package team runs SOP workflows of several agents (after aiwaves Agents,
// ChatDev and CAMEL): a workflow file names roles, two-role phases and states; a team run
// walks the states from the root, runs each state's phases, and picks the next state by a
// rule on the shared variables or by the model's schema-constrained choice.
//
// # How a team run maps onto the daemon
//
//   - A team run is a row in team_runs (daemon/store): the workflow's source text (so a
//     restart does not depend on the file still being there), the task, the shared
//     variables, a cursor (state, phase, cycle, turn) and its status and reason. Every turn,
//     phase end, transition and conclusion is a row in team_turns, written in the same
//     transaction as the cursor that moves past it. The Engine keeps nothing the store does
//     not: after a restart it reads the cursor and goes on.
//   - A role without commands speaks through the model directly: one /api/chat call with
//     the role's prompt, the state's and the phase's, and the phase transcript seen from
//     its side. Such a turn has no effect beyond its text, so redoing one the daemon died
//     in the middle of is harmless.
//   - A role with commands is a real agent of the daemon, named TEAM-ROLE (t3f2a9c1-programmer),
//     created idle when the run starts. Its turn is a run of that agent (the supervisor's Runs.StartTask)
//     whose task is the turn prompt; the agent thinks, proposes and executes like any
//     other, so every command it proposes goes through the one decision path (policy,
//     agentctl, the chat thread), and its finish reason is its message. The engine stores
//     the agent run's id before it waits, and learns of its end from the supervisor's
//     OnRunEnd (or, after a restart, from the runs table). The engine reaches the
//     supervisor only through its Agents interface and the shared types of daemon/run
//     (run.Options, run.End); it never imports daemon/agent. It never executes a
//     command itself; a command interrupted by a restart is the supervisor's to show
//     again, so no command runs twice. The agent is created with its role's command
//     list (stored with it), so it is offered only those, plus finish and ask_user.
//     When the run ends the role agents are removed with their workspaces, unless the
//     run keeps them (KeepAgents); the transcript keeps what they said.
//   - Every committed transcript entry is published on the engine's own broker
//     (events.go); SubscribeTeam streams a run's transcript, then its new entries.
//   - Model calls read the model and keep-alive at call time (Options.Settings: the
//     supervisor's live run.ModelSettings), so a reload reaches the next turn; num_ctx is the
//     model's one Load (llm.Client.LoadFor), shared with the agents so the model never reloads.
//   - A two-role phase alternates instructor and assistant, instructor first. It ends when
//     a reply has a line starting <INFO> (the rest is the conclusion, stored into the
//     phase's variable), at its turn limit, at its state's turn limit, or when a CAMEL
//     failure mode is seen (camel.go: role flipping, the assistant repeating the
//     instruction, flake replies, message loops). Each end is recorded with its reason.
//     With reflect set, a phase that ended without <INFO> asks the model once for the
//     conclusion from the transcript; a reflection that fails or gives none is said in
//     the phase end's reason.
//   - A composed phase repeats its phases up to its cycles, checking its until condition
//     after every sub-phase.
//   - The run ends finished when a transition leads to "end" (or a state has no next that
//     holds), turn_limit at the workflow's max_turns, stopped by a person, or failed (a
//     model error that outlasts the retries, a workflow that no longer parses after an
//     upgrade, a role agent removed). Nothing loops without a bound.
package team
