package display

import "fmt"

// Count says how many of something there are, in the singular for one and the plural
// otherwise: Count(1, "proposal", "proposals") is "1 proposal", Count(3, …) "3 proposals".
// Both forms are given, so irregular ones read right ("memory is", "memories are").
func Count[N ~int | ~int32 | ~int64 | ~uint | ~uint32 | ~uint64](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprint(n) + " " + many
}
