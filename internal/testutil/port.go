package testutil

import (
	"net"
	"testing"
)

// AcceptingPort listens on a loopback port that accepts and closes every connection,
// for the tests that check whether a program can reach the host's loopback; it returns
// the port, closed when the test ends.
func AcceptingPort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// FreeAddr returns a loopback address (host:port) nothing listens on now, for a config
// that takes an address to listen on, or a dial that must be refused.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
