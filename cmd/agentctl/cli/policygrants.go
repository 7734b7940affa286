package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/agentd/agentd/api"
)

// grantFlags are the flags of policy AGENT add.
type grantFlags struct {
	yes     bool   // --yes: store without asking
	count   int    // --count N
	expires string // --expires D
	run     bool   // --run
	preview int    // --preview N
}

func (g *grantFlags) add(fs *flag.FlagSet) {
	fs.BoolVar(&g.yes, "yes", false, "with add: store the grant without asking (the preview is still shown)")
	fs.IntVar(&g.count, "count", 0, "with add: approve at most N proposals")
	fs.StringVar(&g.expires, "expires", "", "with add: end the grant after a duration such as 8h")
	fs.BoolVar(&g.run, "run", false, "with add: end the grant with the agent's current run")
	fs.IntVar(&g.preview, "preview", 0, "with add: how many of the agent's last proposals to preview (default 20)")
}

// runGrantAdd widens what runs unasked: it shows which of the agent's last proposals
// the pattern would have approved, and stores it as a grant only when told to.
func (a policyVerbs) runGrantAdd(ctx context.Context, ref, pattern string, f grantFlags) error {
	req := api.GrantRequest{Pattern: pattern, By: user(), Source: "agentctl", Count: f.count, Expires: f.expires,
		Run: f.run, Preview: f.preview, DryRun: true}
	pv, err := api.AddGrantRoute.Do(ctx, a.api(), ref, req)
	if err != nil {
		return agentErr(ref, err)
	}
	if !a.json {
		a.printPreview(ref, pv)
	}
	if !f.yes {
		if a.json {
			return usagef("--json with add needs --yes: the preview cannot be answered")
		}
		fmt.Fprintf(a.stderr, "Store this grant for %s? [y/N]: ", line(ref))
		answer, _ := bufio.NewReader(a.stdin).ReadString('\n')
		if !strings.HasSuffix(answer, "\n") {
			fmt.Fprintln(a.stderr) // no answer came: end the prompt's line
		}
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			return errors.New("not stored: answer y to store it, or pass --yes")
		}
	}
	req.DryRun = false
	if pv, err = api.AddGrantRoute.Do(ctx, a.api(), ref, req); err != nil {
		return agentErr(ref, err)
	}
	if a.json {
		return a.printJSON(pv)
	}
	g := pv.Grant
	fmt.Fprintf(a.stdout, "stored grant %s: %s\n", line(g.ID), line(g.Describe()))
	a.note("revoke it with: agentctl policy %s revoke %s", ref, g.ID)
	return nil
}

// printPreview lists what a pattern grant would have approved.
func (a policyVerbs) printPreview(ref string, pv *api.GrantPreview) {
	if len(pv.Matches) == 0 {
		fmt.Fprintf(a.stdout, "%s would have approved none of the %d latest proposals of %s.\n", line(pv.Pattern), pv.Looked, line(ref))
		return
	}
	fmt.Fprintf(a.stdout, "%s would have approved %d of the %d latest proposals of %s:\n", line(pv.Pattern), len(pv.Matches), pv.Looked, line(ref))
	tw := table(a.stdout, "  STEP\tPROPOSAL\tCOMMAND\tSUBJECT")
	for _, m := range pv.Matches {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\n", m.Step, line(m.ProposalID), line(m.Command), truncate(m.Subject, 80))
	}
	tw.Flush()
}

// runGrantRevoke revokes one of the agent's grants.
func (a policyVerbs) runGrantRevoke(ctx context.Context, ref, id string) error {
	g, err := api.RevokeGrantRoute.Do(ctx, a.api(), ref, api.RevokeRequest{ID: id, By: user()})
	return printResult(a.app, g, err, func() { // the daemon names the agent or the grant it did not find
		fmt.Fprintf(a.stdout, "revoked grant %s (%s): it approves nothing from the agent's next proposal on\n", line(g.ID), line(g.Describe()))
	})
}

// printGrants lists an agent's grants, active ones first as the daemon orders them.
func (a policyVerbs) printGrants(gs []api.Grant) error {
	if len(gs) == 0 {
		a.note("no grants: y -N, y! and policy AGENT add make them")
		return nil
	}
	fmt.Fprintln(a.stdout)
	tw := table(a.stdout, "GRANT\tMADE AS\tMATCHES\tBY\tMADE\tENDS\tSTATE")
	for _, g := range gs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", line(g.ID), line(g.Label), grantMatches(&g), line(via(g.By, g.Source)),
			formatTime(g.CreatedAt), grantEnds(&g), line(g.State))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return a.printBoundFiles(gs)
}

// printBoundFiles lists the files exact grants bound, with their contents' sha256 when
// granted: such a grant approves only while each is unchanged.
func (a policyVerbs) printBoundFiles(gs []api.Grant) error {
	var tw *tabwriter.Writer
	for _, g := range gs {
		for _, f := range g.Files {
			if tw == nil {
				fmt.Fprintln(a.stdout, "\nFiles bound by exact grants (a change asks again):")
				tw = table(a.stdout, "  GRANT\tFILE\tSHA-256 WHEN GRANTED")
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", line(g.ID), line(f.Path), line(f.SHA256))
		}
	}
	if tw == nil {
		return nil
	}
	return tw.Flush()
}

// grantMatches says what a grant approves.
func grantMatches(g *api.Grant) string {
	switch g.Kind {
	case api.GrantExact:
		s := line(g.Command) + " with these exact args (" + line(shortHash(g.Hash)) + ")"
		if len(g.Files) > 0 {
			names := make([]string, len(g.Files))
			for i, f := range g.Files {
				names[i] = f.Path
			}
			s += ", " + line(truncate(strings.Join(names, ", "), 60)) + " unchanged"
		}
		return s
	case api.GrantPattern:
		return line(g.Pattern)
	}
	return "any proposal but execute commands"
}

// grantEnds says when a grant ends: its count left, its expiry, its run.
func grantEnds(g *api.Grant) string {
	var ends []string
	if n := g.Left(); n >= 0 {
		ends = append(ends, api.LeftOf(n, g.Count))
	}
	if g.ExpiresAt != nil {
		ends = append(ends, "at "+formatTime(*g.ExpiresAt))
	}
	if g.RunID != "" {
		ends = append(ends, "with run "+line(g.RunID))
	}
	if g.RevokedAt != nil {
		ends = append(ends, "revoked "+formatTime(*g.RevokedAt))
	}
	if len(ends) == 0 {
		return "when revoked"
	}
	return strings.Join(ends, ", ")
}

// writeActiveGrants shows, under agentctl show, the grants that still approve the
// agent's proposals without asking; agentctl policy AGENT lists all of them.
func writeActiveGrants(w io.Writer, gs []api.Grant) {
	active := slices.DeleteFunc(slices.Clone(gs), func(g api.Grant) bool { return g.State != api.GrantActive })
	if len(active) == 0 {
		return
	}
	fmt.Fprintln(w, "\nGrants (run unasked; revoke with agentctl policy AGENT revoke ID):")
	tw := table(w)
	for _, g := range active {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", line(g.ID), line(g.Describe()), grantMatches(&g))
	}
	tw.Flush()
}
