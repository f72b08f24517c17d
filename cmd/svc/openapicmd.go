package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/spf13/cobra"

	"svc.dev/svc/server"
)

// newOpenAPICmd returns "svc openapi": print the OpenAPI document this binary's server serves
// at /v1/openapi.json, without running one (for client generators and CI).
func newOpenAPICmd() *cobra.Command {
	var baseURL string
	cmd := &cobra.Command{
		Use:   "openapi",
		Short: "Print the OpenAPI 3.1 document of the REST API this binary serves",
		Long: `Openapi prints the document a server of this binary serves at GET /v1/openapi.json, made
from the same proto descriptors as its router, without starting one. --base-url names the
server in the document's servers (default: relative to wherever the document is served).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := os.MkdirTemp("", "svc-openapi-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			srv, err := server.New(server.Config{DataDir: dir, BaseURL: baseURL})
			if err != nil {
				return err
			}
			defer srv.Close()
			rec := httptest.NewRecorder()
			req := httptest.NewRequestWithContext(context.WithoutCancel(cmd.Context()), http.MethodGet, "/v1/openapi.json", nil)
			srv.Handler().ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				return fmt.Errorf("openapi: %d %s", rec.Code, rec.Body)
			}
			_, err = cmd.OutOrStdout().Write(append(rec.Body.Bytes(), '\n'))
			return err
		},
	}
	cmd.Flags().StringVar(&baseURL, "base-url", "", "the server's public address, for servers (default: relative)")
	return cmd
}
