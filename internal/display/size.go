package display

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Size is a byte count as people read it: "2 GiB", "1.5 GiB", "512 MiB", "100 bytes".
func Size(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift {
			v := float64(n) / float64(int64(1)<<u.shift)
			if v == math.Trunc(v) {
				return fmt.Sprintf("%d %s", int64(v), u.name)
			}
			return fmt.Sprintf("%.1f %s", v, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// sizeUnits are the units ParseSize knows, lower case: binary, with or without "ib",
// and decimal with "b".
var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tib": 1 << 40,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
}

// ParseSize reads a size people write, as Size writes it or shorter: "2GiB", "2 GiB",
// "1.5G", "512MiB", "10GB" (decimal), "4096" (bytes), "0".
func ParseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(t)
	}
	num, unit := t[:i], strings.TrimSpace(t[i:])
	v, err := strconv.ParseFloat(num, 64)
	mult, ok := sizeUnits[unit]
	if err != nil || !ok || num == "" {
		return 0, fmt.Errorf("size %q: want a number and a unit, like \"2GiB\", \"512MiB\" or \"0\"", s)
	}
	if v*mult >= math.MaxInt64 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return int64(v * mult), nil
}
