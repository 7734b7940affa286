package api

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// SocketPlace is a path agentd may listen on, and what puts it there.
type SocketPlace struct {
	Path string `json:"path"`
	// From names the setting or default that picks Path: "$AGENTD_SOCKET", "the system
	// service", ...
	From string `json:"from"`
}

// SocketPlaces lists where agentd may listen on this machine: first the path
// DefaultSocketPath picks in this environment, then those it picks in the others agentd
// is commonly started from (a systemd user or system service, a shell without
// $XDG_RUNTIME_DIR). A terminal whose environment differs from agentd's looks in the
// wrong place; agentctl checks these to say where agentd is after all.
func SocketPlaces() []SocketPlace {
	uid := os.Getuid()
	var out []SocketPlace
	add := func(path, from string) {
		for _, p := range out {
			if p.Path == path {
				return
			}
		}
		out = append(out, SocketPlace{Path: path, From: from})
	}
	if p := os.Getenv(SocketEnv); p != "" {
		add(p, "$"+SocketEnv)
	}
	if d, _, _ := strings.Cut(os.Getenv("RUNTIME_DIRECTORY"), ":"); d != "" {
		add(filepath.Join(d, "agentd.sock"), "$RUNTIME_DIRECTORY")
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		add(filepath.Join(d, "agentd", "agentd.sock"), "$XDG_RUNTIME_DIR")
	}
	// DefaultSocketPath's last resort, then where agentd is commonly started from.
	system := SocketPlace{"/run/agentd/agentd.sock", "the system service, agentd.service"}
	tmp := SocketPlace{filepath.Join(os.TempDir(), fmt.Sprintf("agentd-%d", uid), "agentd.sock"), "the default without $XDG_RUNTIME_DIR"}
	if uid == 0 {
		add(system.Path, system.From)
	}
	add(tmp.Path, tmp.From)
	add(fmt.Sprintf("/run/user/%d/agentd/agentd.sock", uid), "your user service, systemctl --user")
	add(system.Path, system.From)
	add(filepath.Join("/tmp", fmt.Sprintf("agentd-%d", uid), "agentd.sock"), "the default without $XDG_RUNTIME_DIR and $TMPDIR")
	return out
}
