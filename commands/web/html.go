package web

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/JohannesKaufmann/dom"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html"
)

// boilerplate are elements that carry no reading matter for the model: page chrome,
// scripts, media and forms. The converter drops them with their content.
var boilerplate = []string{
	"nav", "aside", "footer", "menu", "form", "button", "select", "option", "label",
	"dialog", "template", "svg", "canvas", "img", "picture", "video", "audio", "source",
	"object", "embed", "map",
}

// markdown is the HTML-to-Markdown converter, built once; it is safe for concurrent use.
var markdown = sync.OnceValue(func() *converter.Converter {
	c := converter.NewConverter(converter.WithPlugins(
		base.NewBasePlugin(), // drops script, style, head, iframe, noscript, inputs
		commonmark.NewCommonmarkPlugin(
			// A link without a target, or without text, is plain text or nothing.
			commonmark.WithLinkEmptyHrefBehavior(commonmark.LinkBehaviorSkip),
			commonmark.WithLinkEmptyContentBehavior(commonmark.LinkBehaviorSkip),
		),
		table.NewTablePlugin(
			table.WithCellPaddingBehavior(table.CellPaddingBehaviorMinimal), // no padding to pay for
			table.WithSkipEmptyRows(true),
		),
	))
	for _, tag := range boilerplate {
		c.Register.TagType(tag, converter.TagTypeRemove, converter.PriorityStandard)
	}
	return c
})

// HTMLToText turns an HTML document into readable Markdown-flavoured text (headings,
// paragraphs, lists, tables, links with absolute URLs) and returns its title. It keeps the
// page's main content: the <main> element, or its only <article>, else the whole body, and
// leaves out navigation, headers and footers, scripts, styles, forms and media.
// pageURL resolves relative links; it may be empty.
func HTMLToText(r io.Reader, pageURL string) (title, text string, err error) {
	doc, err := html.Parse(r)
	if err != nil {
		return "", "", fmt.Errorf("parsing HTML: %w", err)
	}
	title = pageTitle(doc)
	root := mainContent(doc)
	prune(root)
	out, err := markdown().ConvertNode(root, converter.WithDomain(pageURL))
	if err != nil {
		return "", "", fmt.Errorf("converting HTML: %w", err)
	}
	return title, strings.TrimSpace(unescapeAngles.Replace(string(out))), nil
}

// unescapeAngles undoes the converter's &lt; and &gt;, which keep Markdown renderers from
// seeing HTML but cost a model tokens and clarity.
var unescapeAngles = strings.NewReplacer("&lt;", "<", "&gt;", ">")

// pageTitle is the <title>, else the first <h1>, on one line.
func pageTitle(doc *html.Node) string {
	for _, tag := range []string{"title", "h1"} {
		n := dom.FindFirstNode(doc, func(n *html.Node) bool { return dom.NodeName(n) == tag })
		if n != nil {
			if t := oneLine(dom.CollectText(n)); t != "" {
				return t
			}
		}
	}
	return ""
}

// mainContent picks the part of the page a reader came for, a light-weight version of
// what reader modes do: <main> (or role=main), else a lone <article>, else <body>.
func mainContent(doc *html.Node) *html.Node {
	isMain := func(n *html.Node) bool {
		return dom.NodeName(n) == "main" || dom.GetAttributeOr(n, "role", "") == "main"
	}
	if n := dom.FindFirstNode(doc, isMain); n != nil && hasText(n) {
		return n
	}
	articles := dom.FindAllNodes(doc, func(n *html.Node) bool { return dom.NodeName(n) == "article" })
	if len(articles) == 1 && hasText(articles[0]) {
		return articles[0]
	}
	if body := dom.FindFirstNode(doc, func(n *html.Node) bool { return dom.NodeName(n) == "body" }); body != nil {
		return body
	}
	return doc
}

func hasText(n *html.Node) bool { return strings.TrimSpace(dom.CollectText(n)) != "" }

// chromeRoles are ARIA roles of page chrome, dropped like the elements they stand for.
var chromeRoles = map[string]bool{
	"navigation": true, "banner": true, "contentinfo": true, "complementary": true,
	"search": true, "menu": true, "menubar": true, "dialog": true, "alert": true,
}

// prune removes what the converter's tag list cannot express: hidden elements, chrome by
// ARIA role, page headers (a header inside an article or main is kept: it holds the
// headline), and links that go nowhere (in-page anchors, javascript:), kept as text.
func prune(root *html.Node) {
	var drop, unwrap []*html.Node
	var walk func(n *html.Node, inContent bool)
	walk = func(n *html.Node, inContent bool) {
		if n.Type == html.ElementNode {
			name := dom.NodeName(n)
			_, hidden := dom.GetAttribute(n, "hidden")
			switch {
			case hidden, dom.GetAttributeOr(n, "aria-hidden", "") == "true",
				chromeRoles[dom.GetAttributeOr(n, "role", "")],
				name == "header" && !inContent:
				drop = append(drop, n)
				return
			case name == "a":
				href := strings.TrimSpace(dom.GetAttributeOr(n, "href", ""))
				if strings.HasPrefix(href, "#") || strings.HasPrefix(strings.ToLower(href), "javascript:") {
					unwrap = append(unwrap, n)
				}
			}
			inContent = inContent || name == "article" || name == "main"
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, inContent)
		}
	}
	walk(root, dom.NodeName(root) == "article" || dom.NodeName(root) == "main")
	for _, n := range drop {
		dom.RemoveNode(n)
	}
	for _, n := range unwrap {
		dom.UnwrapNode(n)
	}
}
