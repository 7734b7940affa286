package commands

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/testutil"
)

func TestPropsMarshalKeepsOrder(t *testing.T) {
	s := Object(
		Prop{"zeta", String("last letter", 10)},
		Prop{"alpha", &Schema{Type: "integer"}},
		Prop{"mid", Object(Prop{"y", &Schema{Type: "boolean"}}, Prop{"b", String("", 3)})},
	)
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{"zeta":{"type":"string","description":"last letter","maxLength":10},` +
		`"alpha":{"type":"integer"},"mid":{"type":"object","properties":{"y":{"type":"boolean"},` +
		`"b":{"type":"string","maxLength":3}},"required":["y","b"],"additionalProperties":false}},` +
		`"required":["zeta","alpha","mid"],"additionalProperties":false}`
	if string(b) != want {
		t.Fatalf("marshal:\n got %s\nwant %s", b, want)
	}
	var back Schema
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, s) {
		t.Errorf("round trip changed the schema:\n got %#v\nwant %#v", back, *s)
	}
	again, _ := json.Marshal(&back)
	if !bytes.Equal(again, b) {
		t.Errorf("re-marshal differs:\n got %s\nwant %s", again, b)
	}
}

func TestPropsUnmarshal(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
		wantErr  bool
	}{
		{name: "order_kept", in: `{"b":{},"a":{},"c":{}}`, want: []string{"b", "a", "c"}},
		{name: "empty", in: `{}`},
		{name: "null", in: `null`},
		{name: "array", in: `[]`, wantErr: true},
		{name: "string", in: `"x"`, wantErr: true},
		{name: "bad_value", in: `{"a":3}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p Props
			err := json.Unmarshal([]byte(tt.in), &p)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("Unmarshal(%s) = %v, want an error", tt.in, p)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, pr := range p {
				got = append(got, pr.Name)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("names %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFromStruct(t *testing.T) {
	type inner struct {
		On bool `json:"on"`
	}
	type args struct {
		Name    string   `json:"name" desc:"who" max:"40"`
		Mode    string   `json:"mode,omitempty" enum:"fast,slow"`
		Plain   string   `json:"plain"`
		Count   int      `json:"count" min:"1"`
		Ratio   float64  `json:"ratio,omitempty"`
		Tags    []string `json:"tags" max:"3"`
		Inner   inner    `json:"inner"`
		Skipped string   `json:"-"`
		hidden  string
		NoTag   bool
	}
	_ = args{}.hidden
	got, _ := json.Marshal(FromStruct(&args{}))
	want := `{"type":"object","properties":{` +
		`"name":{"type":"string","description":"who","maxLength":40},` +
		`"mode":{"type":"string","enum":["fast","slow"]},` +
		`"plain":{"type":"string","maxLength":500},` +
		`"count":{"type":"integer","minimum":1},` +
		`"ratio":{"type":"number"},` +
		`"tags":{"type":"array","items":{"type":"string","maxLength":500},"maxItems":3},` +
		`"inner":{"type":"object","properties":{"on":{"type":"boolean"}},"required":["on"],"additionalProperties":false},` +
		`"NoTag":{"type":"boolean"}},` +
		`"required":["name","plain","count","tags","inner","NoTag"],"additionalProperties":false}`
	if string(got) != want {
		t.Errorf("FromStruct:\n got %s\nwant %s", got, want)
	}
	defer func() {
		if r := recover(); r == nil {
			t.Error("FromStruct accepted a map field")
		}
	}()
	FromStruct(struct{ M map[string]int }{})
}

func TestSchemaValidate(t *testing.T) {
	s := Object(
		Prop{"name", String("", 10)},
		Prop{"kind", &Schema{Type: "string", Enum: []string{"a", "b"}}},
		Prop{"fixed", &Schema{Type: "string", Const: Ptr("k")}},
		Prop{"n", &Schema{Type: "integer", Minimum: Ptr(1.0), Maximum: Ptr(5.0)}},
		Prop{"x", &Schema{Type: "number"}},
		Prop{"on", &Schema{Type: "boolean"}},
		Prop{"list", &Schema{Type: "array", Items: &Schema{Type: "string"}, MinItems: Ptr(1), MaxItems: Ptr(2)}},
		Prop{"nested", Object(Prop{"deep", &Schema{Type: "boolean"}})},
		Prop{"either", &Schema{AnyOf: []*Schema{{Type: "string"}, Object(Prop{"id", &Schema{Type: "integer"}})}}},
	)
	valid := `{"name":"ok","kind":"a","fixed":"k","n":3,"x":1.5,"on":true,"list":["q"],"nested":{"deep":false},"either":"s"}`
	tests := []struct {
		name  string
		patch string // JSON object merged over valid
		want  []string
	}{
		{name: "valid", patch: `{}`},
		{name: "over_max_length_is_accepted", patch: `{"name":"much longer than ten"}`},
		{name: "anyof_second_branch", patch: `{"either":{"id":4}}`},
		{name: "wrong_type", patch: `{"name":5}`, want: []string{"$.name: want a string, got a number"}},
		{name: "null_value", patch: `{"on":null}`, want: []string{"$.on: want a boolean, got null"}},
		{name: "enum", patch: `{"kind":"c"}`, want: []string{`$.kind: "c" is not one of: a, b`}},
		{name: "const", patch: `{"fixed":"j"}`, want: []string{`$.fixed: want "k", got "j"`}},
		{name: "not_integer", patch: `{"n":2.5}`, want: []string{"$.n: want an integer, got 2.5"}},
		{name: "below_minimum", patch: `{"n":0}`, want: []string{"$.n: 0 is below the minimum 1"}},
		{name: "above_maximum", patch: `{"n":6}`, want: []string{"$.n: 6 is above the maximum 5"}},
		{name: "number_not_string", patch: `{"x":"1"}`, want: []string{"$.x: want a number, got a string"}},
		{name: "too_few_items", patch: `{"list":[]}`, want: []string{"$.list: want at least 1 items, got 0"}},
		{name: "too_many_items", patch: `{"list":["a","b","c"]}`, want: []string{"$.list: want at most 2 items, got 3"}},
		{name: "bad_item", patch: `{"list":["a",2]}`, want: []string{"$.list[1]: want a string, got a number"}},
		{name: "nested_path", patch: `{"nested":{"deep":"yes"}}`, want: []string{"$.nested.deep: want a boolean, got a string"}},
		{name: "nested_extra", patch: `{"nested":{"deep":true,"more":1}}`, want: []string{`$.nested: unexpected property "more" (allowed: deep)`}},
		{name: "anyof_closest_branch", patch: `{"either":{"id":"x"}}`, want: []string{"$.either.id: want an integer, got a string"}},
		{name: "extra_property", patch: `{"zz":1}`, want: []string{`$: unexpected property "zz" (allowed: name, kind, fixed, n, x, on, list, nested, either)`}},
		{name: "several_problems_sorted_by_key", patch: `{"on":1,"kind":"z"}`, want: []string{
			`$.kind: "z" is not one of: a, b`, "$.on: want a boolean, got a number"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v, patch map[string]any
			json.Unmarshal([]byte(valid), &v)
			if err := json.Unmarshal([]byte(tt.patch), &patch); err != nil {
				t.Fatal(err)
			}
			for k, pv := range patch {
				v[k] = pv
			}
			err := s.Validate(v)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			ve, ok := err.(*ValidationError)
			if !ok {
				t.Fatalf("Validate = %v, want a *ValidationError", err)
			}
			if !reflect.DeepEqual(ve.Problems, tt.want) {
				t.Errorf("problems:\n got %q\nwant %q", ve.Problems, tt.want)
			}
		})
	}
	t.Run("missing_required", func(t *testing.T) {
		err := Object(Prop{"a", String("", 1)}).Validate(map[string]any{})
		if err == nil || err.Error() != `invalid reply: $: missing required property "a"` {
			t.Errorf("Validate = %v", err)
		}
	})
	t.Run("not_an_object", func(t *testing.T) {
		if err := s.Validate([]any{}); err == nil || !strings.Contains(err.Error(), "$: want an object, got an array") {
			t.Errorf("Validate = %v", err)
		}
	})
	t.Run("json_number", func(t *testing.T) {
		if err := (&Schema{Type: "integer"}).Validate(json.Number("7")); err != nil {
			t.Errorf("Validate(json.Number) = %v", err)
		}
	})
}

func TestGoldenSchemas(t *testing.T) {
	set, err := Resolve(DefaultNames)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range set {
		name := c.Spec().Name
		t.Run(name, func(t *testing.T) { testutil.GoldenJSON(t, "testdata/schemas/"+name+".json", c.Spec().Params) })
	}
	t.Run("reply_default", func(t *testing.T) { testutil.GoldenJSON(t, "testdata/schemas/reply_default.json", ReplySchema(set)) })
}
