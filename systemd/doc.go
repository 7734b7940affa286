// Package systemd holds agentd's systemd units (agentd.service for the machine,
// agentd-user.service for one user); it has no code. Its tests check the units with
// systemd-analyze verify when the tool exists, check the settings the daemon relies on
// (Type=notify readiness, state and runtime directories, secrets from an EnvironmentFile,
// hardening), and run scripts/install.sh into a temporary root.
package systemd
