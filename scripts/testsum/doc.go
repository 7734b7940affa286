// Command testsum turns `go test -json` into what a person waiting on scripts/test.sh needs:
// one line per package as it finishes, with its time and its slowest tests; a heartbeat
// naming the running tests of any package that is still going, so a long package never looks
// like a hang; and every failure printed in full at the end, after the noise of the others.
//
// Usage: go test -json ./... | go run ./scripts/testsum [-heartbeat 30s] [-json FILE]
//
// It exits 1 when a test, a package or a build failed, so a pipeline under `set -o pipefail`
// fails even if go test's own status were lost. Lines that are not JSON are passed through.
package main
