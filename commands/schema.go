package commands

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Schema is the subset of JSON Schema agentd generates and validates: objects with declared,
// ordered properties and additionalProperties false; strings with maxLength and enum; integers,
// numbers, booleans; arrays; anyOf. Property order is kept when marshalled because Ollama's
// grammar follows it: the model writes its thoughts before it picks a command.
type Schema struct {
	Type                 string    `json:"type,omitempty"`
	Description          string    `json:"description,omitempty"`
	Enum                 []string  `json:"enum,omitempty"`
	Const                *string   `json:"const,omitempty"`
	MaxLength            *int      `json:"maxLength,omitempty"`
	Minimum              *float64  `json:"minimum,omitempty"`
	Maximum              *float64  `json:"maximum,omitempty"`
	Items                *Schema   `json:"items,omitempty"`
	MinItems             *int      `json:"minItems,omitempty"`
	MaxItems             *int      `json:"maxItems,omitempty"`
	Properties           Props     `json:"properties,omitempty"`
	Required             []string  `json:"required,omitempty"`
	AdditionalProperties *bool     `json:"additionalProperties,omitempty"`
	AnyOf                []*Schema `json:"anyOf,omitempty"`
}

// Prop is one named property of an object schema.
type Prop struct {
	Name   string
	Schema *Schema
}

// Props is an ordered list of properties; it marshals as a JSON object in list order.
type Props []Prop

// MarshalJSON writes the properties as an object, keeping their order.
func (p Props) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, pr := range p {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(pr.Name)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(pr.Schema)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads an object of properties, keeping the order they appear in.
func (p *Props) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	*p = nil
	if tok == nil { // null: no properties
		return nil
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("properties: want an object, got %v", tok)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := tok.(string)
		var s Schema
		if err := dec.Decode(&s); err != nil {
			return err
		}
		*p = append(*p, Prop{Name: name, Schema: &s})
	}
	_, err = dec.Token()
	return err
}

// Get returns the named property's schema, or nil.
func (p Props) Get(name string) *Schema {
	for _, pr := range p {
		if pr.Name == name {
			return pr.Schema
		}
	}
	return nil
}

// Ptr returns a pointer to v; for the optional fields of Schema.
func Ptr[T any](v T) *T { return &v }

// Object returns an object schema with the given properties, all required, no others allowed.
func Object(props ...Prop) *Schema {
	s := &Schema{Type: "object", Properties: props, AdditionalProperties: Ptr(false)}
	s.Required = []string{}
	for _, p := range props {
		s.Required = append(s.Required, p.Name)
	}
	return s
}

// String returns a string schema with a description and a maximum length.
func String(desc string, maxLen int) *Schema {
	return &Schema{Type: "string", Description: desc, MaxLength: Ptr(maxLen)}
}

// MaxGrammarRepetitions is the largest maxLength (or maxItems) Ollama's grammar engine
// accepts; llama.cpp refuses larger bounds and the model runner crashes on them.
const MaxGrammarRepetitions = 2000

// CheckGrammarLimits reports a bound anywhere in s that Ollama's grammar cannot take.
func (s *Schema) CheckGrammarLimits() error {
	if s == nil {
		return nil
	}
	for _, n := range []*int{s.MaxLength, s.MaxItems} {
		if n != nil && *n > MaxGrammarRepetitions {
			return fmt.Errorf("bound %d exceeds %d, the most Ollama's grammar accepts", *n, MaxGrammarRepetitions)
		}
	}
	kids := append([]*Schema{s.Items}, s.AnyOf...)
	for _, p := range s.Properties {
		kids = append(kids, p.Schema)
	}
	for _, k := range kids {
		if err := k.CheckGrammarLimits(); err != nil {
			return err
		}
	}
	return nil
}

// DefaultMaxLength bounds every string a struct field maps to unless its `max` tag says otherwise.
// Small models rarely close a string on their own; a bound keeps every reply finite.
const DefaultMaxLength = 500

// FromStruct derives an object schema from a struct type's exported fields.
// Tags: `json:"name,omitempty"` (omitempty makes it optional), `desc:"..."` (description),
// `max:"N"` (maxLength for strings, maxItems for slices), `enum:"a,b,c"`, `min:"N"` (minimum).
// Supported field kinds: string, bool, ints, floats, []string, nested structs.
func FromStruct(v any) *Schema {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return fromType(t, reflect.StructTag(""))
}

func fromType(t reflect.Type, tag reflect.StructTag) *Schema {
	desc := tag.Get("desc")
	switch t.Kind() {
	case reflect.String:
		s := String(desc, DefaultMaxLength)
		if m, err := strconv.Atoi(tag.Get("max")); err == nil {
			s.MaxLength = Ptr(m)
		}
		if e := tag.Get("enum"); e != "" {
			s.Enum = strings.Split(e, ",")
			s.MaxLength = nil
		}
		return s
	case reflect.Bool:
		return &Schema{Type: "boolean", Description: desc}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		s := &Schema{Type: "integer", Description: desc}
		if m, err := strconv.ParseFloat(tag.Get("min"), 64); err == nil {
			s.Minimum = Ptr(m)
		}
		return s
	case reflect.Float32, reflect.Float64:
		return &Schema{Type: "number", Description: desc}
	case reflect.Slice:
		s := &Schema{Type: "array", Description: desc, Items: fromType(t.Elem(), "")}
		if m, err := strconv.Atoi(tag.Get("max")); err == nil {
			s.MaxItems = Ptr(m)
		}
		return s
	case reflect.Struct:
		s := &Schema{Type: "object", Description: desc, AdditionalProperties: Ptr(false), Required: []string{}}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			s.Properties = append(s.Properties, Prop{Name: name, Schema: fromType(f.Type, f.Tag)})
			if !strings.Contains(opts, "omitempty") {
				s.Required = append(s.Required, name)
			}
		}
		return s
	}
	panic(fmt.Sprintf("commands: no schema for Go type %s", t))
}

// ValidationError lists what is wrong with a value, path by path, in words a model can act on.
type ValidationError struct {
	Problems []string
}

func (e *ValidationError) Error() string {
	return "invalid reply: " + strings.Join(e.Problems, "; ")
}

// Validate checks a decoded JSON value (as produced by encoding/json into `any`) against s.
// It returns nil or a *ValidationError naming each problem by its path.
func (s *Schema) Validate(v any) error {
	var probs []string
	s.validate("$", v, &probs)
	if len(probs) == 0 {
		return nil
	}
	return &ValidationError{Problems: probs}
}

func (s *Schema) validate(path string, v any, probs *[]string) {
	if len(s.AnyOf) > 0 {
		*probs = append(*probs, s.closestAlternative(path, v)...)
		return
	}
	add := func(format string, args ...any) { *probs = append(*probs, path+": "+fmt.Sprintf(format, args...)) }
	switch s.Type {
	case "object":
		s.validateObject(path, v, add, probs)
	case "string":
		s.validateString(v, add)
	case "integer", "number":
		s.validateNumber(v, add)
	case "boolean":
		if _, ok := v.(bool); !ok {
			add("want a boolean, got %s", KindOf(v))
		}
	case "array":
		s.validateArray(path, v, add, probs)
	}
}

// closestAlternative returns nothing when v matches one of s.AnyOf, else the problems of
// the closest alternative: fewest problems, preferring one of the value's type.
func (s *Schema) closestAlternative(path string, v any) []string {
	var best []string
	bestFits := false
	for i, alt := range s.AnyOf {
		var p []string
		alt.validate(path, v, &p)
		if len(p) == 0 {
			return nil
		}
		fits := alt.fitsType(v)
		if i == 0 || (fits && !bestFits) || (fits == bestFits && len(p) < len(best)) {
			best, bestFits = p, fits
		}
	}
	return best
}

// validateObject checks an object's required properties, then each property in name
// order against its schema; one not declared is a problem only with additionalProperties false.
func (s *Schema) validateObject(path string, v any, add func(string, ...any), probs *[]string) {
	m, ok := v.(map[string]any)
	if !ok {
		add("want an object, got %s", KindOf(v))
		return
	}
	for _, r := range s.Required {
		if _, ok := m[r]; !ok {
			add("missing required property %q", r)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		ps := s.Properties.Get(k)
		if ps == nil {
			if s.AdditionalProperties != nil && !*s.AdditionalProperties {
				add("unexpected property %q (allowed: %s)", k, strings.Join(s.propNames(), ", "))
			}
			continue
		}
		ps.validate(path+"."+k, m[k], probs)
	}
}

// validateString checks a string against const and enum. maxLength is a decoding aid, not
// a reason to reject: over-long strings are accepted.
func (s *Schema) validateString(v any, add func(string, ...any)) {
	str, ok := v.(string)
	if !ok {
		add("want a string, got %s", KindOf(v))
		return
	}
	if s.Const != nil && str != *s.Const {
		add("want %q, got %q", *s.Const, str)
	}
	if len(s.Enum) > 0 && !slices.Contains(s.Enum, str) {
		add("%q is not one of: %s", str, strings.Join(s.Enum, ", "))
	}
}

// validateNumber checks a number (float64 or json.Number) against the type's integrality
// and the minimum and maximum.
func (s *Schema) validateNumber(v any, add func(string, ...any)) {
	f, ok := v.(float64)
	if n, isNum := v.(json.Number); isNum {
		f, _ = n.Float64()
		ok = true
	}
	if !ok {
		want := "a number"
		if s.Type == "integer" {
			want = "an integer"
		}
		add("want %s, got %s", want, KindOf(v))
		return
	}
	if s.Type == "integer" && f != float64(int64(f)) {
		add("want an integer, got %v", f)
	}
	if s.Minimum != nil && f < *s.Minimum {
		add("%v is below the minimum %v", f, *s.Minimum)
	}
	if s.Maximum != nil && f > *s.Maximum {
		add("%v is above the maximum %v", f, *s.Maximum)
	}
}

// validateArray checks an array's length bounds, then each item against s.Items.
func (s *Schema) validateArray(path string, v any, add func(string, ...any), probs *[]string) {
	a, ok := v.([]any)
	if !ok {
		add("want an array, got %s", KindOf(v))
		return
	}
	if s.MinItems != nil && len(a) < *s.MinItems {
		add("want at least %d items, got %d", *s.MinItems, len(a))
	}
	if s.MaxItems != nil && len(a) > *s.MaxItems {
		add("want at most %d items, got %d", *s.MaxItems, len(a))
	}
	if s.Items != nil {
		for i, e := range a {
			s.Items.validate(fmt.Sprintf("%s[%d]", path, i), e, probs)
		}
	}
}

// fitsType reports whether v is of the schema's declared type (any value fits no type).
func (s *Schema) fitsType(v any) bool {
	switch v.(type) {
	case map[string]any:
		return s.Type == "" || s.Type == "object"
	case []any:
		return s.Type == "" || s.Type == "array"
	case string:
		return s.Type == "" || s.Type == "string"
	case bool:
		return s.Type == "" || s.Type == "boolean"
	case float64, json.Number:
		return s.Type == "" || s.Type == "number" || s.Type == "integer"
	}
	return s.Type == ""
}

func (s *Schema) propNames() []string {
	var n []string
	for _, p := range s.Properties {
		n = append(n, p.Name)
	}
	return n
}

// KindOf names the JSON kind of a decoded value ("an object", "a string", ...) for error messages.
func KindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64, json.Number:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}
