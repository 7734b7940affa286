// Package agentprotocol serves Agent Protocol v1 (the AI Engineer Foundation's REST API
// for driving an agent: tasks, steps, artifacts) over the same daemon service agentctl
// uses, through the slice of api.AgentService it calls (Agents). The daemon mounts it under /ap/v1/ on the optional TCP listener
// ([http] agent_protocol = true), behind the listener's bearer token.
//
// The mapping follows AutoGPT's `serve`:
//   - A task is a run. Creating a task creates a new agent with the input as its task and
//     starts the run, so every task has its own workspace, history and memory scope; the
//     task id is the run id (r-…). Listing tasks lists each agent's current or last run.
//   - A step is a proposal of that run; its status is created while it awaits a decision
//     (or an ask_user answer), running while it runs, completed after. Executing a step
//     decides the pending proposal: empty input approves it, other input is feedback (or
//     the answer to a pending ask_user question); additional_input {"decision": "deny"}
//     denies it, which ends the run; {"decision": "resume"} resumes a paused agent, as
//     agentctl resume does, and is the one step that clears an unchecked change's mark. Nothing is approved unseen: an empty-input step on a
//     proposal no reply has shown yet (the first step of a task, say), or whose effect
//     preview ran again since, only shows it, as AutoGPT's first step only proposes; the
//     approval names the proposal's Ref as shown. It waits until the agent has settled again (a new
//     proposal, a question, or the run's end) and returns the decided step, whose output
//     says what ran and what the agent proposes next. is_last marks the step that ended
//     the run.
//   - Artifacts are the files in the agent's workspace (hidden files left out). An
//     artifact id is the file's relative path, base64url-encoded, so ids survive restarts
//     without a table. Uploads are written into the workspace through an os.Root, which
//     refuses any path, .. or symlink that leads out of it.
//
// Errors are JSON {"error": "..."} like the local API's, with the same text under
// "message" as well, which the protocol's 404 schema requires.
//
// The tests validate every request and response against the protocol's published
// OpenAPI document (testdata/openapi.yml) with github.com/getkin/kin-openapi's
// openapi3filter: the most used and maintained OpenAPI 3 validator for Go, which checks
// parameters, bodies (JSON and multipart) and responses by status, so a drift from the
// spec fails a test rather than an AP client.
package agentprotocol
