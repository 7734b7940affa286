package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// Page says which page of a long list a request asks for.
type Page struct {
	// After is the cursor the page before ended with (its Next): the page starts after
	// it; "" starts at the first item.
	After string `query:"after"`
	// Limit is the most items the page holds; 0 asks for the whole list, which the
	// daemon writes as it reads it.
	Limit int `query:"limit" want:"a whole number from 1 to 10000, or none for the whole list"`
}

// ListPage is how many items the daemon reads from the store at once when it writes a
// whole list, and how many agentctl prints before it flushes a table.
const ListPage = 500

// MaxListLimit is the largest page a request may ask for; the whole list is limit 0.
const MaxListLimit = 10000

// ListRoute is a GET route whose reply is a JSON array that may be long (10,000 agents
// with their pending proposals are megabytes): the daemon reads it from the Service a
// page at a time and writes each page as it has it, and the Go client hands each item to
// its caller as it decodes it, so neither side holds the whole list. A request with a
// limit gets one page and, when more follow, a Link header (rel="next") whose URL asks
// for the next one, as GitHub's API pages. Q is the rest of the query (encodeQuery).
type ListRoute[Q, T any] struct {
	Path string // a ServeMux pattern without path values, served for GET
	// Call reads one page: at most p.Limit items (never 0) after the cursor p.After,
	// and the cursor of the last one ("" when no item follows it).
	Call func(ctx context.Context, s Service, q Q, p Page) (items []T, next string, err error)
}

// Pattern implements Endpoint.
func (rt ListRoute[Q, T]) Pattern() string { return "GET " + rt.Path }

// Serve implements Endpoint: its value is a *List for the server to write.
func (rt ListRoute[Q, T]) Serve(s Service, r *http.Request, _ func(any) error) (int, any, error) {
	var q Q
	var p Page
	if err := decodeQuery(r.URL.Query(), &q, &p); err != nil {
		return 0, nil, err
	}
	if p.Limit > MaxListLimit {
		return 0, nil, Errorf(ErrBadRequest, "limit %q: want a whole number from 1 to %d, or none for the whole list", strconv.Itoa(p.Limit), MaxListLimit)
	}
	ctx := r.Context()
	whole := p.Limit == 0
	if whole {
		p.Limit = ListPage
	}
	// The first page is read before anything is written, so a refusal gets its status.
	items, next, err := rt.Call(ctx, s, q, p)
	if err != nil {
		return 0, nil, err
	}
	l := &List{}
	if !whole {
		if next != "" {
			p.After = next
			l.Next = rt.URL(q, p)
		}
		l.each = func(yield func(any) error) error { return yieldAll(items, yield) }
		return http.StatusOK, l, nil
	}
	l.each = func(yield func(any) error) error {
		for {
			if err := yieldAll(items, yield); err != nil {
				return err
			}
			if next == "" {
				return nil
			}
			p.After = next
			if items, next, err = rt.Call(ctx, s, q, p); err != nil {
				return err
			}
		}
	}
	return http.StatusOK, l, nil
}

func yieldAll[T any](items []T, yield func(any) error) error {
	for _, it := range items {
		if err := yield(it); err != nil {
			return err
		}
	}
	return nil
}

// URL is the route's path with the query of q and p.
func (rt ListRoute[Q, T]) URL(q Q, p Page) string {
	v := encodeQuery(&q, &p)
	if len(v) == 0 {
		return rt.Path
	}
	return rt.Path + "?" + v.Encode()
}

// List is a ListRoute's reply as the server writes it (Write).
type List struct {
	// Next is the URL of the next page, for the Link header; "" when none follows or
	// the whole list is written.
	Next string
	each func(yield func(item any) error) error
}

// Write writes the list as a JSON array, flushing after every ListPage items so the
// client reads the first while the daemon reads the next. An error once the array has
// begun cuts the reply short, which the client reports as a listing cut short; it is
// returned for the server's log.
func (l *List) Write(w http.ResponseWriter) error {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if l.Next != "" {
		h.Set("Link", "<"+l.Next+`>; rel="next"`)
	}
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	n := 0
	if _, err := io.WriteString(w, "["); err != nil {
		return err
	}
	err := l.each(func(item any) error {
		b, err := json.Marshal(item)
		if err != nil {
			return err
		}
		if n > 0 {
			b = append([]byte{','}, b...)
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		if n++; n%ListPage == 0 {
			return rc.Flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, "]\n")
	return err
}

// list reads rt's JSON array for q and p, handing each item to fn as it is decoded, and
// returns the cursor of the next page from the reply's Link header ("" when none).
func list[Q, T any](ctx context.Context, c *Client, rt ListRoute[Q, T], q Q, p Page, fn func(T) error) (next string, err error) {
	path := rt.URL(q, p)
	resp, err := c.send(ctx, "GET", path, nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if link := resp.Header.Get("Link"); link != "" {
		next = nextCursor(link)
	}
	dec := json.NewDecoder(resp.Body)
	cut := func(err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("client: the list at %s was cut short (%v): list again", path, err)
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return "", cut(fmt.Errorf("want a JSON array, got %v", tok))
	}
	for dec.More() {
		var it T
		if err := dec.Decode(&it); err != nil {
			return "", cut(err)
		}
		if err := fn(it); err != nil {
			return "", err
		}
	}
	if _, err := dec.Token(); err != nil {
		return "", cut(err)
	}
	return next, nil
}

// nextCursor is the after of a Link header's rel="next" URL.
func nextCursor(link string) string {
	// One link, as List.Write sets it: <URL>; rel="next".
	if len(link) < 2 || link[0] != '<' {
		return ""
	}
	end := 1
	for end < len(link) && link[end] != '>' {
		end++
	}
	u, err := url.Parse(link[1:end])
	if err != nil {
		return ""
	}
	return u.Query().Get("after")
}
