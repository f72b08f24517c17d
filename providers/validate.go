package providers

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// ValidateDescription checks a description against the contract: a name
// from the Provider enumeration, this protocol version, known and unique
// operation classes, capabilities, kinds and marker kinds.
func ValidateDescription(d Description) error {
	var errs []error
	if !d.Name.Valid() {
		errs = append(errs, fmt.Errorf("name %q is not in the Provider enumeration", d.Name))
	}
	if d.ProtocolVersion != ProtocolVersion {
		errs = append(errs, fmt.Errorf("protocol version %d, want %d", d.ProtocolVersion, ProtocolVersion))
	}
	if len(d.OperationClasses) == 0 {
		errs = append(errs, errors.New("no operation classes"))
	}
	errs = append(errs, checkEnum("operation class", d.OperationClasses, OperationClass.Valid)...)
	errs = append(errs, checkEnum("capability", d.Capabilities, Capability.Valid)...)
	if len(d.ObjectKinds) == 0 {
		errs = append(errs, errors.New("no object kinds"))
	}
	errs = append(errs, checkEnum("object kind", d.ObjectKinds, Kind.Valid)...)
	if len(d.MarkerKinds) == 0 {
		errs = append(errs, errors.New("no marker kinds"))
	}
	errs = append(errs, checkEnum("marker kind", d.MarkerKinds, MarkerKind.Valid)...)
	return errors.Join(errs...)
}

func checkEnum[T comparable](what string, vs []T, valid func(T) bool) []error {
	var errs []error
	for i, v := range vs {
		if !valid(v) {
			errs = append(errs, fmt.Errorf("%s %v is not valid", what, v))
		}
		if slices.Index(vs, v) != i {
			errs = append(errs, fmt.Errorf("%s %v is repeated", what, v))
		}
	}
	return errs
}

// ValidateObject checks an object's metadata against the contract. The
// plugin host applies the same rules (as protovalidate rules) to everything
// a plugin returns.
func ValidateObject(o Object) error {
	var errs []error
	switch {
	case o.ID == "":
		errs = append(errs, errors.New("empty id"))
	case len(o.ID) > 1024 || hasControl(o.ID):
		errs = append(errs, fmt.Errorf("id %q is too long or has control characters", o.ID))
	}
	if hasControl(o.Version) || len(o.Version) > 1024 {
		errs = append(errs, fmt.Errorf("object %q: bad version", o.ID))
	}
	if hasControl(o.ParentID) || len(o.ParentID) > 1024 {
		errs = append(errs, fmt.Errorf("object %q: bad parent id", o.ID))
	}
	if !o.Kind.Valid() {
		errs = append(errs, fmt.Errorf("object %q: kind %q is not valid", o.ID, o.Kind))
	}
	if o.SizeBytes < 0 {
		errs = append(errs, fmt.Errorf("object %q: negative size %d", o.ID, o.SizeBytes))
	}
	if o.SHA256 != "" && !sha256Hex.MatchString(o.SHA256) {
		errs = append(errs, fmt.Errorf("object %q: sha256 %q is not lowercase hex", o.ID, o.SHA256))
	}
	for _, p := range o.Permissions {
		if p.Principal == "" || p.Role == "" || p.Type == "" {
			errs = append(errs, fmt.Errorf("object %q: incomplete permission", o.ID))
		}
	}
	return errors.Join(errs...)
}

// ValidateMarker checks a revision marker.
func ValidateMarker(m Marker) error {
	if !m.Kind.Valid() {
		return fmt.Errorf("marker kind %q is not valid", m.Kind)
	}
	return nil
}

// ClampPageSize returns the page size a provider should use for a request.
func ClampPageSize(n int) int {
	switch {
	case n <= 0:
		return DefaultPageSize
	case n > MaxPageSize:
		return MaxPageSize
	}
	return n
}
