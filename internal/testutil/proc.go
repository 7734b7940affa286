package testutil

import (
	"os"
	"path/filepath"
	"strings"
)

// ProcessesWith lists the pids of live (not zombie) processes whose command line
// contains marker: what a test looks for to see a command's processes are gone.
func ProcessesWith(marker string) []string {
	var pids []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		cmdline, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || !strings.Contains(strings.ReplaceAll(string(cmdline), "\x00", " "), marker) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		// The state follows the command name in parentheses, which may itself contain ") ".
		if i := strings.LastIndex(string(stat), ") "); i > 0 && strings.HasPrefix(string(stat[i+2:]), "Z") {
			continue
		}
		pids = append(pids, filepath.Base(d))
	}
	return pids
}
