//go:build !unix

package memory

import (
	"errors"
	"os"
)

// mapFile is not available here: vector reads use ReadAt.
func mapFile(*os.File, int64) ([]byte, error) { return nil, errors.New("mmap not supported") }

func unmapFile([]byte) {}
