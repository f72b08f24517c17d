package local

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// maxIndexedMaildirs bounds the Maildirs whose file names are remembered: about 100 bytes
// per message each, so a few large mailboxes at most.
const maxIndexedMaildirs = 8

// maildirs remembers where each message of a Maildir was last seen, so that finding one by
// its unique name (every fetch and trash of an execution) does not read and sort the whole
// directory: with 100,000 messages that made an execution quadratic.
var maildirs = &maildirIndex{dirs: map[string]*indexedMaildir{}}

type maildirIndex struct {
	mu    sync.Mutex
	dirs  map[string]*indexedMaildir
	clock uint64
}

type indexedMaildir struct {
	mu       sync.Mutex        // held while the directory is read
	files    map[string]string // unique name -> "cur/NAME" or "new/NAME"
	lastUsed uint64
}

// find returns the message with the given unique name in the Maildir dir. A remembered file
// name is used only if that file still exists: a message has exactly one file, whose name
// carries its flags, so an existing file is the message as it is now. Otherwise (a new
// message, or flags changed by another client) the directory is read again.
func (x *maildirIndex) find(dir, unique string) (maildirMessage, error) {
	d := x.dir(dir)
	d.mu.Lock()
	defer d.mu.Unlock()
	if rel, ok := d.files[unique]; ok {
		if m, ok := existing(dir, unique, rel); ok {
			return m, nil
		}
	}
	msgs, err := maildirMessages(dir)
	if err != nil {
		return maildirMessage{}, err
	}
	d.files = make(map[string]string, len(msgs))
	for _, m := range msgs {
		rel, err := filepath.Rel(dir, m.file)
		if err == nil {
			d.files[m.unique] = rel
		}
	}
	if rel, ok := d.files[unique]; ok {
		if m, ok := existing(dir, unique, rel); ok {
			return m, nil
		}
	}
	return maildirMessage{}, fs.ErrNotExist
}

// known returns a message of a Maildir that was read before, by its remembered file, when
// that file still exists (with stat false, without checking that: the message's fi is then
// nil): a file under its cur/ or new/ proves the directory still a Maildir,
// so the caller need not check. ok is false when the directory was not read yet or the
// message's file moved (find then reads the directory again).
func (x *maildirIndex) known(dir, unique string, stat bool) (maildirMessage, bool) {
	x.mu.Lock()
	d, ok := x.dirs[dir]
	x.mu.Unlock()
	if !ok {
		return maildirMessage{}, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	rel, ok := d.files[unique]
	if !ok {
		return maildirMessage{}, false
	}
	if !stat {
		// Unchecked: the caller opens the file and finds out.
		_, flags := splitMaildirName(filepath.Base(rel))
		return maildirMessage{unique: unique, file: filepath.Join(dir, rel), flags: flags}, true
	}
	return existing(dir, unique, rel)
}

// existing returns the message at dir/rel if that file exists, with its file's information.
func existing(dir, unique, rel string) (maildirMessage, bool) {
	full := filepath.Join(dir, rel)
	fi, err := os.Lstat(full)
	if err != nil || !fi.Mode().IsRegular() {
		return maildirMessage{}, false
	}
	_, flags := splitMaildirName(filepath.Base(rel))
	return maildirMessage{unique: unique, file: full, flags: flags, fi: fi}, true
}

// moved records that a message's file was renamed (its flags changed) by this provider.
func (x *maildirIndex) moved(dir, unique, full string) {
	d := x.dir(dir)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.files == nil {
		return
	}
	if rel, err := filepath.Rel(dir, full); err == nil {
		d.files[unique] = rel
	}
}

// dir returns the index of a Maildir, forgetting the least recently used one beyond
// maxIndexedMaildirs.
func (x *maildirIndex) dir(dir string) *indexedMaildir {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.clock++
	d, ok := x.dirs[dir]
	if !ok {
		if len(x.dirs) >= maxIndexedMaildirs {
			var oldest string
			for k, v := range x.dirs {
				if oldest == "" || v.lastUsed < x.dirs[oldest].lastUsed {
					oldest = k
				}
			}
			delete(x.dirs, oldest)
		}
		d = &indexedMaildir{}
		x.dirs[dir] = d
	}
	d.lastUsed = x.clock
	return d
}
