// Package cron is the clock of schedules: it parses cron specs, computes fire times, and
// runs the firing loop that starts scheduled runs and records every firing.
//
// It does no I/O and imports neither the store nor the agent supervisor. Package
// daemon/schedule (the daemon's schedule service) loads schedules from SQLite and hands
// them to a Scheduler (with the time each one last fired);
// the Scheduler calls a Starter to begin a run and a Recorder to persist a Record of every
// firing (started, skipped, missed, …); the daemon reports each run's end with RunEnded.
// The API and agentctl use Parse and Next to validate a spec and show its next fire times.
//
// Specs are robfig/cron v3 specs, parsed defensively (robfig panics on some inputs) with
// errors that name the bad part. On top of robfig, fixed-time specs get cron's usual
// daylight-saving behavior: a time skipped by a spring-forward runs at the first instant
// after the gap, and a time repeated by a fall-back runs once, at its first occurrence.
// Schedules fire at most once a minute: every run costs at least one model call.
package cron
