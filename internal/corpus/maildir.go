package corpus

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteMaildir writes the messages as Maildirs under dir: INBOX, Sent and Junk, each with cur/,
// new/ and tmp/. It returns each message's label by its listed id ("INBOX/UNIQUE"), the id the
// vendor_d_local provider gives it.
func WriteMaildir(dir string, msgs []Message) (map[string]Message, error) {
	labels := make(map[string]Message, len(msgs))
	for _, f := range []string{"INBOX", "Sent", "Junk"} {
		for _, sub := range []string{"cur", "new", "tmp"} {
			if err := os.MkdirAll(filepath.Join(dir, f, sub), 0o755); err != nil {
				return nil, fmt.Errorf("corpus: %w", err)
			}
		}
	}
	for i, m := range msgs {
		folder := m.Folder
		if folder == "" {
			folder = "INBOX"
		}
		unique := fmt.Sprintf("%d.M%dP1.corpus", m.Date.Unix(), i)
		name := filepath.Join(dir, folder, "cur", unique+":2,"+m.Flags)
		if err := os.WriteFile(name, m.Raw, 0o600); err != nil {
			return nil, fmt.Errorf("corpus: %w", err)
		}
		if err := os.Chtimes(name, m.Date, m.Date); err != nil {
			return nil, fmt.Errorf("corpus: %w", err)
		}
		labels[folder+"/"+unique] = m
	}
	return labels, nil
}
