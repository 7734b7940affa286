package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
	"golang.org/x/net/http/httpguts"
)

// Defaults for a zero Fetcher.
const (
	DefaultMaxBytes     = 2 << 20
	DefaultFetchTimeout = 20 * time.Second
	DefaultMaxRedirects = 5
	DefaultUserAgent    = "agentd (read_webpage)"
)

// Errors a fetch can end with; the messages name the URL, type or limit involved.
var (
	ErrScheme           = errors.New("only http and https URLs can be fetched")
	ErrContentType      = errors.New("content type not readable as text")
	ErrTooManyRedirects = errors.New("too many redirects")
	ErrStatus           = errors.New("HTTP error status")
)

// Fetcher GETs web pages for the agent with an SSRF guard, a size cap and a time cap.
// The zero value is ready to use with the defaults and private addresses refused.
// Set the fields before the first Fetch; a Fetcher is safe for concurrent use.
type Fetcher struct {
	MaxBytes     int64         // body bytes read; the rest is cut. Default DefaultMaxBytes.
	Timeout      time.Duration // for the whole fetch, redirects and body included. Default 20s.
	MaxRedirects int           // redirects followed. Default 5; negative follows none.
	UserAgent    string        // default DefaultUserAgent
	// AllowPrivate lets the fetcher reach loopback, private and other non-public addresses.
	AllowPrivate bool
	// Resolver looks host names up; nil uses the system resolver. Tests inject a map.
	Resolver func(ctx context.Context, host string) ([]netip.Addr, error)

	// allowAddr, set only by tests, admits one exact address and port (the test server's)
	// while every other non-public address stays blocked.
	allowAddr func(netip.AddrPort) bool
	// beforeConnect, set only by tests, sees every socket address right before connect(2):
	// a tripwire that keeps test traffic on loopback even if the guard were broken.
	beforeConnect func(netip.AddrPort) error

	once      sync.Once
	transport *http.Transport
}

// Page is a fetched document as text.
type Page struct {
	URL         string // the final URL, after redirects
	Title       string // the HTML title, or ""
	ContentType string // the media type, without parameters
	Text        string // readable text: HTML as Markdown, other types as they came
	Truncated   bool   // the body was cut at MaxBytes
	// Validators are the page's ETag and Last-Modified, as the server sent them.
	Validators Validators
	// NotModified says the server answered a conditional request (FetchIfChanged) with
	// 304 Not Modified: the page is as it was, and Title, ContentType and Text are empty.
	NotModified bool
}

// Validators name a version of a page the way its server does (its ETag and
// Last-Modified headers). Given back to FetchIfChanged, they let the server answer
// "not modified" without sending the page again.
type Validators struct {
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"last_modified,omitempty"`
}

// maxValidator bounds a validator kept from a server: it is sent back, so a hostile
// server could otherwise make the next request as large as it likes.
const maxValidator = 512

// validatorsOf reads a response's validators, dropping any that could not be sent back.
func validatorsOf(h http.Header) Validators {
	return Validators{ETag: sendable(h.Get("ETag")), LastModified: sendable(h.Get("Last-Modified"))}
}

// sendable is v, or "" when it is too long or not a valid header value.
func sendable(v string) string {
	if len(v) > maxValidator || !httpguts.ValidHeaderFieldValue(v) {
		return ""
	}
	return v
}

func (f *Fetcher) maxBytes() int64 {
	if f.MaxBytes > 0 {
		return f.MaxBytes
	}
	return DefaultMaxBytes
}

func (f *Fetcher) client(onRedirect func(*http.Request, []*http.Request) error) *http.Client {
	f.once.Do(func() {
		f.transport = &http.Transport{
			// Never a proxy from the environment: the proxy would do the dialling and the
			// guard would see only the proxy's address.
			Proxy:                 nil,
			DialContext:           f.guard().DialContext,
			ForceAttemptHTTP2:     true,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: 15 * time.Second,
			IdleConnTimeout:       30 * time.Second,
			MaxIdleConns:          8,
		}
	})
	return &http.Client{Transport: f.transport, CheckRedirect: onRedirect}
}

// Fetch GETs rawURL and returns its content as text. HTML becomes Markdown-flavoured text;
// text/plain, Markdown and JSON come back as they are; any other type is refused.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) (*Page, error) {
	return f.FetchIfChanged(ctx, rawURL, Validators{})
}

// FetchIfChanged is Fetch with a conditional request: since's ETag goes out as
// If-None-Match and its Last-Modified as If-Modified-Since, and a server that answers 304
// Not Modified gives a Page with NotModified set and since as its Validators, its body
// unread. With since empty it is Fetch. The page's own validators are in the Page.
func (f *Fetcher) FetchIfChanged(ctx context.Context, rawURL string, since Validators) (*Page, error) {
	u, err := checkURL(rawURL)
	if err != nil {
		return nil, err
	}
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = DefaultFetchTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	maxRedirects := f.MaxRedirects
	if maxRedirects == 0 {
		maxRedirects = DefaultMaxRedirects
	}
	at := u // the URL being fetched now, after any redirects
	client := f.client(func(req *http.Request, via []*http.Request) error {
		if len(via) > maxRedirects {
			return fmt.Errorf("%w: stopped after %d, last at %s", ErrTooManyRedirects, max(maxRedirects, 0), req.URL.Redacted())
		}
		if sc := strings.ToLower(req.URL.Scheme); sc != "http" && sc != "https" {
			return fmt.Errorf("redirected to %s: %w, not %s", req.URL.Redacted(), ErrScheme, sc)
		}
		at = req.URL
		return nil
	})

	since = Validators{ETag: sendable(since.ETag), LastModified: sendable(since.LastModified)}
	req, err := f.request(ctx, u, since)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fetchError(ctx, u, at, err, timeout)
	}
	defer resp.Body.Close()
	final := resp.Request.URL
	if resp.StatusCode == http.StatusNotModified && since != (Validators{}) {
		return &Page{URL: final.String(), Validators: since, NotModified: true}, nil
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("fetch %s: %w %s", final.Redacted(), ErrStatus, resp.Status)
	}

	// A type that will be refused is refused before its body is read.
	header := resp.Header.Get("Content-Type")
	if header != "" {
		if _, err := mediaTypeOf(final, header); err != nil {
			return nil, err
		}
	}
	limit := f.maxBytes()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fetchError(ctx, u, final, err, timeout)
	}
	truncated := int64(len(body)) > limit
	if truncated {
		body = trimCutRune(body[:limit])
	}
	if header == "" {
		header = http.DetectContentType(body)
	}
	page, err := toPage(final, header, body, truncated)
	if page != nil {
		page.Validators = validatorsOf(resp.Header)
	}
	return page, err
}

// request is the GET of u, conditional on since's validators when it has them.
func (f *Fetcher) request(ctx context.Context, u *url.URL, since Validators) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("fetch: %v", err)
	}
	ua := f.UserAgent
	if ua == "" {
		ua = DefaultUserAgent
	}
	req.Header.Set("User-Agent", ua)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,text/markdown;q=0.9,application/json;q=0.8,*/*;q=0.1")
	if since.ETag != "" {
		req.Header.Set("If-None-Match", since.ETag)
	}
	if since.LastModified != "" {
		req.Header.Set("If-Modified-Since", since.LastModified)
	}
	return req, nil
}

// CheckURL returns the refusal a fetch of rawURL would end with before it connects: a URL
// that is not http(s) with a host, or a host that is an address the guard refuses in any
// of its forms. A host name passes: it is resolved and checked when it is fetched.
func (f *Fetcher) CheckURL(rawURL string) error {
	u, err := checkURL(rawURL)
	if err != nil {
		return err
	}
	if err := f.guard().CheckHost(u.Hostname(), portOf(u)); err != nil {
		return fmt.Errorf("fetch %s: %w", u.Redacted(), err)
	}
	return nil
}

// mediaTypeOf parses a Content-Type header and refuses types that are not text.
func mediaTypeOf(u *url.URL, header string) (string, error) {
	mediaType, _, err := mime.ParseMediaType(header)
	if err != nil {
		return "", fmt.Errorf("fetch %s: %w: unparsable Content-Type %q", u.Redacted(), ErrContentType, header)
	}
	if textKind(mediaType) == "" {
		return "", fmt.Errorf("fetch %s: %w: %s (readable: HTML, plain text, Markdown, JSON)", u.Redacted(), ErrContentType, mediaType)
	}
	return mediaType, nil
}

// toPage decodes a body of the given Content-Type into a Page.
func toPage(final *url.URL, header string, body []byte, truncated bool) (*Page, error) {
	mediaType, err := mediaTypeOf(final, header)
	if err != nil {
		return nil, err
	}
	page := &Page{URL: final.String(), ContentType: mediaType, Truncated: truncated}
	if textKind(mediaType) != "html" {
		page.Text = decodeText(body, header)
		return page, nil
	}
	r, err := charset.NewReader(bytes.NewReader(body), header)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %v", final.Redacted(), err)
	}
	page.Title, page.Text, err = HTMLToText(r, final.String())
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", final.Redacted(), err)
	}
	return page, nil
}

// textKind sorts a media type into "html", "text" (returned as is) or "" (refused).
func textKind(mediaType string) string {
	switch {
	case mediaType == "text/html", mediaType == "application/xhtml+xml":
		return "html"
	case mediaType == "text/plain", mediaType == "text/markdown", mediaType == "text/x-markdown",
		mediaType == "application/json", strings.HasSuffix(mediaType, "+json"):
		return "text"
	}
	return ""
}

// decodeText turns a text body into UTF-8, honouring the declared charset.
func decodeText(body []byte, contentType string) string {
	if utf8.Valid(body) {
		return string(body)
	}
	r, err := charset.NewReader(bytes.NewReader(body), contentType)
	if err == nil {
		if b, err := io.ReadAll(r); err == nil {
			return string(b)
		}
	}
	return strings.ToValidUTF8(string(body), "\uFFFD")
}

// trimCutRune drops a UTF-8 sequence the size cap cut in half, when the rest is UTF-8.
func trimCutRune(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.Valid(b[:i]) {
				return b[:i]
			}
			break
		}
	}
	return b
}

// checkURL parses rawURL and refuses anything but an absolute http or https URL with a host.
func checkURL(rawURL string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil {
		return nil, fmt.Errorf("fetch: not a URL: %v", err)
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	case "":
		return nil, fmt.Errorf("fetch %q: %w (no scheme: write https://...)", rawURL, ErrScheme)
	default:
		return nil, fmt.Errorf("fetch %q: %w, not %s", rawURL, ErrScheme, u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("fetch %q: no host in the URL", rawURL)
	}
	return u, nil
}

// fetchError turns the client's nested errors into one line naming the URL (and the one
// a redirect led to) and the cause.
func fetchError(ctx context.Context, start, at *url.URL, err error, timeout time.Duration) error {
	where := start.Redacted()
	if at.String() != start.String() {
		where = fmt.Sprintf("%s (redirected from %s)", at.Redacted(), where)
	}
	var blocked *BlockedError
	var ue *url.Error
	switch {
	case errors.As(err, &blocked):
		err = blocked
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("fetch %s: gave up after %s: %w", where, timeout, context.DeadlineExceeded)
	case errors.As(err, &ue):
		err = ue.Err
	}
	return fmt.Errorf("fetch %s: %w", where, err)
}
