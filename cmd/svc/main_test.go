package main

import (
	"testing"

	"svc.dev/svc/internal/pgtest"
)

// TestMain stops the PostgreSQL cluster that tests of --database start, if any.
func TestMain(m *testing.M) { pgtest.Main(m) }
