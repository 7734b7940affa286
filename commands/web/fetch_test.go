package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestFetchContentTypes(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		ct := r.URL.Query().Get("ct")
		if ct != "none" {
			w.Header().Set("Content-Type", ct)
		} else {
			w.Header()["Content-Type"] = nil // stop net/http from sniffing on our behalf
		}
		w.Write([]byte(r.URL.Query().Get("body")))
	})
	tests := []struct {
		name, ct, body string
		wantText       string
		wantTitle      string
		wantType       string
		wantErr        string
	}{
		{name: "html", ct: "text/html; charset=utf-8", body: "<title>T</title><h1>Head</h1><p>Para</p>",
			wantTitle: "T", wantText: "# Head\n\nPara", wantType: "text/html"},
		{name: "xhtml", ct: "application/xhtml+xml", body: "<html><body><p>x</p></body></html>", wantText: "x", wantType: "application/xhtml+xml"},
		{name: "plain_as_is", ct: "text/plain", body: "a <b>not html</b>\n  kept", wantText: "a <b>not html</b>\n  kept", wantType: "text/plain"},
		{name: "json_as_is", ct: "application/json", body: `{"a": [1, 2]}`, wantText: `{"a": [1, 2]}`, wantType: "application/json"},
		{name: "json_suffix", ct: "application/problem+json", body: `{"title":"x"}`, wantText: `{"title":"x"}`, wantType: "application/problem+json"},
		{name: "markdown_as_is", ct: "text/markdown; charset=utf-8", body: "# Title\n\n*x*", wantText: "# Title\n\n*x*", wantType: "text/markdown"},
		{name: "upper_case_type", ct: "TEXT/HTML", body: "<p>up</p>", wantText: "up", wantType: "text/html"},
		{name: "sniffed_html", ct: "none", body: "<!DOCTYPE html><p>sniffed</p>", wantText: "sniffed", wantType: "text/html"},
		{name: "sniffed_text", ct: "none", body: "just words", wantText: "just words", wantType: "text/plain"},
		{name: "latin1_text", ct: "text/plain; charset=iso-8859-1", body: "caf\xe9", wantText: "café", wantType: "text/plain"},
		{name: "latin1_html_meta", ct: "text/html", body: "<meta charset=\"windows-1252\"><p>na\xefve</p>", wantText: "naïve", wantType: "text/html"},
		{name: "png_refused", ct: "image/png", body: "\x89PNG", wantErr: "content type not readable as text: image/png"},
		{name: "pdf_refused", ct: "application/pdf", body: "%PDF-1.7", wantErr: "application/pdf (readable: HTML, plain text, Markdown, JSON)"},
		{name: "octet_refused", ct: "application/octet-stream", body: "\x00\x01", wantErr: "application/octet-stream"},
		{name: "js_refused", ct: "application/javascript", body: "alert(1)", wantErr: "application/javascript"},
		{name: "bad_type", ct: "text/html; charset", body: "x", wantErr: "unparsable Content-Type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := guarded(t, nil, srv)
			u := srv.siteURL("/?ct=" + urlQuery(tc.ct) + "&body=" + urlQuery(tc.body))
			page, err := f.Fetch(context.Background(), u)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrContentType) {
					t.Fatalf("err = %v, want ErrContentType containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if page.Text != tc.wantText || page.Title != tc.wantTitle || page.ContentType != tc.wantType {
				t.Errorf("got text %q title %q type %q; want %q %q %q", page.Text, page.Title, page.ContentType, tc.wantText, tc.wantTitle, tc.wantType)
			}
			if page.URL != u || page.Truncated {
				t.Errorf("URL %q truncated %v", page.URL, page.Truncated)
			}
		})
	}
}

func urlQuery(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, "%%%02X", s[i])
	}
	return b.String()
}

func TestFetchRefusesSchemes(t *testing.T) {
	tests := []struct{ name, url, want string }{
		{name: "file", url: "file:///etc/passwd", want: "not file"},
		{name: "ftp", url: "ftp://ftp.example.org/x", want: "not ftp"},
		{name: "gopher", url: "gopher://example.org:70/", want: "not gopher"},
		{name: "javascript", url: "javascript:alert(1)", want: "not javascript"},
		{name: "data", url: "data:text/html,<p>x</p>", want: "not data"},
		{name: "no_scheme", url: "example.com/page", want: "no scheme"},
		{name: "no_host", url: "http:///path", want: "no host"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := guarded(t, nil)
			_, err := f.Fetch(context.Background(), tc.url)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if tc.name != "no_host" && !errors.Is(err, ErrScheme) {
				t.Errorf("err %v is not ErrScheme", err)
			}
		})
	}
}

func TestFetchRedirects(t *testing.T) {
	var srv *server
	srv = newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/hop/")); n > 0 {
			http.Redirect(w, r, fmt.Sprintf("/hop/%d", n-1), http.StatusFound)
			return
		}
		switch r.URL.Path {
		case "/to-ftp":
			http.Redirect(w, r, "ftp://site.test/file", http.StatusMovedPermanently)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("arrived"))
	})
	tests := []struct {
		name, path string
		max        int
		wantURL    string
		wantErr    error
	}{
		{name: "five_hops_followed", path: "/hop/5", wantURL: "/hop/0"},
		{name: "six_hops_refused", path: "/hop/6", wantErr: ErrTooManyRedirects},
		{name: "custom_limit", path: "/hop/2", max: 1, wantErr: ErrTooManyRedirects},
		{name: "none_followed", path: "/hop/1", max: -1, wantErr: ErrTooManyRedirects},
		{name: "redirect_to_ftp", path: "/to-ftp", wantErr: ErrScheme},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := guarded(t, nil, srv)
			f.MaxRedirects = tc.max
			page, err := f.Fetch(context.Background(), srv.siteURL(tc.path))
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if page.URL != srv.siteURL(tc.wantURL) || page.Text != "arrived" {
				t.Errorf("page %+v, want the text at %s", page, tc.wantURL)
			}
		})
	}
}

func TestFetchSizeCap(t *testing.T) {
	big := strings.Repeat("0123456789", 100_000) // 1 MB
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", r.URL.Query().Get("ct"))
		w.Write([]byte(big))
	})
	tests := []struct {
		name     string
		max      int64
		ct       string
		wantLen  int
		wantTrim bool
	}{
		{name: "under_cap", max: 2_000_000, ct: "text/plain", wantLen: len(big)},
		{name: "exactly_cap", max: int64(len(big)), ct: "text/plain", wantLen: len(big)},
		{name: "over_cap_cut", max: 1000, ct: "text/plain", wantLen: 1000, wantTrim: true},
		{name: "over_cap_html", max: 1000, ct: "text/html", wantLen: 1000, wantTrim: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := guarded(t, nil, srv)
			f.MaxBytes = tc.max
			page, err := f.Fetch(context.Background(), srv.siteURL("/?ct="+tc.ct))
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Text) != tc.wantLen || page.Truncated != tc.wantTrim {
				t.Errorf("len %d truncated %v; want %d %v", len(page.Text), page.Truncated, tc.wantLen, tc.wantTrim)
			}
		})
	}
}

func TestFetchSizeCapKeepsUTF8(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte(strings.Repeat("é", 100))) // 2 bytes each
	})
	f := guarded(t, nil, srv)
	f.MaxBytes = 11 // cuts the sixth é in half
	page, err := f.Fetch(context.Background(), srv.siteURL("/"))
	if err != nil {
		t.Fatal(err)
	}
	if page.Text != strings.Repeat("é", 5) || !page.Truncated {
		t.Errorf("text %q truncated %v", page.Text, page.Truncated)
	}
}

func TestFetchTimeCap(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		if r.URL.Path == "/slow-body" {
			w.Write([]byte("first bytes"))
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	for _, path := range []string{"/slow-headers", "/slow-body"} {
		t.Run(strings.TrimPrefix(path, "/"), func(t *testing.T) {
			f := guarded(t, nil, srv)
			f.Timeout = 150 * time.Millisecond
			start := time.Now()
			_, err := f.Fetch(context.Background(), srv.siteURL(path))
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "gave up after 150ms") {
				t.Fatalf("err = %v, want a timeout after 150ms", err)
			}
			// A hang bound, not a speed bound: the server never answers on its own.
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
}

func TestFetchStatus(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		w.WriteHeader(code)
	})
	for _, code := range []int{404, 403, 500} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			_, err := guarded(t, nil, srv).Fetch(context.Background(), srv.siteURL("/"+strconv.Itoa(code)))
			if !errors.Is(err, ErrStatus) || !strings.Contains(err.Error(), http.StatusText(code)) {
				t.Fatalf("err = %v, want ErrStatus naming %q", err, http.StatusText(code))
			}
		})
	}
}

func TestFetchIgnoresEnvironmentProxy(t *testing.T) {
	proxy := newServer(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("via proxy")) })
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	_, err := guarded(t, fakeDNS{"intranet.example": {"10.1.1.1"}}).Fetch(context.Background(), "http://intranet.example/")
	if !errors.Is(err, ErrBlocked) {
		t.Fatalf("err = %v, want ErrBlocked", err)
	}
	if proxy.hits.Load() != 0 {
		t.Errorf("the request went to the environment's proxy")
	}
}

// TestFetchRefusesTypeBeforeBody: the body of a refused type is never read, so a stream
// that never ends does not hold the fetch until its time cap.
func TestFetchRefusesTypeBeforeBody(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "video/mp4")
		w.Write(make([]byte, 4096))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	f := guarded(t, nil, srv)
	f.Timeout = time.Minute
	start := time.Now()
	_, err := f.Fetch(context.Background(), srv.siteURL("/stream"))
	if !errors.Is(err, ErrContentType) || !strings.Contains(err.Error(), "video/mp4") {
		t.Fatalf("err = %v, want ErrContentType naming video/mp4", err)
	}
	// The body never ends: reading it would last the whole minute's timeout, which a
	// refusal on the headers is far from, however loaded the machine.
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("refusal took %s: the body was read", d)
	}
}

// TestFetchIfChanged: the validators a page came with go back as If-None-Match and
// If-Modified-Since; a 304 is a Page that says NotModified, its body unread; a server's
// validators that could not be sent back (too long, control characters) are dropped.
func TestFetchIfChanged(t *testing.T) {
	const etag, modified = `"v1"`, "Wed, 21 Oct 2026 07:28:00 GMT"
	var gotINM, gotIMS string
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		gotINM, gotIMS = r.Header.Get("If-None-Match"), r.Header.Get("If-Modified-Since")
		switch r.URL.Path {
		case "/hostile":
			w.Header().Set("ETag", `"`+strings.Repeat("e", 600)+`"`)
		default:
			w.Header().Set("ETag", etag)
			w.Header().Set("Last-Modified", modified)
			if gotINM == etag {
				w.WriteHeader(http.StatusNotModified)
				return
			}
		}
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "version one\n")
	})
	f := guarded(t, nil, s)
	ctx := context.Background()

	p, err := f.FetchIfChanged(ctx, s.siteURL("/page"), Validators{})
	if err != nil || p.NotModified || p.Text != "version one\n" || p.Validators != (Validators{etag, modified}) || gotINM != "" || gotIMS != "" {
		t.Fatalf("first fetch: got %+v, %v (sent If-None-Match %q, If-Modified-Since %q)", p, err, gotINM, gotIMS)
	}
	p, err = f.FetchIfChanged(ctx, s.siteURL("/page"), p.Validators)
	if err != nil || !p.NotModified || p.Text != "" || p.Validators != (Validators{etag, modified}) || gotINM != etag || gotIMS != modified {
		t.Fatalf("conditional fetch: got %+v, %v (sent If-None-Match %q, If-Modified-Since %q)", p, err, gotINM, gotIMS)
	}
	p, err = f.FetchIfChanged(ctx, s.siteURL("/page"), Validators{ETag: `"v0"`})
	if err != nil || p.NotModified || p.Text != "version one\n" {
		t.Fatalf("stale validators: got %+v, %v", p, err)
	}
	p, err = f.FetchIfChanged(ctx, s.siteURL("/hostile"), Validators{ETag: "bad\r\nX-Injected: 1", LastModified: strings.Repeat("m", 600)})
	if err != nil || p.Validators != (Validators{}) || gotINM != "" || gotIMS != "" {
		t.Fatalf("hostile validators: got %+v, %v (sent If-None-Match %q, If-Modified-Since %q)", p, err, gotINM, gotIMS)
	}
	// A 304 to a request that was not conditional is an error status, not "not modified".
	s304 := newServer(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotModified) })
	if p, err := guarded(t, nil, s304).Fetch(ctx, s304.siteURL("/")); !errors.Is(err, ErrStatus) {
		t.Fatalf("unasked 304: got %+v, %v; want ErrStatus", p, err)
	}
}

// TestCheckURLRefusesBeforeConnecting: CheckURL refuses what a fetch would refuse before
// connecting, and lets a host name through to be checked when it is resolved.
func TestCheckURLRefusesBeforeConnecting(t *testing.T) {
	f := &Fetcher{}
	for _, u := range []string{"ftp://example.com/", "example.com/page", "http:///x", "http://127.0.0.1/", "http://2130706433/", "http://[::1]:8080/", "http://0x7f.1/"} {
		if err := f.CheckURL(u); err == nil {
			t.Errorf("%s: passed", u)
		}
	}
	if err := f.CheckURL("https://example.com/feed"); err != nil {
		t.Errorf("a public name: %v", err)
	}
	if err := (&Fetcher{AllowPrivate: true}).CheckURL("http://127.0.0.1:8080/"); err != nil {
		t.Errorf("private allowed: %v", err)
	}
}
