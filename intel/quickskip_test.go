package intel

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// quickSkip reads header lines in place; it must judge as the version that lowercased a copy of
// the header block did (quickSkipLowered), on any header.
func TestQuickSkipAgreesWithLowered(t *testing.T) {
	lines := []string{"From: Jo <jo@gmail.com>", "FROM: jo@GMAIL.com", "From: \"Acme\" <billing@acme.example>", "from: a@outlook.com",
		"Subject: Re: lunch", "SUBJECT: RE: lunch", "Subject: Fwd: receipt", "Subject: Re: WG: x", "Subject: receipt", "subject:re:x",
		"In-Reply-To: <a@b>", "in-reply-to:<x>", "Content-Type: multipart/mixed; boundary=x", "CONTENT-TYPE: Multipart/Mixed",
		"Content-Type: text/plain", "List-Post: <mailto:l@x>", "LIST-POST: NO", "X-Spam-Flag: YES", "X-Spam-Flag: NO",
		"x-spam-status: Yes, score=9", "X-Mailman-Version: 3", "X-GitHub-Reason: mention", "X-Jira-FingerPrint: 1", " folded: list-post:",
		"\tX-Spam-Flag: YES", "Received: by x; Mon, 2 Nov 2026", "Date: Mon, 2 Nov 2026 10:00:00 +0000", "X-Other: y", "Sender: s@gmail.com"}
	r := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		var b strings.Builder
		eol := []string{"\n", "\r\n"}[r.IntN(2)]
		for range r.IntN(8) {
			b.WriteString(lines[r.IntN(len(lines))])
			b.WriteString(eol)
		}
		switch r.IntN(4) {
		case 0: // no end of the header in the peek
		default:
			b.WriteString(eol + "body" + eol)
		}
		raw := []byte(b.String())
		if got, want := quickSkip(raw), quickSkipLowered(raw); got != want {
			t.Fatalf("quickSkip(%q) = %v, the lowered copy's %v", raw, got, want)
		}
	}
}

// quickSkipLowered is quickSkip as it was: on a lowercased copy of the header block.
func quickSkipLowered(raw []byte) bool {
	end := bytes.Index(raw, []byte("\n\n"))
	if k := bytes.Index(raw, []byte("\n\r\n")); k >= 0 && (end < 0 || k < end) {
		end = k
	}
	if end < 0 {
		return false
	}
	h := []byte{'\n'}
	for _, c := range raw[:end+1] {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		h = append(h, c)
	}
	for _, k := range skipHeaders {
		if bytes.Contains(h, append([]byte{'\n'}, k...)) {
			return true
		}
	}
	field := func(key string) []byte {
		i := bytes.Index(h, []byte(key))
		if i < 0 {
			return nil
		}
		v := h[i+len(key):]
		if j := bytes.IndexByte(v, '\n'); j >= 0 {
			v = v[:j]
		}
		return v
	}
	subject := field("\nsubject:")
	fwd := bytes.Contains(subject, []byte("fw")) || bytes.Contains(subject, []byte("wg:")) || bytes.Contains(subject, []byte("tr:"))
	if bytes.HasPrefix(bytes.TrimSpace(subject), []byte("re:")) && !fwd && bytes.Contains(h, []byte("\nin-reply-to:")) {
		return true
	}
	from := field("\nfrom:")
	if i := bytes.LastIndexByte(from, '@'); i >= 0 && !fwd && !bytes.Contains(field("\ncontent-type:"), []byte("multipart/mixed")) {
		dom := from[i+1:]
		if j := bytes.IndexAny(dom, "> \t\r\"'"); j >= 0 {
			dom = dom[:j]
		}
		return isFreemail(string(dom))
	}
	return false
}

// mayState finds the hints in one pass, ASCII case ignored; it must answer as a search of the
// lowercased text for each hint does, on any bytes.
func TestMayStateAgreesWithLowered(t *testing.T) {
	frags := []string{"$", "€", "£", "\xa3", "\xe2\x82", "\xac", "USD", "Eur", "gbP", "dollar", "EURO", "Trial", "CANCEL", "upgrad", "Seat",
		"licen", "Member", "credit", "PLAN", "summary", "Ready", "complete", "activity", "You Created", "İ", "K", "ſ", "\xff", "x", " ", "\n",
		"tri", "al", "pl", "an", "do", "llar", "you ", "created"}
	r := rand.New(rand.NewPCG(7, 8))
	for range 20000 {
		var b []byte
		for range r.IntN(6) {
			b = append(b, frags[r.IntN(len(frags))]...)
		}
		low := bytes.ToLower(b)
		want := false
		for _, h := range hints {
			want = want || bytes.Contains(low, h)
		}
		if got := mayState("", b); got != want {
			t.Fatalf("mayState(%q) = %v, the lowered search's %v", b, got, want)
		}
	}
}
