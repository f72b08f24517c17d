package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"

	"svc.dev/svc/client"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/receipt"
	"svc.dev/svc/wire"
)

// maxReceiptKeySetBytes bounds a fetched or read key set; real ones are a few hundred bytes a key.
const maxReceiptKeySetBytes = 1 << 20

// newReceiptCmd returns "svc receipt": offline verification of signed receipts.
func newReceiptCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "receipt",
		Short: "Get, verify and undo signed receipts",
	}
	var keys, server string
	verify := &cobra.Command{
		Use:   "verify FILE",
		Short: "Verify a receipt's hash and Ed25519 signature against the published keys",
		Long: `Verify checks a receipt (the JSON served by GET /v1/receipts/{id}; FILE "-" reads standard
input) without trusting the server that served it: the receipt's content, canonicalized with
RFC 8785 without hash and signature, must hash (SHA-256) to its hash, and signature.sig must be
a valid Ed25519 signature over that hash by the key signature.kid of the key set.

The key set is a JWK set file, or an http(s) URL that is fetched (only that URL). Without
--keys, it is fetched from --server (env SVC_URL) at ` + client.ReceiptKeysPath + `.
It exits with status 1 and says which check failed when the receipt does not verify.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readReceiptFile(cmd.InOrStdin(), args[0])
			if err != nil {
				return err
			}
			src := keys
			var set []byte
			if src == "" {
				if server == "" {
					return errors.New("no key set: give --keys FILE|URL, or --server URL (env SVC_URL) to fetch " + client.ReceiptKeysPath)
				}
				c, err := client.New(server, nil, &client.Options{UserAgent: "svc-cli"})
				if err != nil {
					return err
				}
				src = c.BaseURL() + client.ReceiptKeysPath
				if set, err = c.ReceiptKeys(cmd.Context()); err != nil {
					return fmt.Errorf("fetch key set: %w", explain(err))
				}
			} else if set, err = readReceiptKeySet(cmd.Context(), src); err != nil {
				return err
			}
			v, err := receipt.Verify(data, set)
			if err != nil {
				return fmt.Errorf("receipt %s does NOT verify: %w", args[0], err)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "receipt %s verifies\n", receiptOrUnknown(v.ReceiptID))
			fmt.Fprintf(w, "  hash       %s (SHA-256 of the canonical receipt)\n", v.Hash)
			fmt.Fprintf(w, "  signed by  %s (Ed25519, key set %s)\n", v.KeyID, src)
			fmt.Fprintf(w, "  execution  %s\n", receiptOrUnknown(v.ExecutionID))
			fmt.Fprintf(w, "  plan       %s\n", receiptOrUnknown(v.PlanID))
			return nil
		},
	}
	verify.Flags().StringVar(&keys, "keys", "", "the receipt key set: a JWK set file or an http(s) URL")
	verify.Flags().StringVar(&server, "server", os.Getenv("SVC_URL"), "server base URL whose "+client.ReceiptKeysPath+" to use when --keys is not given (env SVC_URL)")
	cmd.AddCommand(verify, newReceiptRestoreCmd(), newReceiptGetCmd())
	return cmd
}

// newReceiptRestoreCmd returns "svc receipt restore": undo an execution by its receipt.
func newReceiptRestoreCmd() *cobra.Command {
	var cf clientFlags
	var destination, idemKey string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "restore RECEIPT_ID",
		Short: "Plan the undo of an execution: bring back what its receipt lists as trashed, removed or moved",
		Long: `Restore asks a running server for a draft restore plan that brings back everything the
receipt's execution trashed, removed or moved: from the vault copies the receipt names (to where
each object was, or with --destination to that destination), or by untrashing at the provider
where the vault holds none. Objects that can no longer come back are listed as excluded, with
the reason. Nothing changes until the plan is authorized and applied: the summary ends with the
two commands that do it, runnable as printed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.resolveClient()
			if err != nil {
				return err
			}
			req := connect.NewRequest(&svcv1.RestoreReceiptRequest{Id: args[0]})
			if destination != "" {
				req.Msg.DestinationId = &destination
			}
			ctx := cmd.Context()
			if idemKey != "" {
				ctx = client.WithIdempotencyKey(ctx, idemKey)
			}
			res, err := c.Receipts.RestoreReceipt(ctx, req)
			if err != nil {
				return explain(err)
			}
			p := res.Msg
			if asJSON {
				b, err := wire.Marshal(p)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), string(b))
				return err
			}
			if err := renderPlan(cmd.OutOrStdout(), p, sourceLabels(ctx, c)); err != nil {
				return err
			}
			writeNextSteps(cmd.OutOrStdout(), &cf, p, "Nothing has changed yet. To undo:")
			return nil
		},
	}
	cf.register(cmd)
	cmd.Flags().StringVar(&destination, "destination", "", "restore the vault copies to this destination (dst_...) instead of their original place")
	cmd.Flags().StringVar(&idemKey, "idempotency-key", "", "Idempotency-Key for the request (a retry with the same key returns the same plan)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the plan as JSON instead of a summary")
	return cmd
}

func receiptOrUnknown(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}

func readReceiptFile(stdin io.Reader, name string) ([]byte, error) {
	if name == "-" {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("read receipt: %w", err)
		}
		return b, nil
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("read receipt: %w", err)
	}
	return b, nil
}

// readReceiptKeySet reads a key set file, or fetches an http(s) URL.
func readReceiptKeySet(ctx context.Context, src string) ([]byte, error) {
	u, err := url.Parse(src)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		f, err := os.Open(src)
		if err != nil {
			return nil, fmt.Errorf("read key set: %w", err)
		}
		defer f.Close()
		return readReceiptKeysLimited(f, src)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch key set: %w", err)
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch key set: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch key set: GET %s: %s", src, res.Status)
	}
	return readReceiptKeysLimited(res.Body, src)
}

func readReceiptKeysLimited(r io.Reader, src string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxReceiptKeySetBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read key set %s: %w", src, err)
	}
	if len(b) > maxReceiptKeySetBytes {
		return nil, fmt.Errorf("read key set %s: larger than %d bytes", src, maxReceiptKeySetBytes)
	}
	return b, nil
}

// newReceiptGetCmd returns "svc receipt get": write a receipt's signed JSON, byte for byte as
// the server serves it, for svc receipt verify or anyone else to check.
func newReceiptGetCmd() *cobra.Command {
	var cf clientFlags
	var output string
	cmd := &cobra.Command{
		Use:   "get RECEIPT_ID",
		Short: "Write a receipt's signed JSON (to standard output, or -o FILE)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.resolveClient()
			if err != nil {
				return err
			}
			data, err := c.ReceiptJSON(cmd.Context(), args[0])
			if err != nil {
				return explain(err)
			}
			if output == "" || output == "-" {
				_, err = cmd.OutOrStdout().Write(append(data, '\n'))
				return err
			}
			if err := os.WriteFile(output, data, 0o644); err != nil {
				return fmt.Errorf("write receipt: %w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote receipt %s to %s (%d bytes); check it with:\n  %s receipt verify %s --server %s\n",
				args[0], output, len(data), programName(), shellQuote(output), shellQuote(c.BaseURL()))
			return nil
		},
	}
	cf.register(cmd)
	cmd.Flags().StringVarP(&output, "output", "o", "", "write the receipt to this file (default: standard output)")
	return cmd
}
