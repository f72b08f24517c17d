package providers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
)

// Registration is one provider a Registry can open.
type Registration struct {
	Name Name
	// Open opens a provider instance.
	Open Factory
	// Describe returns the provider's description without opening an
	// instance (which may need configuration).
	Describe func(ctx context.Context) (Description, error)
	// OutOfProcess is true when instances run in a plugin process.
	OutOfProcess bool
	// Closer, if set, is closed with the registry (the plugin host that runs
	// the provider's processes).
	Closer io.Closer
}

// InProcess returns a registration that opens desc.Name's providers in this
// process with f.
func InProcess(desc Description, f Factory) Registration {
	return Registration{
		Name:     desc.Name,
		Open:     f,
		Describe: func(context.Context) (Description, error) { return desc, nil },
	}
}

// Registry maps provider names to the means of opening them. It is built
// explicitly in one place (see svc.dev/svc/providers/builtin) and injected;
// it is safe for concurrent use once built.
type Registry struct {
	mu      sync.RWMutex
	entries map[Name]Registration
	closers []io.Closer
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{entries: make(map[Name]Registration)}
}

// Register adds a provider. It panics if the name is not in the Provider
// enumeration, is already registered, or Open is nil: these are programming
// errors in the one place a registry is built.
func (r *Registry) Register(reg Registration) {
	if err := r.TryRegister(reg); err != nil {
		panic(err)
	}
}

// TryRegister is Register returning an error instead of panicking, for
// registrations that come from outside the program (a plugin directory).
func (r *Registry) TryRegister(reg Registration) error {
	if !reg.Name.Valid() {
		return fmt.Errorf("providers: register %q: not in the Provider enumeration", reg.Name)
	}
	if reg.Open == nil || reg.Describe == nil {
		return fmt.Errorf("providers: register %q: nil Open or Describe", reg.Name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.entries[reg.Name]; dup {
		return fmt.Errorf("providers: register %q: already registered", reg.Name)
	}
	r.entries[reg.Name] = reg
	if reg.Closer != nil && !slices.Contains(r.closers, reg.Closer) {
		r.closers = append(r.closers, reg.Closer)
	}
	return nil
}

// Names returns the registered names in the spec's enumeration order.
func (r *Registry) Names() []Name {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var names []Name
	for _, n := range Names {
		if _, ok := r.entries[n]; ok {
			names = append(names, n)
		}
	}
	return names
}

// Lookup returns the registration for name.
func (r *Registry) Lookup(name Name) (Registration, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	reg, ok := r.entries[name]
	return reg, ok
}

// Open opens an instance of the named provider and checks that it
// describes itself under that name.
func (r *Registry) Open(ctx context.Context, name Name, cfg Config) (Provider, error) {
	reg, ok := r.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("open provider %q: %w", name, ErrUnknownProvider)
	}
	p, err := reg.Open(ctx, cfg)
	if err != nil {
		return nil, &Error{Op: "open", Provider: name, Err: err}
	}
	return p, nil
}

// Describe returns the named provider's description.
func (r *Registry) Describe(ctx context.Context, name Name) (Description, error) {
	reg, ok := r.Lookup(name)
	if !ok {
		return Description{}, fmt.Errorf("describe provider %q: %w", name, ErrUnknownProvider)
	}
	return reg.Describe(ctx)
}

// Close stops whatever the registered providers run (plugin processes).
func (r *Registry) Close() error {
	r.mu.Lock()
	closers := r.closers
	r.closers = nil
	r.mu.Unlock()
	// In parallel: each plugin host kills its process without waiting on it, then waits a
	// moment for the clean-up, and a shutdown should not add those moments up.
	errs := make([]error, len(closers))
	var wg sync.WaitGroup
	for i, c := range closers {
		wg.Go(func() { errs[i] = c.Close() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// CloseProvider closes p if it holds resources (a plugin instance, open
// handles).
func CloseProvider(p Provider) error {
	if c, ok := p.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
