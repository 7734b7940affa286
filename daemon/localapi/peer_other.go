//go:build !linux

package localapi

import "net"

// peerOf cannot ask who connected on this system; the socket's mode (0600) is the only
// guard, and a pid check asked for refuses every request. agentd's sandbox is Linux's.
func peerOf(c net.Conn) (Peer, error) {
	return Peer{}, errNoPeerCred
}
