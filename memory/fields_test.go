package memory

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"
)

// chat is a chat memory of agent "a": who said text, after what.
func chat(id, speaker, text, context string, at time.Time) Doc {
	return Doc{ID: id, Agent: "a", Kind: KindChat, Text: text, Speaker: speaker, Context: context, Created: at}
}

// The speaker, the previous turn and the dates are fields a question's words find.
func TestDialogFields(t *testing.T) {
	ix := open(t, Options{Now: func() time.Time { return said.AddDate(0, 1, 0) }})
	load(t, ix,
		chat("q", "Ben", "Congrats! What breed is Biscuit?", "I adopted a puppy called Biscuit", said),
		chat("answer", "Ana", "A beagle. He loves the beach.", "Congrats! What breed is Biscuit?", said.Add(time.Second)),
		chat("ana-beach", "Ana", "The beach was windy.", "", said.Add(2*time.Second)),
		chat("ben-beach", "Ben", "The beach was windy.", "", said.Add(3*time.Second)),
		chat("group-dated", "Cleo", "I went to a pottery class yesterday, so calming.", "", said),
		chat("group-undated", "Cleo", "The pottery class is so calming.", "", said),
		chat("in-text", "Dee", "My violin is old.", "", said),
		chat("in-context", "Dee", "My bike is old.", "Is that your violin?", said),
		chat("both-fields", "Dee", "Violin lessons.", "Violin?", said),
		chat("two-words", "Dee", "Violin lessons are on Tuesday.", "", said),
	)
	cases := []struct {
		name, question string
		wantFirst      string
		wantBefore     []string // wantFirst ranks above these
		wantAlso       []string // found too
	}{
		{"previous_turn_finds_short_answer", "What breed is the dog?", "q", nil, []string{"answer"}},
		{"answer_found_by_its_question", "Which breed is Biscuit, the beagle?", "answer", []string{"q"}, nil},
		{"speaker_named_in_question", "What did Ana say about the beach?", "ana-beach", []string{"ben-beach"}, nil},
		{"when_prefers_dated_memory", "When did Cleo go to the pottery class?", "group-dated", []string{"group-undated"}, nil},
		{"text_outweighs_context", "How old is the violin?", "in-text", []string{"in-context"}, nil},
		{"word_in_two_fields_counts_once", "violin lessons tuesday", "two-words", []string{"both-fields"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hits := find(t, ix, Query{Agent: "a", Text: c.question, K: 10})
			got := ids(hits)
			if len(got) == 0 || got[0] != c.wantFirst {
				t.Fatalf("%q: got %v, want %s first", c.question, got, c.wantFirst)
			}
			for _, a := range c.wantAlso {
				if !slices.Contains(got, a) {
					t.Errorf("%q: %s not found: %v", c.question, a, got)
				}
			}
			for _, b := range c.wantBefore {
				if i := slices.Index(got, b); i >= 0 && i < slices.Index(got, c.wantFirst) {
					t.Errorf("%q: %s ranks above %s: %v", c.question, b, c.wantFirst, got)
				}
			}
		})
	}
	t.Run("hit_carries_speaker", func(t *testing.T) {
		hits := find(t, ix, Query{Agent: "a", Text: "pottery class yesterday", K: 1})
		if len(hits) != 1 || hits[0].Speaker != "Cleo" {
			t.Fatalf("got %+v, want Cleo's memory", hits)
		}
	})
	t.Run("dates_asked_by_month", func(t *testing.T) {
		load(t, ix, chat("june", "Eve", "We went camping with the kids.", "", time.Date(2023, 6, 27, 10, 0, 0, 0, time.UTC)),
			chat("may", "Eve", "We went camping with the kids.", "", said))
		got := ids(find(t, ix, Query{Agent: "a", Text: "When did Eve go camping in June?", K: 2}))
		if !reflect.DeepEqual(got, []string{"june", "may"}) {
			t.Fatalf("got %v, want the June memory first", got)
		}
	})
}

// Explain says why each hit of a search matched: the memory's words the question has and
// their fields, the turn before it when none of its own words did, its day when the
// question asks about time.
func TestExplainMatch(t *testing.T) {
	ix := open(t, Options{Now: func() time.Time { return said.AddDate(0, 1, 0) }})
	load(t, ix,
		chat("answer", "Ana", "A beagle. We got him yesterday.", "What breed is Biscuit?", said),
		chat("q", "Ben", "What breed is Biscuit?", "", said))
	cases := []struct {
		name, question string
		want           map[string]Match
	}{
		{"text_and_context", "What breed is Biscuit?", map[string]Match{
			"q": {Words: []string{"breed", "Biscuit"}, Fields: []string{"text"}}, "answer": {Fields: []string{"context"}}}},
		{"speaker_and_date", "When did Ana get the beagle?", map[string]Match{
			"answer": {Words: []string{"beagle"}, Fields: []string{"text", "speaker"}, Date: said}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := map[string]Match{}
			for _, h := range find(t, ix, Query{Agent: "a", Text: c.question}) {
				got[h.ID] = Explain(c.question, h)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("%q: %+v, want %+v", c.question, got, c.want)
			}
		})
	}
	t.Run("similar_meaning", func(t *testing.T) {
		h := Hit{ID: "v", Kind: KindNote, Text: "The hound sleeps.", Similarity: 0.8}
		if got := Explain("What breed is Biscuit?", h); !got.Similar || got.Fields != nil {
			t.Errorf("a hit found by the vector side alone: %+v, want Similar and no fields", got)
		}
	})
}

func TestContextTail(t *testing.T) {
	cases := []struct {
		name, in string
		max      int
		want     string
	}{
		{"short_kept_whole", "What breed is he?", 160, "What breed is he?"},
		{"cut_at_a_word", "I adopted a puppy. What breed is he?", 20, "What breed is he?"},
		{"one_long_word_cut_on_a_rune", "ééééé", 5, "éé"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := contextTail(c.in, c.max); got != c.want {
				t.Errorf("contextTail(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
			}
		})
	}
}

// Explain names the speaker field when the query names who said it.
func TestExplainSpeakerField(t *testing.T) {
	h := Hit{ID: "x", Kind: KindChat, Text: "The beach was windy.", Speaker: "Ana", Source: "chat", Created: said}
	cases := []struct {
		name, query string
		fields      []string
	}{
		{"speaker_and_text", "What did Ana say about the beach?", []string{"text", "speaker"}},
		{"text_only", "how was the beach", []string{"text"}},
		{"speaker_only", "Ana", []string{"speaker"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Explain(c.query, h).Fields; !reflect.DeepEqual(got, c.fields) {
				t.Errorf("Explain(%q).Fields = %q, want %q", c.query, got, c.fields)
			}
		})
	}
}

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
