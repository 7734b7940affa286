package permission

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/agentd/agentd/commands"
)

// Subject returns the text patterns match for a proposal: the value of the arg spec.Subject
// names, when it is set and the value is a string; otherwise every top-level string arg joined
// by single spaces, in the order of spec.Params's properties, followed by string args the
// schema does not list, sorted by name, so no string reaches the command unseen. Other
// values (numbers, objects, arrays) are left out. Values are used exactly as decoded:
// nothing is trimmed, folded or cleaned.
//
// execute_python_file's subject is its path followed by its args, each quoted as a shell
// word when it needs it (`scripts/x.py -v 'a b'`), so rules see the arguments too.
//
// Args that are not a JSON object give "". Duplicate keys resolve as encoding/json does (the
// last wins); Evaluate asks a person about such args rather than trust either reading.
func Subject(spec commands.Spec, args json.RawMessage) string {
	var vals map[string]json.RawMessage
	if len(bytes.TrimSpace(args)) > 0 && json.Unmarshal(args, &vals) != nil {
		vals = nil
	}
	if spec.Subject != "" {
		if s, ok := stringValue(vals[spec.Subject]); ok {
			if kindOf(spec) == kindPython {
				return pythonSubject(s, vals["args"])
			}
			return s
		}
	}
	var parts []string
	listed := map[string]bool{}
	if spec.Params != nil {
		for _, p := range spec.Params.Properties {
			listed[p.Name] = true
			if s, ok := stringValue(vals[p.Name]); ok {
				parts = append(parts, s)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		if s, ok := stringValue(vals[k]); ok && !listed[k] {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, " ")
}

func stringValue(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// checkArgs reports args that can be read two ways: not one JSON object, or a key given twice,
// also when the copies differ only in case (encoding/json fills a struct field from either).
// Patterns approve what Subject reads; a command must not get to read something else.
func checkArgs(args json.RawMessage) error {
	if len(bytes.TrimSpace(args)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("args are not valid JSON: %w", err)
	}
	if tok != json.Delim('{') {
		return errors.New("args are not a JSON object")
	}
	seen := map[string]string{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("args are not valid JSON: %w", err)
		}
		key, _ := tok.(string)
		fold := strings.ToLower(strings.ToUpper(key))
		if prev, dup := seen[fold]; dup {
			if prev == key {
				return fmt.Errorf("arg %q appears twice", key)
			}
			return fmt.Errorf("args %q and %q differ only in case", prev, key)
		}
		seen[fold] = key
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return fmt.Errorf("args are not valid JSON: %w", err)
		}
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("args are not valid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("args are not valid JSON: text after the object")
	}
	return nil
}

// pythonSubject joins a script's path and its args as words. Args that are not a list of
// strings are kept as their JSON text after a NUL, one word that no wildcard stands for.
func pythonSubject(path string, raw json.RawMessage) string {
	ws := []string{path}
	if len(bytes.TrimSpace(raw)) > 0 && string(bytes.TrimSpace(raw)) != "null" {
		var args []string
		if json.Unmarshal(raw, &args) == nil {
			ws = append(ws, args...)
		} else {
			ws = append(ws, "\x00"+string(raw)) // NUL: no wildcard stands for it
		}
	}
	return joinWords(ws)
}
