// Package testutil is the test support every package in agentd shares: one wait on a
// condition instead of fixed sleeps (Eventually and Wait; Hold for what must not
// happen), one golden-file check with the -update flag (Golden, GoldenJSON), one
// goroutine-safe log buffer (SyncBuffer), one fake clock whose timers fire when the
// test moves it (Clock), and one helper each for random names
// (RandomHex) and short temporary folders for unix sockets (ShortTempDir), and one way
// to run a test as a user other than root when the suite runs as root (AsUnprivileged),
// so code that must cope with file modes sees what production's agentd user sees.
//
// It is a leaf: it imports only the standard library, so the tests of any package —
// bots, commands, daemon, memory, cmd, agentctl included — may import it without adding
// an arrow between the module's packages. Only tests import it.
package testutil
