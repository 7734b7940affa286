module github.com/agentd/agentd

go 1.26.0

require (
	github.com/BurntSushi/toml v1.6.0 // config file (daemon/config)
	github.com/JohannesKaufmann/dom v0.3.1 // its DOM helpers, picking a page's main content (commands/web)
	github.com/JohannesKaufmann/html-to-markdown/v2 v2.5.2 // HTML to readable text (commands/web)
	github.com/modelcontextprotocol/go-sdk v1.8.0 // MCP client (commands/mcp)
	github.com/ollama/ollama v0.17.4 // Ollama API types and client (daemon/llm); tests build its server
	golang.org/x/net v0.55.0 // HTML parsing and charsets (commands/web)
	golang.org/x/term v0.43.0 // TTY detection for agentctl follow
	modernc.org/sqlite v1.60.1 // the store, pure-Go SQLite (daemon/store)
)

require (
	github.com/bahlo/generic-list-go v0.2.0 // indirect
	github.com/buger/jsonparser v1.1.1 // indirect
	github.com/dustin/go-humanize v1.0.1 // indirect
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/kr/pretty v0.3.0 // indirect
	github.com/mailru/easyjson v0.7.7 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/ncruces/go-strftime v1.0.0 // indirect
	github.com/remyoudompheng/bigfft v0.0.0-20230129092748-24d4a6f8daec // indirect
	github.com/rogpeppe/go-internal v1.8.0 // indirect
	github.com/segmentio/asm v1.1.3 // indirect
	github.com/segmentio/encoding v0.5.4 // indirect
	github.com/wk8/go-ordered-map/v2 v2.1.8 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	golang.org/x/crypto v0.51.0 // indirect
	golang.org/x/oauth2 v0.35.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.37.0 // indirect
	golang.org/x/time v0.15.0 // indirect
	gopkg.in/check.v1 v1.0.0-20201130134442-10cb98267c6c // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
	modernc.org/libc v1.77.1 // indirect
	modernc.org/mathutil v1.7.1 // indirect
	modernc.org/memory v1.12.1 // indirect
)
