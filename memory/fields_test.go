package memory

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
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

// said is when the memories below were written: Monday 8 May 2023, early afternoon.
var said = time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC)

func TestResolveDates(t *testing.T) {
	cases := []struct {
		name string
		text string
		want []string // mention labels, in order
	}{
		{"yesterday", "I went to a pottery workshop yesterday.", []string{"2023-05-07"}},
		{"last_night", "Last night was amazing!", []string{"2023-05-07"}},
		{"yesterday_then_weekday", "yesterday Friday felt far", []string{"2023-05-07", "2023-05-05"}},
		{"abbreviated_weekday", "I joined a new group last Tues.", []string{"2023-05-02"}},
		{"today_and_tonight", "Today I rest, tonight I paint.", []string{"2023-05-08", "2023-05-08"}},
		{"tomorrow", "The race is tomorrow", []string{"2023-05-09"}},
		{"last_week", "We went sailing last week", []string{"2023-W18"}},
		{"next_month", "We're thinking about going fishing next month.", []string{"2023-06"}},
		{"last_year", "I read that book last year.", []string{"2022"}},
		{"this_year", "My goal this year is a marathon", []string{"2023"}},
		{"last_weekend", "We hiked last weekend.", []string{"2023-05-06"}},
		{"next_weekend", "Let's meet next weekend!", []string{"2023-05-20"}},
		{"this_weekend", "Busy this weekend", []string{"2023-05-13"}},
		{"two_days_ago", "I ran a half marathon two days ago", []string{"2023-05-06"}},
		{"digit_weeks_ago", "I moved 3 weeks ago", []string{"2023-W16"}},
		{"a_few_years_ago", "We met a few years ago.", []string{"2020"}},
		{"a_couple_of_months_ago", "That was a couple of months ago", []string{"2023-03"}},
		{"ten_years_ago", "My uncle built it for my 18th birthday ten years ago.", []string{"2013"}},
		{"in_two_weeks", "The show opens in two weeks.", []string{"2023-W21"}},
		{"bare_weekday_is_past", "I passed the interviews on Friday.", []string{"2023-05-05"}},
		{"bare_weekday_future_sentence", "I'm going to the vet on Friday.", []string{"2023-05-12"}},
		{"last_friday", "Last Friday, I went to a glazing class.", []string{"2023-05-05"}},
		{"next_monday_is_not_today", "See you next Monday", []string{"2023-05-15"}},
		{"last_monday_is_not_today", "It started last Monday", []string{"2023-05-01"}},
		{"day_month_year", "It was on 7 May 2023.", []string{"2023-05-07"}},
		{"month_day_ordinal", "The fair is on June 3rd", []string{"2023-06-03"}},
		{"day_of_month", "the 21st of March", []string{"2023-03-21"}},
		{"in_month", "We went sailing in June", []string{"2023-06"}},
		{"month_year", "I started in August 2021.", []string{"2021-08"}},
		{"bare_year", "That painting is from 2022.", []string{"2022"}},
		{"modal_may_is_no_month", "May I ask you something? You may like it.", nil},
		{"lowercase_month_words_are_verbs", "we march on", nil},
		{"sentence_start_may_with_day", "May 5 was fun", []string{"2023-05-05"}},
		{"nothing", "The vet said he ate chocolate.", nil},
		{"numbers_without_unit", "I have 2 kids and 3 cats", nil},
		{"several_in_order", "Yesterday I signed up; next month I start. Last year I tried.", []string{"2023-05-07", "2023-06", "2022"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, m := range resolveDates(c.text, said) {
				got = append(got, m.label())
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("resolveDates(%q) = %q, want %q", c.text, got, c.want)
			}
		})
	}
}

func TestDateTerms(t *testing.T) {
	cases := []struct {
		name    string
		text    string
		created time.Time
		want    string
	}{
		{"own_day_only", "I love pottery", said, "2023 2023-05 2023-05-08 may"},
		{"mention_adds_its_dates_and_the_marker", "I went there yesterday", said,
			"2023 2023-05 2023-05-07 2023-05-08 @date may"},
		{"month_mention_has_no_day", "We went camping last month", said,
			"2023 2023-04 2023-05 2023-05-08 @date april may"},
		{"no_time_no_field", "yesterday was fun", time.Unix(0, 0).UTC(), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := dateTerms(c.text, c.created)
			if got != c.want {
				t.Errorf("dateTerms(%q) = %q, want %q", c.text, got, c.want)
			}
		})
	}
}

func TestQueryDates(t *testing.T) {
	asked := time.Date(2024, 1, 15, 9, 0, 0, 0, time.UTC)
	cases := []struct {
		name, question string
		want           []string
	}{
		{"when_asks_for_dated_memories", "When did Ana go to the pottery workshop?", []string{mentionTerm}},
		{"what_year", "What year did Ben paint the mural?", []string{mentionTerm}},
		{"how_long_ago", "How long ago was Ana's 30th birthday?", []string{mentionTerm}},
		{"in_month_any_year", "When did Ben go fishing in June?", []string{mentionTerm, "june"}},
		{"month_and_year", "What did Ben do in May 2023?", []string{"2023-05"}},
		{"bare_year", "What book did she read in 2022?", []string{"2022"}},
		{"last_year_from_now", "Where did they travel last year?", []string{"2023"}},
		{"no_time", "What are Ana's cats' names?", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := queryDates(c.question, asked); !reflect.DeepEqual(got, c.want) {
				t.Errorf("queryDates(%q) = %q, want %q", c.question, got, c.want)
			}
		})
	}
}

// label is the mention as the text says it: "2023-05-07", "2023-W18", "2023-05" or "2023".
func (m mention) label() string {
	switch m.grain {
	case grainDay:
		return m.at.Format("2006-01-02")
	case grainWeek:
		y, w := m.at.ISOWeek()
		return strconv.Itoa(y) + "-W" + twoDigits(w)
	case grainMonth:
		return m.at.Format("2006-01")
	}
	return m.at.Format("2006")
}

func twoDigits(n int) string {
	if n < 10 {
		return "0" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}

// Explain's date follows the same reading of a question as search's dates field.
func TestAsksAboutTime(t *testing.T) {
	for _, tt := range []struct {
		query string
		want  bool
	}{
		{"When did Ana go to the pottery workshop?", true},
		{"What year did Ben start teaching?", true},
		{"What did Ana do in May 2023?", true},
		{"What happened last week?", true},
		{"Where did they go in 2022?", true},
		{"What does Ana like to paint?", false},
		{"Which books did Ben read?", false},
	} {
		if got := AsksAboutTime(tt.query); got != tt.want {
			t.Errorf("AsksAboutTime(%q) = %v, want %v", tt.query, got, tt.want)
		}
	}
}
