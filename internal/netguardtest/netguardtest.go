// Package netguardtest holds the address corpus every network command's tests run: each
// numeric, encoded, IPv6 and name form of a loopback or private address a model might put
// in a URL (corpus.txt), so read_webpage, web_search and clone_repository are all tested
// against the same list and a new row reaches all of them.
package netguardtest

import (
	"context"
	_ "embed"
	"fmt"
	"net/netip"
	"regexp"
	"strings"
)

//go:embed corpus.txt
var corpus string

// Case is one row of the corpus.
type Case struct {
	Name   string
	URL    string // with the test's port in place of {port}
	Kind   string // what a refusal by the guard names; "" when the URL is refused before it
	Reach  bool   // with private addresses allowed, the URL reaches the loopback target
	IsName bool   // the host is a name: refused once resolved, at dial time
}

var flags = regexp.MustCompile(`^(reach|name)(,(reach|name))*$`)

// Corpus returns the cases, {port} replaced by port. The names a case's host may be are
// those of Names.
func Corpus(port string) []Case {
	var out []Case
	for _, line := range strings.Split(corpus, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || strings.HasPrefix(f[0], "#") {
			continue
		}
		c := Case{Name: f[0], URL: strings.ReplaceAll(f[1], "{port}", port)}
		rest := f[2:]
		if last := rest[len(rest)-1]; flags.MatchString(last) {
			c.Reach = strings.Contains(last, "reach")
			c.IsName = strings.Contains(last, "name")
			rest = rest[:len(rest)-1]
		}
		if c.Kind = strings.Join(rest, " "); c.Kind == "*" {
			c.Kind = ""
		}
		out = append(out, c)
	}
	return out
}

// Names is what the corpus' host names resolve to; tests serve it from a fake resolver.
var Names = map[string][]string{
	"localhost":        {"127.0.0.1"},
	"loopback.example": {"127.0.0.1"},
	"mapped.example":   {"::ffff:127.0.0.1"},
	"metadata.example": {"169.254.169.254"},
	"intranet.example": {"10.20.30.40"},
	"mixed.example":    {"93.184.215.14", "127.0.0.1"},
	"ula.example":      {"fd12:3456::1"},
}

// Resolver is an injected resolver: a fixed table of host names (lower case) to the
// addresses they resolve to; nothing asks a real one. The numeric forms (2130706433,
// 127.1, 0x7f000001 ...) never reach it: the guard reads them as addresses itself.
type Resolver map[string][]string

// Lookup resolves host from the table; a name not in it is an error.
func (r Resolver) Lookup(_ context.Context, host string) ([]netip.Addr, error) {
	names, ok := r[strings.ToLower(host)]
	if !ok {
		return nil, fmt.Errorf("no such host %q (test resolver)", host)
	}
	var out []netip.Addr
	for _, n := range names {
		out = append(out, netip.MustParseAddr(n))
	}
	return out, nil
}
