package execute_test

import (
	"strings"
	"testing"

	"svc.dev/svc/execute"
	svcv1 "svc.dev/svc/gen/svc/v1"
)

func TestPathTemplates(t *testing.T) {
	for _, ok := range []string{execute.DefaultPathTemplate, "{path}", "export/{provider}/{name}", "{asset_id}.bin", "by-id/{object_id}"} {
		if err := execute.CheckPathTemplate(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for bad, why := range map[string]string{
		"":               "empty",
		"{source_id}":    "names no object",
		"/abs/{path}":    "relative",
		"a/../{path}":    "segment",
		"a//{path}":      "segment",
		"./{path}":       "segment",
		"{paths}":        "unknown placeholder",
		"x\\{path}":      "relative",
		"{path}/{oops}}": "unknown placeholder",
	} {
		if err := execute.CheckPathTemplate(bad); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%q: %v, want an error saying %q", bad, err, why)
		}
	}
	o := &svcv1.PlanObject{AssetId: "ast_1", SourceId: "src_1", Provider: svcv1.Provider_PROVIDER_VENDOR_D_LOCAL}
	for id, want := range map[string]string{
		"docs/2025/report.pdf":  "src_1/docs/2025/report.pdf",
		"../../etc/passwd":      "src_1/_/_/etc/passwd",
		"/abs//x/./y":           "src_1/abs/x/y",
		"msg-00000015":          "src_1/msg-00000015",
		"":                      "src_1/_",
		"a\\b":                  "src_1/a/b",
		"nul\x00byte/..":        "src_1/nul_byte/_",
		"folder/../../outside/": "src_1/folder/_/_/outside",
	} {
		o.ProviderObjectId = id
		if got := execute.DestinationPath("", o); got != want {
			t.Errorf("%q -> %q, want %q", id, got, want)
		}
	}
	o.ProviderObjectId = "a/b/c.txt"
	if got := execute.DestinationPath("x/{provider}/{name}-{asset_id}", o); got != "x/vendor_d_local/c.txt-ast_1" {
		t.Errorf("placeholders: %q", got)
	}
}
