package web

import "github.com/agentd/agentd/commands/netguard"

// ErrBlocked marks a fetch the network guard refused; a *BlockedError carries the details.
// Both are the guard's (commands/netguard), named here for this package's callers.
var ErrBlocked = netguard.ErrBlocked

// BlockedError is a connection the guard refused: Host (as the URL named it) stands for
// Addr, which is not a public address.
type BlockedError = netguard.BlockedError

// guard is the fetcher's network guard, built from its fields at first use.
func (f *Fetcher) guard() *netguard.Guard {
	return &netguard.Guard{
		AllowPrivate:  f.AllowPrivate,
		Resolver:      f.Resolver,
		Exempt:        f.allowAddr,
		BeforeConnect: f.beforeConnect,
	}
}
