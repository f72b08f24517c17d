package intelcorpus_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"svc.dev/svc/intel"
	"testing"

	"svc.dev/svc/internal/intelcorpus"
	"svc.dev/svc/mail"
)

// TestDump prints the text of a service's messages (INTEL_DUMP=name), for reading misses.
func TestDump(t *testing.T) {
	name := os.Getenv("INTEL_DUMP")
	seed, _ := strconv.ParseUint(os.Getenv("INTEL_SEED"), 10, 64)
	if seed == 0 {
		seed = 1
	}
	if name == "" {
		t.Skip("INTEL_DUMP not set")
	}
	c := intelcorpus.Generate(seed, 230, 3000, asOf)
	var key string
	for _, s := range c.Services {
		if s.Name == name {
			key = s.Key
			fmt.Printf("%+v\n", s)
		}
	}
	for _, m := range c.Messages {
		if m.Service != key {
			continue
		}
		d, err := mail.ReadDocument(bytes.NewReader(m.Raw), nil)
		if err != nil {
			fmt.Println("SKIP", err)
			continue
		}
		fmt.Printf("==== %s %s | %s | %s\n%s\n", m.Date.Format("2006-01-02"), m.Kind, d.From, d.Subject, strings.TrimSpace(d.Body()))
		sc := intel.NewScanner(nil)
		sc.ScanDocument("x", d)
		for _, o := range sc.Observations() {
			o.Excerpts = nil
			b, _ := json.Marshal(o)
			fmt.Printf("OBS %s\n", b)
		}
	}
}
