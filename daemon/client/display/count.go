package display

import "strconv"

// Count says how many of something there are, in the singular for one and the plural
// otherwise: Count(1, "proposal", "proposals") is "1 proposal", Count(3, …) "3 proposals".
// Both forms are given, so irregular ones read right ("memory is", "memories are").
func Count(n int, one, many string) string {
	if n == 1 || n == -1 {
		return strconv.Itoa(n) + " " + one
	}
	return strconv.Itoa(n) + " " + many
}
