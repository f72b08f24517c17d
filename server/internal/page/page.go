// Package page renders svc's few server-side HTML pages (the consent page of the connect flow
// and its messages): plain HTML from embedded templates, one inline style sheet allowed by its
// hash, no script, and the security headers every page carries.
package page

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

//go:embed tmpl/pages.html tmpl/style.css
var connectFiles embed.FS

var (
	connectTemplates = template.Must(template.ParseFS(connectFiles, "tmpl/pages.html"))
	connectStyle     = mustRead(connectFiles, "tmpl/style.css")
	// connectStyleHash lets the Content-Security-Policy allow the one inline style sheet and
	// nothing else.
	connectStyleHash = func() string {
		sum := sha256.Sum256([]byte(connectStyle))
		return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	}()
)

func mustRead(fs embed.FS, name string) string {
	b, err := fs.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// OpWords says what each operation class lets an application do, in plain words.
var OpWords = map[string][2]string{
	"discover":         {"See what you keep", "list your messages and files (names, sizes, dates, senders) to build plans, without changing anything"},
	"preserve":         {"Keep copies", "copy content into your svc vault and verify it"},
	"write":            {"Write", "add content to your providers and destinations"},
	"remove":           {"Clean up", "move content to the trash or remove it at your providers, after a verified copy is in your vault"},
	"restore":          {"Restore", "bring content back from your vault or the provider's trash"},
	"migrate":          {"Move", "move content from one provider to another"},
	"monitor":          {"Watch", "keep an eye on your accounts for changes, storage limits and billing traps"},
	"automate":         {"Act on a schedule", "run plans you approved without asking you each time"},
	"billable_execute": {"Run billed work", "run executions that are billed to the application's developer account"},
}

// View is what the templates render.
type View struct {
	Title, App, Action, Token, User, Expires, Email string
	Notice, Error                                   string
	Provider                                        string
	Test                                            bool
	// Destructive is set when the application asks to remove or move content.
	Destructive bool
	// Connected is set once the user connected a provider account during this consent.
	Connected bool
	// Own is set on the pages of a user's own provider authorization (no application asks).
	Own     bool
	Ops     []Op
	Sources []Source
	Style   template.CSS
}

// Op is an operation class in plain words.
type Op struct{ Title, Words string }

// Source is a source the user may choose.
type Source struct {
	ID, Name, Detail string
	Checked          bool
}

// Headers sets the security headers of every page: no framing (clickjacking a consent is
// the classic attack), no script, forms only to svc and to where the flow redirects, no
// referrer (the URLs carry ids), no caching.
func Headers(w http.ResponseWriter, formTargets ...string) {
	h := w.Header()
	targets := []string{"'self'"}
	for _, t := range formTargets {
		if src := cspSource(t); src != "" && !slices.Contains(targets, src) {
			targets = append(targets, src)
		}
	}
	h.Set("Content-Security-Policy", "default-src 'none'; style-src "+connectStyleHash+"; form-action "+strings.Join(targets, " ")+
		"; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
}

// cspSource is the CSP source expression of a URL's origin ("https://app.example", or
// "myapp:" for a custom scheme).
func cspSource(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || strings.ContainsAny(raw, " ;,'\"") {
		return ""
	}
	if u.Host == "" {
		return u.Scheme + ":"
	}
	return u.Scheme + "://" + u.Host
}

// Render writes the page of template name with v.
func Render(w http.ResponseWriter, log *slog.Logger, status int, name string, v *View) {
	v.Style = template.CSS(connectStyle)
	var buf bytes.Buffer
	if err := connectTemplates.ExecuteTemplate(&buf, name, v); err != nil {
		log.Error("render page", "template", name, "err", err)
		http.Error(w, "The page could not be shown.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// Message writes a page that only says text: a notice, or an error from status 400 on.
func Message(w http.ResponseWriter, log *slog.Logger, status int, title, text string) {
	Headers(w)
	v := &View{Title: title}
	if status >= 400 {
		v.Error = text
	} else {
		v.Notice = text
	}
	Render(w, log, status, "message", v)
}
