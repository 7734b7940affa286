package shell

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/netguard"
	"github.com/agentd/agentd/internal/display"
	"github.com/agentd/agentd/internal/randid"
)

// ErrURLRefused marks a clone_repository URL refused before git ran.
var ErrURLRefused = errors.New("url refused")

// cloneRepository is clone_repository: a shallow git clone of an http(s) URL into a new
// folder of the workspace.
//
// git needs the network, so it runs outside the sandbox; instead everything that could
// turn a clone into running code or reaching the daemon's network is switched off: only
// the http and https transports, no hooks, no credential helpers or prompts, no system or
// user config (the workspace, which is HOME, may hold a .gitconfig the model wrote), no
// redirects. git reaches the network only through a forward proxy on 127.0.0.1 that the
// command runs for the clone, whose one way out is the network guard (commands/netguard):
// git never resolves or connects by itself, so the guard's reading of the host, and the
// address it checked, is what git gets.
type cloneRepository struct {
	opts  Options
	git   string
	guard *netguard.Guard
	// testConfig, set only by tests, adds git -c options (a CA to trust for a test server).
	testConfig []string
}

type cloneRepositoryArgs struct {
	URL  string `json:"url" desc:"http(s) URL of the repository" max:"1000"`
	Path string `json:"path" desc:"new folder in the workspace" max:"256"`
}

var cloneRepositorySpec = commands.Spec{
	Name:        "clone_repository",
	Description: "Clone a git repository",
	Params:      commands.FromStruct(cloneRepositoryArgs{}),
	Class:       commands.ClassNetwork,
	Subject:     "url",
}

// NewCloneRepository returns the clone_repository command. It fails with ErrNoGit when
// git is not installed, so the daemon can leave the command out. Options.Sandbox, Bwrap
// and the path lists do not apply to it.
func NewCloneRepository(o Options) (commands.Command, error) {
	o, err := o.check()
	if err != nil {
		return nil, err
	}
	git, err := lookProgram(o.Git, "git")
	if err != nil {
		return nil, fmt.Errorf("shell: %w: %v", ErrNoGit, err)
	}
	return &cloneRepository{opts: o, git: git, guard: &netguard.Guard{AllowPrivate: o.AllowPrivateNetworks}}, nil
}

// Spec implements commands.Command.
func (*cloneRepository) Spec() commands.Spec { return cloneRepositorySpec }

// Execute implements commands.Command.
func (c *cloneRepository) Execute(ctx context.Context, env commands.Env, raw json.RawMessage) (string, error) {
	var a cloneRepositoryArgs
	if err := commands.DecodeArgs("clone_repository", raw, &a); err != nil {
		return "", err
	}
	u, ws, dest, err := c.target(a, env.Workspace)
	if err != nil {
		return "", err
	}
	// git runs unsandboxed: it clones into a new folder of the workspace's top, which only
	// this command reaches, and the result is renamed into place through the workspace's
	// Root, which follows no link out of it should dest's folders have changed meanwhile.
	root, err := commands.OpenWorkspace(ws)
	if err != nil {
		return "", fmt.Errorf("clone_repository: %w", err)
	}
	defer root.Close()
	rel, err := filepath.Rel(ws, dest)
	if err != nil {
		return "", fmt.Errorf("clone_repository: %w", err)
	}
	tmp := ".clone-" + randid.Hex(8)
	if err := root.Mkdir(tmp, 0o700); err != nil {
		return "", fmt.Errorf("clone_repository: cannot make a folder to clone into: %w", err)
	}
	defer root.RemoveAll(tmp) // empty after a clone renamed into place; a partial one otherwise
	// No other agent's write lands in the tree while git reads the clone's config.
	end, err := commands.GitRun(ctx, ws)
	if err != nil {
		return "", fmt.Errorf("clone_repository: not run: %w", err)
	}
	err = c.clone(ctx, env.AgentID, u, root, tmp)
	end()
	if err != nil {
		return "", err
	}
	if err := place(root, path.Join(tmp, "repo"), filepath.ToSlash(rel)); err != nil {
		// The tree changed since the check (a link swapped in): checking again names it.
		if _, rerr := commands.ResolveWritePath(ws, a.Path); rerr != nil {
			return "", fmt.Errorf("clone_repository: %w", rerr)
		}
		return "", fmt.Errorf("clone_repository: path %q: %s", a.Path, err)
	}
	return fmt.Sprintf("Cloned %s into %s (latest commit only).\n%s", u, filepath.Clean(a.Path), listing(root.FS(), rel)), nil
}

// target checks what a clone asks for before anything runs: the URL and its host, and a
// new folder beneath the workspace ws for dest.
func (c *cloneRepository) target(a cloneRepositoryArgs, workspace string) (u *url.URL, ws, dest string, err error) {
	if u, err = checkRepoURL(a.URL); err != nil {
		return nil, "", "", fmt.Errorf("clone_repository: %w", err)
	}
	if ws, err = commands.ResolvePath(workspace, "."); err != nil {
		return nil, "", "", fmt.Errorf("clone_repository: %w", err)
	}
	if dest, err = commands.ResolveWritePath(ws, a.Path); err != nil {
		return nil, "", "", fmt.Errorf("clone_repository: %w", err)
	}
	if dest == ws {
		return nil, "", "", fmt.Errorf("clone_repository: path %q is the workspace itself; give a new folder name", a.Path)
	}
	if _, err := os.Lstat(dest); err == nil {
		return nil, "", "", fmt.Errorf("clone_repository: path %q already exists; give a new folder name", a.Path)
	}
	if err := c.checkHost(u); err != nil {
		return nil, "", "", fmt.Errorf("clone_repository: %w", err)
	}
	return u, ws, dest, nil
}

// clone runs git clone of u into a folder repo in the folder tmp of root, with every way
// to run code or reach the network by itself switched off: its one way out is the
// guard's proxy. git reaches tmp by its descriptor (/proc/self/fd/3), not its path, so a
// link swapped on the workspace's path after the checks does not lead git elsewhere.
// (Once started, git works with the path the descriptor named then: a swap while it runs
// is not closed here.) The work tree is filled after (checkout), by a git that reads a
// config the daemon wrote.
func (c *cloneRepository) clone(ctx context.Context, agentID string, u *url.URL, root *os.Root, tmp string) error {
	into, err := root.Open(tmp)
	if err != nil {
		return fmt.Errorf("clone_repository: cannot open the folder to clone into: %w", err)
	}
	defer into.Close()
	proxy, err := netguard.NewProxy(c.guard)
	if err != nil {
		return fmt.Errorf("clone_repository: %w", err)
	}
	defer proxy.Close()
	argv := []string{c.git,
		"-c", "protocol.allow=never", "-c", "protocol.http.allow=always", "-c", "protocol.https.allow=always",
		"-c", "protocol.file.allow=never", "-c", "credential.helper=", "-c", "core.hooksPath=/dev/null",
		"-c", "http.followRedirects=false", "-c", "http.proxy=" + proxy.URL()}
	argv = append(argv, c.testConfig...)
	argv = append(argv, "clone", "--quiet", "--no-checkout", "--depth", "1", "--", u.String(), "/proc/self/fd/3/repo")
	home, err := os.MkdirTemp("", "agentd-home-") // never the workspace: no .netrc of the agent's
	if err != nil {
		return fmt.Errorf("clone_repository: cannot make an empty HOME: %w", err)
	}
	defer os.RemoveAll(home)
	genv := append(gitEnv(c.opts.env(home, false, false)), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	if testHookCloneStarting != nil {
		testHookCloneStarting()
	}
	cg, err := c.opts.Boxes.enter(agentID) // git's processes and memory count as the agent's
	if err != nil {
		return fmt.Errorf("clone_repository: not run: %w", err)
	}
	defer cg.leave()
	// From "/", git finds no repository around it whose config it would read; the workspace may be one.
	res, err := runProgram(ctx, cg, "/", argv, genv, c.opts.OutputCap, nil, into)
	switch {
	case res == nil:
		return fmt.Errorf("clone_repository: cannot start git: %w", err)
	case err != nil:
		return fmt.Errorf("clone_repository: git was killed: %w", err)
	case res.state.Success():
		return c.checkout(ctx, cg, genv, root, tmp)
	case proxy.Refused() != nil:
		return fmt.Errorf("clone_repository: %w", refusal(proxy.Refused()))
	}
	return fmt.Errorf("clone_repository: git clone %s failed: %s", u, strings.TrimSpace(res.text()))
}

// checkout fills the work tree of the clone at tmp/repo in root, made with no checkout,
// by a git that reads a config the daemon wrote (checkoutConfig) in place of the one git
// clone wrote: that one came from the remote and lay in the workspace while git fetched,
// and a checkout, unsandboxed, would run the programs a config names (core.fsmonitor, the
// filter a .gitattributes of the tree selects, ...), whatever their names. The few keys
// that name one for every repository are set off on the command line too. git's own
// config is put back after, for the agent's git, which a bounded run vets.
func (c *cloneRepository) checkout(ctx context.Context, cg *boxRun, env []string, root *os.Root, tmp string) error {
	cfg, aside := path.Join(tmp, "repo", ".git", "config"), path.Join(tmp, "config")
	own, err := root.ReadFile(cfg)
	if err == nil {
		err = root.Rename(cfg, aside)
	}
	if err == nil {
		err = root.WriteFile(cfg, checkoutConfig(own), 0o644)
	}
	if err != nil {
		return fmt.Errorf("clone_repository: cannot write the config of the checkout: %w", err)
	}
	into, err := root.Open(tmp)
	if err != nil {
		return fmt.Errorf("clone_repository: cannot open the clone: %w", err)
	}
	defer into.Close()
	argv := []string{c.git, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.logAllRefUpdates=false",
		"--git-dir=/proc/self/fd/3/repo/.git", "--work-tree=/proc/self/fd/3/repo", "reset", "--quiet", "--hard"}
	res, err := runProgram(ctx, cg, "/", argv, env, c.opts.OutputCap, nil, into)
	switch {
	case res == nil:
		return fmt.Errorf("clone_repository: cannot start git: %w", err)
	case err != nil:
		return fmt.Errorf("clone_repository: git was killed: %w", err)
	case !res.state.Success():
		return fmt.Errorf("clone_repository: checking out the clone failed: %s", strings.TrimSpace(res.text()))
	}
	if err := root.Rename(aside, cfg); err != nil {
		return fmt.Errorf("clone_repository: cannot put the clone's config back: %w", err)
	}
	return nil
}

// checkoutConfig is the config a clone's checkout reads: a work tree's, in the object
// format git's own config (own) names, and nothing else.
func checkoutConfig(own []byte) []byte {
	cfg := "[core]\n\trepositoryformatversion = 1\n\tbare = false\n"
	if sha256Format.Match(own) {
		cfg += "[extensions]\n\tobjectformat = sha256\n"
	}
	return []byte(cfg)
}

var sha256Format = regexp.MustCompile(`(?mi)^\s*objectformat\s*=\s*sha256\s*$`)

// place renames the clone at from to rel, both in root, making rel's folders. It refuses
// an existing rel, and a rel whose folders now lead out of root (the Root's own refusal).
func place(root *os.Root, from, rel string) error {
	if dir := path.Dir(rel); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("cannot make its folder: %w", err)
		}
	}
	if _, err := root.Lstat(rel); err == nil {
		return errors.New("already exists; give a new folder name")
	}
	if err := root.Rename(from, rel); err != nil {
		return fmt.Errorf("cannot move the clone there: %w", err)
	}
	return nil
}

// testHookCloneStarting, set by tests, runs after the checks and before git starts, where
// a folder swapped for a link is the race the clone must win.
var testHookCloneStarting func()

// checkRepoURL accepts an http(s) URL with a host and nothing that could carry
// credentials or be taken for a git option.
func checkRepoURL(raw string) (*url.URL, error) {
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("%w: %q %s", ErrURLRefused, raw, fmt.Sprintf(format, args...))
	}
	switch {
	case raw == "":
		return nil, fmt.Errorf("%w: empty url: give an http(s) URL like https://github.com/owner/repo.git", ErrURLRefused)
	case strings.HasPrefix(raw, "-"):
		return nil, refuse("starts with '-'; give an http(s) URL")
	case strings.ContainsFunc(raw, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
		return nil, refuse("contains spaces or control characters")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return nil, refuse("is not an http(s) URL; local paths and ssh addresses like git@host:owner/repo cannot be cloned")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, refuse("uses %s:; only http and https URLs can be cloned", u.Scheme)
	}
	if u.User != nil { // the proposal holds the URL already; errors and logs need not repeat it
		return nil, fmt.Errorf("%w: %q carries credentials; give the URL without a user name or password", ErrURLRefused, u.Redacted())
	}
	if u.Hostname() == "" {
		return nil, refuse("has no host")
	}
	if u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(raw, "?#") {
		bare := *u
		bare.RawQuery, bare.Fragment, bare.ForceQuery = "", "", false
		return nil, fmt.Errorf("%w: the url has a query or fragment (which can carry tokens); give the repository URL alone, like %q", ErrURLRefused, bare.String())
	}
	return u, nil
}

// checkHost refuses, before git starts, a URL whose host is an address the guard refuses
// or that it cannot read one way only. A name is resolved and checked when git's
// connection to it is made, through the proxy, once.
func (c *cloneRepository) checkHost(u *url.URL) error {
	port := 443
	if u.Scheme == "http" {
		port = 80
	}
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return fmt.Errorf("%w: port %q is not a port number", ErrURLRefused, p)
		}
		port = int(n)
	}
	if err := c.guard.CheckHost(u.Hostname(), uint16(port)); err != nil {
		return refusal(err)
	}
	return nil
}

// refusal marks the guard's refusals as ErrURLRefused; other errors (a name that does not
// resolve) pass as they are.
func refusal(err error) error {
	if errors.Is(err, netguard.ErrBlocked) || errors.Is(err, netguard.ErrBadHost) {
		return fmt.Errorf("%w: %w", ErrURLRefused, err)
	}
	return err
}

// gitEnv drops from env every variable that could steer git or curl past the proxy or
// re-configure git: *_proxy and NO_PROXY in any case, and GIT_* (config by environment,
// GIT_SSL_*, GIT_PROXY_COMMAND ...). A daemon's PassEnv may carry them.
func gitEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		upper := strings.ToUpper(name)
		if strings.HasSuffix(upper, "_PROXY") || upper == "NO_PROXY" || strings.HasPrefix(upper, "GIT_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// listing names the top of a fresh clone, for the model's next step.
func listing(fsys fs.FS, dir string) string {
	entries, err := fs.ReadDir(fsys, filepath.ToSlash(dir))
	if err != nil {
		return ""
	}
	var names []string
	for _, e := range entries {
		if e.Name() == ".git" {
			continue
		}
		n := display.Escape(e.Name(), display.Line) // a repo's names are anyone's text
		if e.IsDir() {
			n += "/"
		}
		names = append(names, n)
	}
	const most = 30
	more := ""
	if len(names) > most {
		more = fmt.Sprintf(" and %d more", len(names)-most)
		names = names[:most]
	}
	if len(names) == 0 {
		return "It has no files."
	}
	return "Top level: " + strings.Join(names, ", ") + more
}
