package dropbox

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Seed says what a seeded fake holds.
type Seed struct {
	Seed  uint64    // equal seeds give equal accounts
	Files int       // 0: 24
	Epoch time.Time // the newest date (zero: 2026-01-01)
}

// Seeded starts a fake holding an account of documents, photos and
// camera uploads in folders, a few over one 4 MiB content-hash block, and
// files with older revisions.
func Seeded(sd Seed) *Server {
	if sd.Files == 0 {
		sd.Files = 24
	}
	if sd.Epoch.IsZero() {
		sd.Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	s := New()
	r := rand.New(rand.NewPCG(sd.Seed, 99))
	dirs := []struct{ dir, ext string }{{"/Documents", ".pdf"}, {"/Camera Uploads", ".jpg"}, {"/Documents/Receipts 2025", ".png"}, {"", ".txt"}}
	for i := range sd.Files {
		d := dirs[i%len(dirs)]
		size := 100 + r.IntN(30_000)
		if i%11 == 10 {
			size = 4<<20 + r.IntN(1<<20)
		}
		content := make([]byte, size)
		for j := range content {
			content[j] = byte(r.Uint32())
		}
		p := fmt.Sprintf("%s/File %03d%s", d.dir, i, d.ext)
		when := sd.Epoch.AddDate(0, 0, -r.IntN(2000))
		if i%5 == 2 {
			// an older revision first
			s.AddFile(p, content[:len(content)/2], when.AddDate(0, -1, 0))
		}
		s.AddFile(p, content, when)
	}
	return s
}
