package fakeslack

import (
	"encoding/json"
	"fmt"
	"unicode/utf16"
)

// Slack's limits on what a message or view may carry. A call over one is refused the way
// Slack refuses it: invalid_blocks with response_metadata.messages naming the field by
// JSON pointer, msg_too_long for the text, msg_blocks_too_long for the blocks' text in all.
const (
	MaxMessageBlocks = 50
	MaxViewBlocks    = 100
	MaxSectionText   = 3000
	MaxHeaderText    = 150
	MaxText          = 40000
	// MaxBlocksText is the blocks' text in all that chat.postMessage takes; Slack does not
	// document it (it answers msg_blocks_too_long) but its engineers put it at 12,000.
	MaxBlocksText  = 12000
	MaxActions     = 25
	MaxContext     = 10
	MaxButtonValue = 2000
	MaxButtonText  = 75
	MaxActionID    = 255
	MaxBlockID     = 255
	MaxInputLength = 3000 // plain_text_input's max_length
)

// Len counts characters the way the fake applies Slack's limits: UTF-16 code units, so a
// character outside the BMP (most emoji) counts twice. Slack documents its limits in
// characters; counting units is the stricter reading.
func Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// checkBlocks checks blocks (a JSON array, as sent) against Slack's limits, maxBlocks
// being 50 for a message and 100 for a view. It returns Slack's messages for each
// problem and the text the blocks carry in all.
func checkBlocks(raw []byte, maxBlocks int, prefix string) (problems []string, total int) {
	if len(raw) == 0 {
		return nil, 0
	}
	var blocks []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return []string{"[ERROR] invalid_blocks_format"}, 0
	}
	bad := func(path, what string) {
		problems = append(problems, fmt.Sprintf("[ERROR] %s [json-pointer:%s%s]", what, prefix, path))
	}
	if len(blocks) > maxBlocks {
		bad("", fmt.Sprintf("no more than %d items allowed", maxBlocks))
	}
	for i, b := range blocks {
		at := fmt.Sprintf("/%d", i)
		var typ, blockID string
		json.Unmarshal(b["type"], &typ)
		json.Unmarshal(b["block_id"], &blockID)
		if Len(blockID) > MaxBlockID {
			bad(at+"/block_id", fmt.Sprintf("must be less than %d characters", MaxBlockID+1))
		}
		switch typ {
		case "section":
			total += checkText(b["text"], at+"/text", MaxSectionText, true, bad)
		case "header":
			total += checkText(b["text"], at+"/text", MaxHeaderText, true, bad)
		case "context":
			var els []json.RawMessage
			json.Unmarshal(b["elements"], &els)
			if len(els) > MaxContext {
				bad(at+"/elements", fmt.Sprintf("no more than %d items allowed", MaxContext))
			}
			for j, el := range els {
				total += checkText(el, fmt.Sprintf("%s/elements/%d", at, j), MaxSectionText, true, bad)
			}
		case "actions":
			var els []map[string]json.RawMessage
			json.Unmarshal(b["elements"], &els)
			if len(els) > MaxActions {
				bad(at+"/elements", fmt.Sprintf("no more than %d items allowed", MaxActions))
			}
			for j, el := range els {
				checkButton(el, fmt.Sprintf("%s/elements/%d", at, j), bad)
			}
		case "input":
			var el struct {
				MaxLength int `json:"max_length"`
			}
			json.Unmarshal(b["element"], &el)
			if el.MaxLength > MaxInputLength {
				bad(at+"/element/max_length", fmt.Sprintf("must be less than %d", MaxInputLength+1))
			}
		case "divider", "rich_text", "image", "file":
		default:
			bad(at+"/type", fmt.Sprintf("unsupported type %q", typ))
		}
	}
	return problems, total
}

// checkText checks a text object's text and returns its length.
func checkText(raw json.RawMessage, at string, limit int, required bool, bad func(path, what string)) int {
	var t struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &t) != nil {
		if required {
			bad(at, "failed to match all allowed schemas")
		}
		return 0
	}
	n := Len(t.Text)
	switch {
	case n == 0:
		bad(at+"/text", "must be more than 0 characters")
	case n > limit:
		bad(at+"/text", fmt.Sprintf("must be less than %d characters", limit+1))
	}
	return n
}

func checkButton(el map[string]json.RawMessage, at string, bad func(path, what string)) {
	var actionID, value string
	json.Unmarshal(el["action_id"], &actionID)
	json.Unmarshal(el["value"], &value)
	if Len(actionID) > MaxActionID {
		bad(at+"/action_id", fmt.Sprintf("must be less than %d characters", MaxActionID+1))
	}
	if Len(value) > MaxButtonValue {
		bad(at+"/value", fmt.Sprintf("must be less than %d characters", MaxButtonValue+1))
	}
	checkText(el["text"], at+"/text", MaxButtonText, true, bad)
}

// checkMessage applies the message limits to a post's text and blocks; it returns the
// error Slack answers with and its messages, or "".
func checkMessage(text string, blocks []byte) (string, []string) {
	if Len(text) > MaxText {
		return "msg_too_long", nil
	}
	problems, total := checkBlocks(blocks, MaxMessageBlocks, "/blocks")
	if len(problems) > 0 {
		return "invalid_blocks", problems
	}
	if total > MaxBlocksText {
		return "msg_blocks_too_long", nil
	}
	return "", nil
}
