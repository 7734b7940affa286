// Package bots is the relay between agentd's agents and chat platforms: one relay, thin
// adapters (bots/slack, bots/discord).
//
// The relay subscribes to agent events and posts them to the chat thread each run is
// bound to (speak and plan, proposals with buttons, results, questions, the finish
// reason), and turns what people do in chat — button clicks, typed replies like `y -3`,
// feedback, answers, new tasks and /agent commands — into the same Service calls
// agentctl makes. Everything that does not depend on the platform lives here: parsing
// replies, who may decide, the formatting model, thread bindings. An Adapter only speaks
// its platform's protocol.
//
// The checks a click, a feedback dialog or a typed reply passes are listed once, in the
// order they run, in guards.go; each refuses with a note to the person. A chat action is
// bound to what it was shown: a click to the hash on its button, a reply to the proposal
// shown before it was written (binding.go), and a follow-up task to the end of the run
// before it (ended.go). Only plain platform user ids become mentions (MentionID). Clicks
// from people who may decide nothing are refused first and audited at most once a minute
// each (strangers.go). Every message and click acted on is recorded in
// the store (Bindings.FirstDelivery), so a platform's redelivery is applied once, after a
// restart too; an edit is never read, and an edit of a message the relay read is answered
// once: edits are not read, send a new message.
//
// The relay reads what it shows from the daemon (its event stream and the queries of
// Service) and where each agent's events go from the store (Bindings.ThreadsOf; a
// removal's event names the threads the store deleted with the agent; a state event
// says when it shows the state unchanged, which gets no note). Beside them it keeps only
// what is its own, one owner each: what waits for a person in chat (proposalBoard), the
// team runs followed (teamDesk; a role agent's team run is read from the engine, a team
// run's threads from the store) and the posts waiting for a platform (outbox). A poster
// posts the events; Relay routes what people do.
//
// The relay runs inside agentd (daemon/server starts it); the supervisor's parts
// (composed by daemon/server) are its Service.
package bots
