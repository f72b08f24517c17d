//go:build !linux

package local

import "os"

// oDirect is 0 where O_DIRECT is not available: files go through the page
// cache.
const oDirect = 0

// datasync is fsync where fdatasync is not available.
func datasync(f *os.File) error { return f.Sync() }

// canEvict reports that evict cannot drop cached pages here.
const canEvict = false

// evict does nothing where posix_fadvise is not available.
func evict(*os.File, int64, int64) error { return nil }
