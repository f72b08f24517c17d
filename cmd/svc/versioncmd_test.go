package main

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"
)

func TestWriteVersion(t *testing.T) {
	var out bytes.Buffer
	writeVersion(&out, &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "svc.dev/svc", Version: "v0.4.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "e3674d7abc"}, {Key: "vcs.time", Value: "2026-11-26T16:00:00Z"}, {Key: "vcs.modified", Value: "true"}}})
	want := "svc v0.4.0\n  revision e3674d7abc (with uncommitted changes)\n  committed 2026-11-26T16:00:00Z\n  go go1.26.0\n"
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
	out.Reset()
	writeVersion(&out, &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}})
	if !strings.Contains(out.String(), "svc (devel)\n  revision unknown") {
		t.Fatalf("got\n%s", out.String())
	}
}
