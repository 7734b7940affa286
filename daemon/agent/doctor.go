package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/daemon/statedir"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/display"
)

// doctor runs agentctl doctor's checks: the model server, the store, the state directory
// and workspaces, and the server's own checks.
type doctor struct {
	llm         *llm.Client
	st          *store.Store
	live        func() *live // the settings in use: the models to probe
	stateDir    string
	workspaceOf func(id string) string // an agent's workspace: its parent is checked
	checks      []HealthCheck
}

// Disk space below these is a warning, below the second a failure: SQLite needs room
// for its WAL and agents for their workspaces.
const (
	diskWarnBytes = 1 << 30
	diskFailBytes = 100 << 20
)

// Doctor runs every health check, each with a deadline, and reports what it found.
func (s *doctor) Doctor(ctx context.Context) (*api.DoctorReport, error) {
	rep := &api.DoctorReport{}
	add := func(c ...api.Check) { rep.Checks = append(rep.Checks, c...) }
	add(s.checkModels(ctx)...)
	add(hostChecks(s.llm.PoolStatus())...)
	add(storeCheck(filepath.Join(s.stateDir, "agentd.db"), s.st.Check(ctx)))
	add(checkDisk(s.stateDir))
	add(checkStateDir(s.stateDir, filepath.Dir(s.workspaceOf("x"))))
	add(s.checkWorkspaces())
	for _, hc := range s.checks {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		add(hc(cctx)...)
		cancel()
	}
	return rep, nil
}

// checkModels probes the model server now (not the last background probe), for the
// model and the smart model.
func (s *doctor) checkModels(ctx context.Context) []api.Check {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	host := s.llm.Host()
	l := s.live()
	models := []string{l.Model}
	if l.SmartModel != "" && l.SmartModel != l.Model {
		models = append(models, l.SmartModel)
	}
	var out []api.Check
	for i, model := range models {
		info, err := s.llm.Probe(ctx, model)
		var nf *llm.ModelNotFoundError
		switch {
		case errors.As(err, &nf):
			if i == 0 {
				out = append(out, api.Check{Name: "ollama", Status: api.CheckOK, Detail: "reachable at " + host})
			}
			out = append(out, api.Check{Name: "model", Status: api.CheckFail,
				Detail: fmt.Sprintf("%s is not on the server", model), Fix: "ollama pull " + model})
		case err != nil:
			return append(out, api.Check{Name: "ollama", Status: api.CheckFail, Detail: err.Error(),
				Fix: "start Ollama (`ollama serve`, or `sudo systemctl start ollama`), or point [[ollama.hosts]] url in the config at a running server"})
		default:
			if i == 0 {
				out = append(out, api.Check{Name: "ollama", Status: api.CheckOK, Detail: fmt.Sprintf("version %s at %s", info.ServerVersion, host)})
			}
			out = append(out, modelCheck(info, l.MaxContext))
		}
	}
	return out
}

// tinyModelName is the random-weight model tinymodel writes for tests and offline demos
// (ollamatest.TinyModelName; a test keeps the two equal).
const tinyModelName = "agentd-tiny"

// isTinyModel tells the test model by name, with or without a tag.
func isTinyModel(model string) bool {
	name, _, _ := strings.Cut(model, ":")
	return name == tinyModelName
}

// modelCheck reports the model's context length: the prompt, history and memories must
// fit in it, and below 4,096 tokens little fits.
func modelCheck(info *llm.ModelInfo, maxContext int) api.Check {
	ctxLen := info.ContextLength
	if maxContext > 0 && (ctxLen == 0 || maxContext < ctxLen) {
		ctxLen = maxContext
	}
	c := api.Check{Name: "model", Status: api.CheckOK, Detail: fmt.Sprintf("%s, context %d tokens", info.Model, ctxLen)}
	switch {
	case ctxLen == 0:
		c.Status, c.Detail = api.CheckWarn, info.Model+": context length unknown; agentd assumes 2,048 tokens"
		c.Fix = "set [ollama] max_context in the config to the model's context length"
	case ctxLen < 4096:
		c.Status = api.CheckWarn
		c.Fix = "use a model with a longer context, or raise num_ctx in its Modelfile (PARAMETER num_ctx 8192) and [ollama] max_context"
	}
	if isTinyModel(info.Model) { // noise matters more than a short context
		c.Status = api.CheckWarn
		c.Detail = info.Model + " is the offline test model: random weights, its answers are noise and no agent will get anything done"
		c.Fix = "set [ollama] model to a chat model (ollama pull " + config.DefaultModel + ", say) and restart agentd"
	}
	if len(info.Capabilities) > 0 && !slices.Contains(info.Capabilities, "completion") {
		c.Status, c.Detail = api.CheckFail, fmt.Sprintf("%s cannot chat (capabilities: %v)", info.Model, info.Capabilities)
		c.Fix = "choose a chat model in [ollama] model"
	}
	return c
}

// storeCheck judges the store at path: its integrity (integrity is what checking it
// returned) and that the database and its WAL and shared-memory files are private, since
// they hold every agent's history and what people approved.
func storeCheck(path string, integrity error) api.Check {
	open := openFiles(path, path+"-wal", path+"-shm")
	them := "it"
	if len(open) > 1 {
		them = "them"
	}
	chmod := "chmod 600 " + strings.Join(open, " ") + " (agentd makes " + them + " 0600 at start; something changed " + them + ")"
	switch {
	case integrity != nil:
		c := api.Check{Name: "store", Status: api.CheckFail, Detail: integrity.Error(),
			Fix: "stop agentd, copy " + path + " aside, and restore it from a backup (sqlite3 " + path + " .recover can save what is readable)"}
		if len(open) > 0 {
			c.Detail += "; and " + modesOf(open) + ": others on this machine can read it"
			c.Fix += "; then " + chmod
		}
		return c
	case len(open) > 0:
		return api.Check{Name: "store", Status: api.CheckFail,
			Detail: modesOf(open) + ": others on this machine can read every agent's history", Fix: chmod}
	}
	return api.Check{Name: "store", Status: api.CheckOK, Detail: path + ": integrity ok, private (0600)"}
}

// openFiles are those of paths that exist and grant group or others anything.
func openFiles(paths ...string) []string {
	var open []string
	for _, p := range paths {
		if fi, err := os.Lstat(p); err == nil && fi.Mode().Perm()&0o077 != 0 {
			open = append(open, p)
		}
	}
	return open
}

// checkDisk reports the free space where the state lives.
func checkDisk(dir string) api.Check {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		return api.Check{Name: "disk", Status: api.CheckWarn, Detail: fmt.Sprintf("cannot measure free space of %s: %v", dir, err)}
	}
	free := fs.Bavail * uint64(fs.Bsize)
	c := api.Check{Name: "disk", Status: api.CheckOK, Detail: fmt.Sprintf("%s free where %s is", display.Size(int64(free)), dir)}
	switch {
	case free < diskFailBytes:
		c.Status = api.CheckFail
	case free < diskWarnBytes:
		c.Status = api.CheckWarn
	}
	if c.Status != api.CheckOK {
		c.Fix = "free space on that file system (agents' workspaces are under " + dir + "), or move the state directory (--state-dir)"
	}
	return c
}

// checkStateDir fails when others may read the state directory or what is in it (the
// database holds every agent's history): agentd fixes modes at start, so this finds what
// changed since.
func checkStateDir(dir, workspaces string) api.Check {
	c := api.Check{Name: "state dir", Status: api.CheckOK, Detail: dir + " is private (0700, files 0600)"}
	open, err := statedir.Check(dir, workspaces, 0)
	switch {
	case err != nil:
		c.Status, c.Detail = api.CheckWarn, fmt.Sprintf("cannot check the modes in %s: %v", dir, err)
	case len(open) > 0:
		c.Status = api.CheckFail
		c.Detail = "others on this machine can read or enter what agentd keeps: " + modesOf(open)
		c.Fix = chmodFix(open)
	}
	return c
}

// shownOpen bounds how many paths a failed check names.
const shownOpen = 4

// modesOf names paths with their modes: "/s has mode 0755, /s/agentd.db 0644".
func modesOf(paths []string) string {
	var parts []string
	for i, p := range paths {
		if i == shownOpen {
			parts = append(parts, fmt.Sprintf("and %d more", len(paths)-shownOpen))
			break
		}
		mode := "?"
		if fi, err := os.Lstat(p); err == nil {
			mode = fmt.Sprintf("%04o", fi.Mode().Perm())
		}
		if i == 0 {
			parts = append(parts, p+" has mode "+mode)
		} else {
			parts = append(parts, p+" "+mode)
		}
	}
	return strings.Join(parts, ", ")
}

// chmodFix is the command that makes paths private: 700 for directories, 600 for files.
func chmodFix(paths []string) string {
	var dirs, files []string
	for _, p := range paths[:min(len(paths), shownOpen)] {
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
			dirs = append(dirs, p)
		} else {
			files = append(files, p)
		}
	}
	var cmds []string
	if len(dirs) > 0 {
		cmds = append(cmds, "chmod 700 "+strings.Join(dirs, " "))
	}
	if len(files) > 0 {
		cmds = append(cmds, "chmod 600 "+strings.Join(files, " "))
	}
	fix := strings.Join(cmds, "; ")
	if len(paths) > shownOpen {
		return fix + "; or restart agentd, which makes all of its state dir private at start"
	}
	return fix + " (or restart agentd: it makes its state dir private at start)"
}

// checkWorkspaces makes sure new agents can get a workspace.
func (s *doctor) checkWorkspaces() api.Check {
	root := filepath.Dir(s.workspaceOf("x"))
	if err := os.MkdirAll(root, 0o700); err != nil {
		return api.Check{Name: "workspaces", Status: api.CheckFail, Detail: err.Error(), Fix: "make " + root + " writable by the user agentd runs as"}
	}
	f, err := os.CreateTemp(root, ".doctor-*")
	if err != nil {
		return api.Check{Name: "workspaces", Status: api.CheckFail, Detail: fmt.Sprintf("cannot write in %s: %v", root, err),
			Fix: "make " + root + " writable by the user agentd runs as"}
	}
	f.Close()
	os.Remove(f.Name())
	return api.Check{Name: "workspaces", Status: api.CheckOK, Detail: root + " is writable"}
}
