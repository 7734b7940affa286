package server

import (
	"context"
	"fmt"
	"os"
	"slices"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/agent"
	"github.com/agentd/agentd/daemon/config"
)

// tokenFileCheck is doctor's check of the chat bots' token files: one that group or
// others may read or write fails, since whoever reads it acts as the bot; one missing is
// chatCheck's (the bot did not start). The HTTP listener's token file has its own check
// (httpListener.tokenCheck). nil when the config names no such file.
func tokenFileCheck(cfg *config.Config) agent.HealthCheck {
	files := slices.DeleteFunc(tokenSources(cfg), func(s neededSecret) bool { return s.file == "" || s.part == "http" })
	if len(files) == 0 {
		return nil
	}
	return func(context.Context) []api.Check {
		var out []api.Check
		for _, f := range files {
			c := api.Check{Name: "token file", Status: api.CheckOK}
			fi, err := os.Stat(f.file)
			switch {
			case err != nil:
				// A bot that is off reads no token; one that is on and could not read
				// it did not start, which chatCheck reports with the fix.
				continue
			case fi.Mode().Perm()&0o077 != 0:
				c.Status = api.CheckFail
				c.Detail = fmt.Sprintf("%s (%s) has mode %04o: others on this machine can read the token and act as the bot", f.file, f.fileKey, fi.Mode().Perm())
				c.Fix = "chmod 600 " + f.file
			default:
				c.Detail = fmt.Sprintf("%s (%s) is private (mode %04o)", f.file, f.fileKey, fi.Mode().Perm())
			}
			out = append(out, c)
		}
		return out
	}
}
