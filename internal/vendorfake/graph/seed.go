package graph

import (
	"fmt"
	"math/rand/v2"
	"time"

	"svc.dev/svc/internal/corpus"
)

// Seed says what a seeded fake holds.
type Seed struct {
	Seed     uint64    // the generator's seed; equal seeds give equal accounts
	Messages int       // messages in the mailbox (0: 60)
	Files    int       // files in the drive (0: 24)
	Epoch    time.Time // the newest date (zero: 2026-01-01)
}

// Seeded starts a fake holding a realistic mailbox (svc's labelled mail
// corpus filed in Inbox, Sent Items and Junk Email, a user folder with
// some of the list mail) and a drive of documents, photos and folders.
func Seeded(sd Seed) *Server {
	if sd.Messages == 0 {
		sd.Messages = 60
	}
	if sd.Files == 0 {
		sd.Files = 24
	}
	if sd.Epoch.IsZero() {
		sd.Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	s := New()
	lists := s.AddFolder("inbox", "Lists")
	for i, m := range corpus.Generate(sd.Seed, sd.Messages, sd.Epoch) {
		folder := "inbox"
		switch {
		case m.Folder == "Sent":
			folder = "sentitems"
		case m.Folder == "Junk":
			folder = "junkemail"
		case m.Label == corpus.Conversation && i%3 == 0 && m.Kind != "personal-reply":
			folder = lists
		}
		id := s.AddMessage(folder, m.Raw, m.Date)
		if len(m.Flags) > 0 && m.Flags[0] == 'S' {
			s.msgs[id].IsRead = true
		}
	}
	r := rand.New(rand.NewPCG(sd.Seed, 77))
	for _, f := range []string{"Documents", "Pictures", "Documents/Taxes"} {
		dir, name := "", f
		if f == "Documents/Taxes" {
			dir, name = "Documents", "Taxes"
		}
		s.AddItem(dir, name, nil, sd.Epoch.AddDate(-3, 0, 0))
	}
	kinds := []struct{ dir, ext string }{{"Documents", ".pdf"}, {"Pictures", ".jpg"}, {"Documents/Taxes", ".xlsx"}, {"", ".txt"}}
	for i := range sd.Files {
		k := kinds[i%len(kinds)]
		size := 200 + r.IntN(40_000)
		if i%11 == 10 {
			size = 5<<20 + r.IntN(1<<20) // a few large ones, over a Dropbox hash block
		}
		content := make([]byte, size)
		for j := range content {
			content[j] = byte(r.Uint32())
		}
		id := s.AddItem(k.dir, fmt.Sprintf("file-%03d%s", i, k.ext), content, sd.Epoch.AddDate(0, 0, -r.IntN(2000)))
		if i%4 == 1 {
			s.SetNoSHA256(id)
		}
	}
	return s
}
