package structure

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Duplicates counts the pairs of near-copies (the duplicates tool's, six lines or more)
// in product code and, apart, in tests and test doubles: each side is copied into a
// folder of its own and the tool counts the pairs inside it, so a pair across the two
// sides counts in neither.
func Duplicates(root string) (product, tests int, err error) {
	r, err := Load(root)
	if err != nil {
		return 0, 0, err
	}
	tmp, err := os.MkdirTemp("", "structure-dups-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(tmp)
	for _, f := range r.Files {
		side := "tests"
		if f.Product() {
			side = "product"
		}
		src, err := os.ReadFile(filepath.Join(root, f.Path))
		if err != nil {
			return 0, 0, err
		}
		dst := filepath.Join(tmp, side, f.Path)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return 0, 0, err
		}
		if err := os.WriteFile(dst, src, 0o644); err != nil {
			return 0, 0, err
		}
	}
	if product, err = countPairs(filepath.Join(tmp, "product")); err != nil {
		return 0, 0, err
	}
	tests, err = countPairs(filepath.Join(tmp, "tests"))
	return product, tests, err
}

// countPairs runs duplicates over dir and reads the count from its first line.
func countPairs(dir string) (int, error) {
	cmd := exec.Command("duplicates", "--repo", dir, "--most", "1", "--seconds", "600")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("duplicates (needs the duplicates tool on PATH): %w\n%s", err, stderr.Bytes())
	}
	first, _, _ := strings.Cut(string(out), "\n")
	if strings.HasPrefix(first, "no duplicates") {
		return 0, nil
	}
	if strings.Contains(string(out), "incomplete:") {
		return 0, fmt.Errorf("duplicates did not finish reading %s: %s", dir, out)
	}
	n, _, _ := strings.Cut(first, " ")
	return strconv.Atoi(n)
}
