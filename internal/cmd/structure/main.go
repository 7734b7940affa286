// Command structure prints the figures the redesign of the daemon's structure is measured
// by: product lines, daemon/agent's file links and the share running upward, the widest
// behaviour type, long functions, effect kinds nobody applies, the files a decision and a
// chat click walk through, and (with -dups) the near-copies in product code and in tests.
//
//	go run ./internal/cmd/structure [-v] [-dups]
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/agentd/agentd/internal/structure"
)

func main() {
	verbose := flag.Bool("v", false, "list what is behind each figure")
	dups := flag.Bool("dups", false, "also count duplicates pairs in product code and in tests (runs the duplicates tool, a minute or more)")
	flag.Parse()
	if err := run(*verbose, *dups); err != nil {
		fmt.Fprintln(os.Stderr, "structure:", err)
		os.Exit(1)
	}
}

func run(verbose, dups bool) error {
	root, err := structure.FindRoot(".")
	if err != nil {
		return fmt.Errorf("no go.mod above this directory: run it inside the repository")
	}
	f, err := structure.Measure(root)
	if err != nil {
		return err
	}
	f.Print(os.Stdout, verbose)
	if dups {
		product, tests, err := structure.Duplicates(root)
		if err != nil {
			return err
		}
		fmt.Printf("duplicates pairs, product code:           %d\n", product)
		fmt.Printf("duplicates pairs, tests and test doubles: %d\n", tests)
	}
	return nil
}
