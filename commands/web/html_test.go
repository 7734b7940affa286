package web

import (
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/testutil"
)

func TestHTMLToText(t *testing.T) {
	tests := []struct {
		name      string
		html      string
		wantTitle string
		want      []string // each must appear in the text
		drop      []string // none may appear
	}{
		{
			name:      "headings_paragraphs_links",
			html:      `<title>Doc</title><h1>Main</h1><p>First <b>bold</b> para.</p><h2>Sub</h2><p>See <a href="/docs/api">the API</a>.</p>`,
			wantTitle: "Doc",
			want:      []string{"# Main", "First **bold** para.", "## Sub", "See [the API](https://example.org/docs/api)."},
		},
		{
			name: "scripts_styles_dropped",
			html: `<head><style>.x{color:red}</style><script>var secret = 1;</script></head>
				<body><p>visible</p><script>document.write("injected")</script><noscript>enable js</noscript>
				<template><p>tmpl</p></template></body>`,
			want: []string{"visible"},
			drop: []string{"color:red", "secret", "injected", "enable js", "tmpl"},
		},
		{
			name: "nav_header_footer_aside_dropped",
			html: `<body><header><a href="/">Site logo</a></header><nav><a href="/a">Menu A</a></nav>
				<div role="navigation">Menu B</div><p>Body text.</p><aside>Related</aside>
				<footer>Copyright</footer><div role="contentinfo">Legal</div></body>`,
			want: []string{"Body text."},
			drop: []string{"Site logo", "Menu A", "Menu B", "Related", "Copyright", "Legal"},
		},
		{
			name: "main_preferred_and_article_header_kept",
			html: `<body><div class="banner">Sale! 50% off</div><main><article><header><h1>Headline</h1>
				<p>by Ann</p></header><p>Story.</p></article></main><div>Cookie notice</div></body>`,
			want: []string{"# Headline", "by Ann", "Story."},
			drop: []string{"Sale!", "Cookie notice"},
		},
		{
			name: "lone_article_preferred",
			html: `<body><div>Top bar</div><article><h2>Post</h2><p>Words.</p></article><div>Bottom bar</div></body>`,
			want: []string{"## Post", "Words."},
			drop: []string{"Top bar", "Bottom bar"},
		},
		{
			name: "several_articles_keep_body",
			html: `<body><p>Intro</p><article><p>One</p></article><article><p>Two</p></article></body>`,
			want: []string{"Intro", "One", "Two"},
		},
		{
			name: "empty_main_ignored",
			html: `<body><main></main><p>Real content</p></body>`,
			want: []string{"Real content"},
		},
		{
			name: "hidden_dropped",
			html: `<p>shown</p><div hidden>hidden attr</div><span aria-hidden="true">aria</span>`,
			want: []string{"shown"},
			drop: []string{"hidden attr", "aria"},
		},
		{
			name: "forms_and_media_dropped",
			html: `<p>text</p><form><label>Name</label><input value="v"><button>Send</button><select><option>Opt</option></select></form>
				<img src="data:image/png;base64,AAAA" alt="pic"><svg><text>svgtext</text></svg><video src="v.mp4">vid</video>`,
			want: []string{"text"},
			drop: []string{"Name", "Send", "Opt", "base64", "svgtext", "vid"},
		},
		{
			name: "dead_links_become_text",
			html: `<p><a href="#top">Back to top</a> and <a href="javascript:void(0)">Click</a> and <a href="https://x.test/">real</a></p>`,
			want: []string{"Back to top and Click and [real](https://x.test/)"},
			drop: []string{"javascript", "#top"},
		},
		{
			name: "relative_links_resolved",
			html: `<a href="../up">up</a> <a href="same">same</a> <a href="//cdn.test/x">proto</a>`,
			want: []string{"(https://example.org/up)", "(https://example.org/a/same)", "(https://cdn.test/x)"},
		},
		{
			name: "lists_code_tables",
			html: `<ul><li>one</li><li>two</li></ul><pre><code>x := 1</code></pre>
				<table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table>`,
			want: []string{"- one\n- two", "```\nx := 1\n```", "| k | v |", "| a | 1 |"},
		},
		{
			name: "title_falls_back_to_h1",
			html: `<body><h1>  Only
				heading </h1><p>p</p></body>`,
			wantTitle: "Only heading",
		},
		{
			name: "entities_and_whitespace",
			html: `<p>a &amp; b &lt;c&gt;   d&nbsp;e</p>`,
			want: []string{"a & b <c> d"},
		},
		{
			name: "broken_html_survives",
			html: `<div><p>unclosed <b>bold<p>next</div></span>`,
			want: []string{"unclosed **bold**", "next"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			title, text, err := HTMLToText(strings.NewReader(tc.html), "https://example.org/a/b")
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantTitle != "" && title != tc.wantTitle {
				t.Errorf("title %q, want %q", title, tc.wantTitle)
			}
			testutil.CheckContains(t, "text", text, tc.want, tc.drop)
		})
	}
}

// BenchmarkHTMLToText converts a 2 MiB page, the fetcher's default cap.
func BenchmarkHTMLToText(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("<html><head><title>Big</title></head><body><nav><a href='/'>home</a></nav><main>")
	for sb.Len() < DefaultMaxBytes {
		sb.WriteString(`<h2>Section</h2><p>Some <b>bold</b> text with <a href="/x?y=1">a link</a> and more words.</p><ul><li>one</li><li>two</li></ul>`)
	}
	sb.WriteString("</main></body></html>")
	page := sb.String()
	b.SetBytes(int64(len(page)))
	for b.Loop() {
		if _, _, err := HTMLToText(strings.NewReader(page), "https://example.org/"); err != nil {
			b.Fatal(err)
		}
	}
}
