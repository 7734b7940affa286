// Package integration tests agentd as its users run it: the real agentd and agentctl
// binaries, built once per test run, a daemon started as a separate process on a temporary
// unix socket and driven through api, agentctl and raw HTTP.
//
// The model is either the real Ollama server serving the project's tiny random-weight model
// (assert structure and counters, never content) or internal/ollamatest's in-process fake for
// scripted, deterministic runs: crash recovery after kill -9, SIGTERM, bad API input.
// Crash tests need a slow command that is not idempotent, so the test binary can re-exec
// itself as the daemon (see TestMain) with a test-only command registered. The follow
// tests run the daemon's wiring (server.Run) in the test's own process instead, and
// agentctl's entry (cli.Run) against it.
//
// TestContainmentCorpus is the end-to-end attack corpus: a scripted model proposes attacks on
// the workspace, the sandbox, the network guard, the permission rules, the displays and
// the state dir, the test approves them as a trusting person would, and checks from
// outside that nothing escaped. AGENTD_ATTACK_VERBOSE=1 logs every case's outcome.
//
// The package holds only tests; this file exists for its documentation.
package integration
