package memory

import (
	"reflect"
	"strconv"
	"testing"
	"time"
)

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
