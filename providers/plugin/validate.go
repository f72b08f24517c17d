package plugin

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/proto"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/internal/pluginpb"
)

var validator = sync.OnceValues(func() (protovalidate.Validator, error) { return protovalidate.New() })

// validate applies the protocol's protovalidate rules to a plugin response.
func validate(m proto.Message) error {
	v, err := validator()
	if err != nil {
		return fmt.Errorf("%w: validator: %v", providers.ErrInvalidResponse, err)
	}
	if err := v.Validate(m); err != nil {
		return fmt.Errorf("%w: %v", providers.ErrInvalidResponse, err)
	}
	return nil
}

// validateList validates a page: the page's own fields, then its objects,
// split across GOMAXPROCS goroutines when the page is large, because
// protovalidate's reflective walk (a few microseconds an object) is most of
// the host's cost of a listing through the boundary. It also applies
// checkItems to every object.
func validateList(page proto.Message, objects []*pluginpb.Object) error {
	if err := validate(page); err != nil {
		return err
	}
	workers := min(runtime.GOMAXPROCS(0), len(objects)/128)
	if workers <= 1 {
		return validateObjects(objects, 0)
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	per := (len(objects) + workers - 1) / workers
	for w := range workers {
		lo, hi := w*per, min((w+1)*per, len(objects))
		wg.Go(func() { errs[w] = validateObjects(objects[lo:hi], lo) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func validateObjects(objects []*pluginpb.Object, offset int) error {
	for i, o := range objects {
		if err := validate(o); err != nil {
			return fmt.Errorf("objects[%d]: %w", offset+i, err)
		}
		if err := checkItems(o); err != nil {
			return fmt.Errorf("objects[%d]: %w", offset+i, err)
		}
	}
	return nil
}

// checkItems applies the per-item length limits the protocol documents on
// Object but leaves out of the protovalidate rules (see provider.proto).
func checkItems(o *pluginpb.Object) error {
	long := func(items []string, limit int) bool {
		for _, s := range items {
			if len(s) > limit {
				return true
			}
		}
		return false
	}
	bad := long(o.GetContainers(), 4096)
	if h := o.GetMessage(); h != nil {
		bad = bad || long(h.GetTo(), 2048) || long(h.GetCc(), 2048)
	}
	for k, v := range o.GetMetadata() {
		bad = bad || k == "" || len(k) > 256 || len(v) > 4096
	}
	if bad {
		return fmt.Errorf("%w: object %q: a container, recipient or metadata entry exceeds its length limit", providers.ErrInvalidResponse, o.GetId())
	}
	if hasControl(o.GetId()) || hasControl(o.GetParentId()) || hasControl(o.GetVersion()) {
		return fmt.Errorf("%w: object %q: control character in id, parent_id or version", providers.ErrInvalidResponse, o.GetId())
	}
	return nil
}

func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return true
		}
	}
	return false
}
