//go:build !linux

package plugin

import (
	"errors"
	"net"
)

// lanesSupported says whether content lanes work on this platform: they
// need memfd_create and file seals, so elsewhere content travels in Fetch
// messages.
const lanesSupported = false

var errNoLanes = errors.New("content lanes need Linux")

func newSharedMemory(int) (int, []byte, error) { return -1, nil, errNoLanes }
func mapSharedMemory(int, int) ([]byte, error) { return nil, errNoLanes }
func unmapSharedMemory([]byte)                 {}
func closeFD(int)                              {}

func writeHello(*net.UnixConn, []byte, int) error         { return errNoLanes }
func readHello(*net.UnixConn, []byte) (int, []int, error) { return 0, nil, errNoLanes }
