package plugin

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"svc.dev/svc/providers"
)

// FilePrefix is the file name prefix of a plugin executable in a plugin
// directory: svc-provider-NAME, where NAME is from the Provider enumeration.
const FilePrefix = "svc-provider-"

// Discovered is a plugin executable found in a plugin directory.
type Discovered struct {
	Name providers.Name
	Path string
}

// Discover lists the plugin executables in dir: regular executable files
// named svc-provider-NAME (an extension such as .exe is ignored). A file
// whose NAME is not in the Provider enumeration is reported as an error and
// skipped. A missing dir is not an error.
func Discover(dir string) ([]Discovered, error) {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("discover plugins: %w", err)
	}
	var found []Discovered
	var bad []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), FilePrefix) {
			continue
		}
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
			continue
		}
		name := providers.Name(strings.TrimSuffix(strings.TrimPrefix(e.Name(), FilePrefix), filepath.Ext(e.Name())))
		if !name.Valid() {
			bad = append(bad, e.Name())
			continue
		}
		found = append(found, Discovered{Name: name, Path: filepath.Join(dir, e.Name())})
	}
	sort.Slice(found, func(i, j int) bool { return found[i].Name < found[j].Name })
	if len(bad) > 0 {
		return found, fmt.Errorf("discover plugins: %s: names not in the Provider enumeration", strings.Join(bad, ", "))
	}
	return found, nil
}

// Registration returns a registry entry that runs p out of process.
func Registration(p *Plugin) providers.Registration {
	return providers.Registration{Name: p.Name(), Open: p.Open, Describe: p.Describe, OutOfProcess: true, Closer: p}
}
