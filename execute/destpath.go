package execute

import (
	"errors"
	"fmt"
	"path"
	"strings"

	svcv1 "svc.dev/svc/gen/svc/v1"
)

// DefaultPathTemplate places a copy at a destination under its source, at the object's path
// there (its id when the provider has no paths).
const DefaultPathTemplate = "{source_id}/{path}"

// pathFields are the placeholders of a destination's pathTemplate.
var pathFields = []string{"{source_id}", "{provider}", "{object_id}", "{asset_id}", "{name}", "{path}"}

// CheckPathTemplate reports whether t is a usable pathTemplate: a relative slash path made of
// text and the placeholders {source_id}, {provider}, {object_id}, {asset_id}, {name} and
// {path}, with at least one of {object_id}, {asset_id}, {name} or {path} so that objects do not
// all land on one path.
func CheckPathTemplate(t string) error {
	if t == "" {
		return errors.New("is empty")
	}
	rest := t
	for _, f := range pathFields {
		rest = strings.ReplaceAll(rest, f, "x")
	}
	if strings.ContainsAny(rest, "{}") {
		return fmt.Errorf("%q has an unknown placeholder (known: %s)", t, strings.Join(pathFields, " "))
	}
	if strings.HasPrefix(t, "/") || strings.Contains(t, "\\") || strings.ContainsRune(t, 0) {
		return fmt.Errorf("%q is not a relative slash path", t)
	}
	for _, seg := range strings.Split(t, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("%q has an empty, . or .. segment", t)
		}
	}
	if !strings.Contains(t, "{object_id}") && !strings.Contains(t, "{asset_id}") && !strings.Contains(t, "{name}") && !strings.Contains(t, "{path}") {
		return fmt.Errorf("%q names no object: use {path}, {name}, {object_id} or {asset_id}", t)
	}
	return nil
}

// DestinationPath is where an object goes at a destination: the template (default
// DefaultPathTemplate) with its placeholders filled from the plan object alone, so that a
// write redone after a crash goes to the same path. {path} is the provider object id (a
// relative path for folder and object-store providers) and {name} its last segment. Each
// filled value is cleaned so that it stays inside the destination (no leading slash, no . or
// .. segments).
func DestinationPath(template string, o *svcv1.PlanObject) string {
	if template == "" {
		template = DefaultPathTemplate
	}
	objPath := o.GetProviderObjectId()
	name := path.Base(clean(objPath))
	r := strings.NewReplacer(
		"{source_id}", clean(o.GetSourceId()),
		"{provider}", clean(enumName(o.GetProvider())),
		"{object_id}", clean(o.GetProviderObjectId()),
		"{asset_id}", clean(o.GetAssetId()),
		"{name}", strings.ReplaceAll(clean(name), "/", "_"),
		"{path}", clean(objPath),
	)
	return r.Replace(template)
}

// clean makes a value a relative path without empty, . or .. segments ("_" instead).
func clean(v string) string {
	segs := strings.Split(strings.ReplaceAll(v, "\\", "/"), "/")
	out := segs[:0]
	for _, s := range segs {
		switch s {
		case "", ".":
			continue
		case "..":
			s = "_"
		}
		out = append(out, strings.ReplaceAll(s, "\x00", "_"))
	}
	if len(out) == 0 {
		return "_"
	}
	return strings.Join(out, "/")
}
