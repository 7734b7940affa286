module github.com/agentd/agentd

go 1.26.0

require (
	github.com/BurntSushi/toml v1.6.0 // config file (daemon/config)
	github.com/JohannesKaufmann/dom v0.3.1 // its DOM helpers, picking a page's main content (commands/web)
	github.com/JohannesKaufmann/html-to-markdown/v2 v2.5.2 // HTML to readable text (commands/web)
	github.com/blevesearch/bleve/v2 v2.6.1 // long-term memory index, BM25 (memory); newer versions are refused by the proxy
	github.com/blevesearch/bleve_index_api v1.4.1 // bleve's index interfaces, for the memory package's own stats and checks
	github.com/bwmarrin/discordgo v0.29.0 // Discord gateway and REST client (bots/discord); v0.29.0 is the version known to build here
	github.com/chromedp/cdproto v0.159.0 // tests only: the DevTools event types chromedp's listeners get (daemon/web's browser tests)
	github.com/chromedp/chromedp v0.23.0 // tests only: drives headless Chromium through the web console (daemon/web); v0.23.0 is the version known to build here
	github.com/coreos/go-systemd/v22 v22.5.0 // sd_notify readiness for Type=notify units (cmd/agentd)
	github.com/getkin/kin-openapi v0.152.0 // tests only: validates the Agent Protocol against its OpenAPI spec (daemon/agentprotocol)
	github.com/gorilla/websocket v1.5.3 // the websocket library of slack-go and discordgo; the Slack and Discord fakes serve with it
	github.com/modelcontextprotocol/go-sdk v1.8.0 // MCP client (commands/mcp)
	github.com/ollama/ollama v0.17.4 // Ollama API types and client (daemon/llm); tests build its server
	github.com/prometheus/client_golang v1.23.2 // Prometheus metrics on its own registry (daemon/metrics); v1.23.2, the newest that needs no newer golang.org/x modules than ours
	github.com/prometheus/client_model v0.6.2 // the parsed metric types, for tests that scrape /metrics
	github.com/prometheus/common v0.66.1 // expfmt: tests parse the exposition format; the version client_golang v1.23.2 uses
	github.com/robfig/cron/v3 v3.0.1 // cron spec parsing (daemon/schedule)
	github.com/sergi/go-diff v1.4.0 // line diffs for proposal previews: what write_file, append_to_file and delete_file would change (commands)
	github.com/slack-go/slack v0.34.0 // Slack Web API and Socket Mode client (bots/slack); the version known to build here
	golang.org/x/net v0.55.0 // HTML parsing and charsets (commands/web)
	golang.org/x/sys v0.48.0 // seccomp filter constants for the shell sandbox, prctl (commands/shell, cmd/agentd); the O_PATH/O_NOFOLLOW walk of each workspace path (commands)
	golang.org/x/term v0.45.0 // TTY detection for agentctl follow
	modernc.org/sqlite v1.60.1 // the store, pure-Go SQLite (daemon/store)
	mvdan.cc/sh/v3 v3.14.1 // POSIX shell parser (needs golang.org/x/term v0.45.0): permission rules match parsed programs and argv (commands/permission)
)

require (
	github.com/RoaringBitmap/roaring/v2 v2.14.5 // indirect
	github.com/bahlo/generic-list-go v0.2.0 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/bits-and-blooms/bitset v1.24.2 // indirect
	github.com/blevesearch/geo v0.2.6 // indirect
	github.com/blevesearch/go-faiss v1.1.5 // indirect
	github.com/blevesearch/go-porterstemmer v1.0.3 // indirect
	github.com/blevesearch/gtreap v0.1.1 // indirect
	github.com/blevesearch/mmap-go v1.2.0 // indirect
	github.com/blevesearch/scorch_segment_api/v2 v2.4.10 // indirect
	github.com/blevesearch/segment v0.9.1 // indirect
	github.com/blevesearch/snowballstem v0.9.0 // indirect
	github.com/blevesearch/upsidedown_store_api v1.0.2 // indirect
	github.com/blevesearch/vellum v1.2.0 // indirect
	github.com/blevesearch/zapx/v11 v11.4.3 // indirect
	github.com/blevesearch/zapx/v12 v12.4.3 // indirect
	github.com/blevesearch/zapx/v13 v13.4.3 // indirect
	github.com/blevesearch/zapx/v14 v14.4.3 // indirect
	github.com/blevesearch/zapx/v15 v15.4.3 // indirect
	github.com/blevesearch/zapx/v16 v16.3.4 // indirect
	github.com/blevesearch/zapx/v17 v17.2.3 // indirect
	github.com/buger/jsonparser v1.1.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dustin/go-humanize v1.0.1 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/go-openapi/jsonpointer v0.22.5 // indirect
	github.com/go-openapi/swag/jsonname v0.25.5 // indirect
	github.com/golang/snappy v1.0.0 // indirect
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/kylelemons/godebug v1.1.0 // indirect
	github.com/mailru/easyjson v0.7.7 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.2 // indirect
	github.com/mschoch/smat v0.2.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/ncruces/go-strftime v1.0.0 // indirect
	github.com/oasdiff/yaml v0.1.1 // indirect
	github.com/oasdiff/yaml3 v0.0.14 // indirect
	github.com/prometheus/procfs v0.16.1 // indirect
	github.com/remyoudompheng/bigfft v0.0.0-20230129092748-24d4a6f8daec // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	github.com/segmentio/asm v1.1.3 // indirect
	github.com/segmentio/encoding v0.5.4 // indirect
	github.com/wk8/go-ordered-map/v2 v2.1.8 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	go.etcd.io/bbolt v1.4.0 // indirect
	go.yaml.in/yaml/v2 v2.4.2 // indirect
	golang.org/x/crypto v0.51.0 // indirect
	golang.org/x/oauth2 v0.35.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/text v0.37.0 // indirect
	golang.org/x/time v0.15.0 // indirect
	google.golang.org/protobuf v1.36.8 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
	modernc.org/libc v1.77.1 // indirect
	modernc.org/mathutil v1.7.1 // indirect
	modernc.org/memory v1.12.1 // indirect
)
