package memory

import (
	"fmt"
	"slices"
	"testing"
)

// A word is weighed the same whoever has it as a name: one chat turn by a workspace
// member named "Password" (or a teammate named Bill, Mark or Grant) in another agent's
// thread does not sink every agent's memories that say "password".
func TestAStrangersNameDoesNotBuryAWord(t *testing.T) {
	ix := open(t, Options{})
	var docs []Doc
	for i := range 1000 {
		docs = append(docs, doc(fmt.Sprintf("f%04d", i), "other", KindNote, fmt.Sprintf("filler line %d", i)))
	}
	for i := range 10 {
		docs = append(docs, doc(fmt.Sprintf("reset-%d", i), "me", KindNote, fmt.Sprintf("the reset of router %d went fine", i)))
	}
	docs = append(docs, doc("secret", "me", KindNote, "the password is zebra"))
	load(t, ix, docs...)
	q := Query{Agent: "me", Text: "password reset", K: 5}
	if !slices.Contains(ids(find(t, ix, q)), "secret") {
		t.Fatalf("baseline: the memory with the rare word is not in the top 5: %v", ids(find(t, ix, q)))
	}
	stranger := doc("hi", "another-agent", KindChat, "hi all")
	stranger.Speaker = "Password"
	load(t, ix, stranger)
	if got := ids(find(t, ix, q)); !slices.Contains(got, "secret") {
		t.Errorf("after one chat turn by someone named Password in another agent's thread, the agent's memory of its password is out of the top 5: %v", got)
	}
}
