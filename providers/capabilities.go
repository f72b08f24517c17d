package providers

import "slices"

// CapabilityMasker is implemented by providers that implement an optional
// interface in their Go type but may not support it at run time (the plugin
// host's wrapper, a provider whose capability depends on its config).
// AsTrasher and friends consult it; a plain type assertion does not, so
// callers use the As functions.
type CapabilityMasker interface {
	Supports(c Capability) bool
}

func supports(p Provider, c Capability) bool {
	if m, ok := p.(CapabilityMasker); ok {
		return m.Supports(c)
	}
	return true
}

// AsTrasher returns p's Trasher if it has one.
func AsTrasher(p Provider) (Trasher, bool) {
	t, ok := p.(Trasher)
	return t, ok && supports(p, CapTrash)
}

// AsBatchTrasher returns p's BatchTrasher if it has one and can trash.
func AsBatchTrasher(p Provider) (BatchTrasher, bool) {
	b, ok := p.(BatchTrasher)
	if _, trash := AsTrasher(p); !ok || !trash {
		return nil, false
	}
	return b, supports(p, CapTrashBatch)
}

// AsBatchFetcher returns p's BatchFetcher if it has one.
func AsBatchFetcher(p Provider) (BatchFetcher, bool) {
	b, ok := p.(BatchFetcher)
	return b, ok && supports(p, CapFetchBatch)
}

// AsRemover returns p's Remover if it has one.
func AsRemover(p Provider) (Remover, bool) {
	r, ok := p.(Remover)
	return r, ok && supports(p, CapRemove)
}

// AsUntrasher returns p's Untrasher if it has one.
func AsUntrasher(p Provider) (Untrasher, bool) {
	u, ok := p.(Untrasher)
	return u, ok && supports(p, CapUntrash)
}

// AsWriter returns p's Writer if it has one.
func AsWriter(p Provider) (Writer, bool) {
	w, ok := p.(Writer)
	return w, ok && supports(p, CapWrite)
}

// AsQuotaer returns p's Quotaer if it has one.
func AsQuotaer(p Provider) (Quotaer, bool) {
	q, ok := p.(Quotaer)
	return q, ok && supports(p, CapQuota)
}

// AsCredentialWatcher returns p's CredentialWatcher if it has one.
func AsCredentialWatcher(p Provider) (CredentialWatcher, bool) {
	w, ok := p.(CredentialWatcher)
	return w, ok && supports(p, CapCredentials)
}

// CapabilitiesOf returns the capabilities p implements, in the order of
// Capabilities.
func CapabilitiesOf(p Provider) []Capability {
	var caps []Capability
	if _, ok := AsTrasher(p); ok {
		caps = append(caps, CapTrash)
	}
	if _, ok := AsRemover(p); ok {
		caps = append(caps, CapRemove)
	}
	if _, ok := AsUntrasher(p); ok {
		caps = append(caps, CapUntrash)
	}
	if _, ok := AsWriter(p); ok {
		caps = append(caps, CapWrite)
	}
	if _, ok := AsQuotaer(p); ok {
		caps = append(caps, CapQuota)
	}
	if _, ok := AsBatchTrasher(p); ok {
		caps = append(caps, CapTrashBatch)
	}
	if _, ok := AsBatchFetcher(p); ok {
		caps = append(caps, CapFetchBatch)
	}
	if _, ok := AsCredentialWatcher(p); ok {
		caps = append(caps, CapCredentials)
	}
	return caps
}

// OperationClassesFor derives the operation classes a provider with the
// given capabilities can be granted:
//
//   - discover and preserve always (List and Fetch are required), monitor
//     always (Changes is required);
//   - remove with trash or remove;
//   - restore with untrash or write (a vault-to-destination restore);
//   - write and migrate with write.
//
// automate and billable_execute are not provider properties and are never
// derived.
func OperationClassesFor(caps []Capability) []OperationClass {
	has := func(c Capability) bool { return slices.Contains(caps, c) }
	out := []OperationClass{Discover, Preserve}
	if has(CapWrite) {
		out = append(out, Write)
	}
	if has(CapTrash) || has(CapRemove) {
		out = append(out, Remove)
	}
	if has(CapUntrash) || has(CapWrite) {
		out = append(out, Restore)
	}
	if has(CapWrite) {
		out = append(out, Migrate)
	}
	return append(out, Monitor)
}
