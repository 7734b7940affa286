package mcp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/internal/testutil"
)

// TestConvertSchemaGolden converts each testdata/schemas/NAME.in.json and compares the
// result (params and dropped properties, or the error) with NAME.out.json.
func TestConvertSchemaGolden(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "schemas", "*.in.json"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no inputs: %v", err)
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".in.json")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			var schema any // decoded as the go-sdk client decodes a tool's inputSchema
			if err := json.Unmarshal(data, &schema); err != nil {
				t.Fatal(err)
			}
			params, dropped, err := convertSchema(schema)
			type result struct {
				Params  *commands.Schema `json:"params,omitempty"`
				Dropped []string         `json:"dropped,omitempty"`
				Error   string           `json:"error,omitempty"`
			}
			r := result{Params: params, Dropped: dropped}
			if err != nil {
				r.Error = err.Error()
			}
			if strings.HasPrefix(name, "err_") != (err != nil) {
				t.Errorf("err = %v; cases named err_* and only those must fail", err)
			}
			if params != nil {
				if err := params.CheckGrammarLimits(); err != nil {
					t.Error(err)
				}
				if params.Type != "object" || params.AdditionalProperties == nil || *params.AdditionalProperties {
					t.Errorf("params are not a closed object: %+v", params)
				}
			}
			testutil.GoldenJSON(t, filepath.Join("testdata", "schemas", name+".out.json"), r)
		})
	}
}

func TestConvertSchemaInputs(t *testing.T) {
	tests := []struct {
		name    string
		in      any
		wantErr string
	}{
		{name: "nil_takes_no_args", in: nil},
		{name: "raw_json", in: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)},
		{name: "bad_raw_json", in: json.RawMessage(`{`), wantErr: "input schema is not valid JSON"},
		{name: "not_a_map", in: "object", wantErr: "input schema is a string, not an object schema"},
		{name: "required_unknown_type", in: map[string]any{"type": "object",
			"properties": map[string]any{"x": map[string]any{"type": "date"}}, "required": []any{"x"}},
			wantErr: `$.x: type "date" is not supported`},
		{name: "required_any_value", in: map[string]any{"type": "object",
			"properties": map[string]any{"x": true}, "required": []any{"x"}},
			wantErr: `$.x: accepts any value`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, err := convertSchema(tt.in)
			if testutil.WantErr(t, err, tt.wantErr) {
				return
			}
			if s.Type != "object" {
				t.Fatalf("got %+v, %v", s, err)
			}
		})
	}
}

func TestCommandName(t *testing.T) {
	tests := []struct{ tool, want string }{
		{"read_file", "fs.read_file"},
		{"getWeather", "fs.get_weather"},
		{"HTTPGet", "fs.http_get"},
		{"list-repos", "fs.list-repos"},
		{"v2Search", "fs.v2_search"},
		{"Files.Read", "fs.files.read"},
		{"say hello!", "fs.say_hello"},
		{"__x__", "fs.x"},
		{"日本", ""},
		{"!!!", ""},
		{strings.Repeat("a", 100), "fs." + strings.Repeat("a", 61)},
	}
	for _, tt := range tests {
		if got := commandName("fs", tt.tool); got != tt.want {
			t.Errorf("commandName(%q) = %q, want %q", tt.tool, got, tt.want)
		}
	}
}

func TestOneLine(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"  Reads a file.\nThen more.", 100, "Reads a file."},
		{"tabs\tand   spaces", 100, "tabs and spaces"},
		{"one two three four five six", 14, "one two three…"},
		{"abcdefghijklmnop", 8, "abcdefg…"},
		{"", 10, ""},
	}
	for _, tt := range tests {
		if got := oneLine(tt.in, tt.max); got != tt.want {
			t.Errorf("oneLine(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}
