package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"svc.dev/svc"

	"github.com/spf13/cobra"

	"svc.dev/svc/vault"
)

func newVaultCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "vault",
		Short: "Search the vault of a running server, and maintain the vault of a data directory",
	}
	var dataDir, tenant string
	var noRepair, asJSON bool
	var vaultStore vaultFlags
	scrub := &cobra.Command{
		Use:   "scrub",
		Short: "Re-read and re-hash every stored copy; mark mismatches corrupt and repair what can be",
		Long: `Scrub re-reads every stored copy in the vault of a data directory and checks its SHA-256
(and its encryption's authentication). A copy that does not match is marked corrupt and, when
the content has an intact copy on the other tier, rewritten from it; extracted texts are
checked too, interrupted deletions finished and files no record uses removed after a day.
Each tenant's scrub is recorded as a job (kind scan).

It works on a stopped server's data directory: a running svc serve holds the directory and
scrubs every tenant on its own (--scrub-every, default 24h). It exits with status 1 when
objects are left corrupt.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dataDir == "" {
				dataDir = defaultDataDir()
			}
			vb, err := vaultStore.backends(cmd.Context())
			if err != nil {
				return err
			}
			results, err := svc.ScrubDataDir(cmd.Context(), dataDir, vb.Hot, vb.Cold, tenant, &vault.ScrubOptions{NoRepair: noRepair})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			corrupt := 0
			var failed error
			for _, r := range results {
				corrupt += len(r.Report.Corrupt)
				if r.Err != nil {
					failed = errors.Join(failed, fmt.Errorf("tenant %s: %w", r.Tenant, r.Err))
				}
			}
			if asJSON {
				type row struct {
					Tenant string            `json:"tenant"`
					JobID  string            `json:"job_id"`
					Report vault.ScrubReport `json:"report"`
					Error  string            `json:"error,omitempty"`
				}
				rows := []row{}
				for _, r := range results {
					rw := row{Tenant: r.Tenant, JobID: r.Job.GetId(), Report: r.Report}
					if r.Err != nil {
						rw.Error = r.Err.Error()
					}
					rows = append(rows, rw)
				}
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rows); err != nil {
					return err
				}
			} else {
				if len(results) == 0 {
					fmt.Fprintln(out, "no vault content in", dataDir)
				}
				for _, r := range results {
					rep := r.Report
					fmt.Fprintf(out, "%s: %d objects, %d verified, %s re-read, %d corrupt, %d repaired, %d orphaned files removed (job %s)\n",
						r.Tenant, rep.Objects, rep.Verified, bytesIEC(rep.Bytes), len(rep.Corrupt), len(rep.Repaired), rep.OrphanFiles, r.Job.GetId())
					for _, id := range rep.Corrupt {
						fmt.Fprintf(out, "  corrupt: %s\n", id)
					}
					if r.Err != nil {
						fmt.Fprintf(out, "  failed: %v\n", r.Err)
					}
				}
			}
			if failed != nil {
				return failed
			}
			if corrupt > 0 {
				return fmt.Errorf("%d objects are corrupt", corrupt)
			}
			return nil
		},
	}
	scrub.Flags().StringVar(&dataDir, "data", "", "data directory (default $XDG_DATA_HOME/svc or ~/.local/share/svc)")
	scrub.Flags().StringVar(&tenant, "tenant", "", "one tenant (test:usr_... or live:org_...); default every tenant with vault content")
	scrub.Flags().BoolVar(&noRepair, "no-repair", false, "only check and mark; do not rewrite bad copies from the other tier")
	scrub.Flags().BoolVar(&asJSON, "json", false, "print the reports as JSON")
	vaultStore.register(scrub.Flags())
	cmd.AddCommand(scrub, newReindexCmd(), newCoverageCmd(), newVaultSearchCmd())
	return cmd
}

func newReindexCmd() *cobra.Command {
	var dataDir, tenant string
	var asJSON bool
	var vaultStore vaultFlags
	cmd := &cobra.Command{
		Use:   "reindex",
		Short: "Rebuild the search index from the vault",
		Long: `Reindex rebuilds the search index of a data directory from its vault: every committed or
cold object's extracted text, message headers and metadata (docs/search.md). Each tenant's
rebuild is recorded as a job (kind index).

It works on a stopped server's data directory; a running svc serve keeps its index up to date
on its own, and builds it at start for tenants that have none.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dataDir == "" {
				dataDir = defaultDataDir()
			}
			vb, err := vaultStore.backends(cmd.Context())
			if err != nil {
				return err
			}
			results, err := svc.ReindexDataDir(cmd.Context(), dataDir, vb.Hot, vb.Cold, tenant)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			var failed error
			type row struct {
				Tenant  string `json:"tenant"`
				JobID   string `json:"job_id"`
				Indexed int    `json:"indexed"`
				Error   string `json:"error,omitempty"`
			}
			rows := []row{}
			for _, r := range results {
				rw := row{Tenant: r.Tenant, JobID: r.Job.GetId(), Indexed: r.Indexed}
				if r.Err != nil {
					rw.Error = r.Err.Error()
					failed = errors.Join(failed, fmt.Errorf("tenant %s: %w", r.Tenant, r.Err))
				}
				rows = append(rows, rw)
			}
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rows); err != nil {
					return err
				}
			} else {
				if len(rows) == 0 {
					fmt.Fprintln(out, "no vault content in", dataDir)
				}
				for _, r := range rows {
					fmt.Fprintf(out, "%s: %d objects indexed (job %s)\n", r.Tenant, r.Indexed, r.JobID)
					if r.Error != "" {
						fmt.Fprintf(out, "  failed: %s\n", r.Error)
					}
				}
			}
			return failed
		},
	}
	cmd.Flags().StringVar(&dataDir, "data", "", "data directory (default $XDG_DATA_HOME/svc or ~/.local/share/svc)")
	cmd.Flags().StringVar(&tenant, "tenant", "", "one tenant (test:usr_... or live:org_...); default every tenant with vault content")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the results as JSON")
	vaultStore.register(cmd.Flags())
	return cmd
}

func newCoverageCmd() *cobra.Command {
	var dataDir, tenant string
	var asJSON bool
	var vaultStore vaultFlags
	cmd := &cobra.Command{
		Use:   "coverage",
		Short: "How much of the vault was re-read from its disk and verified in the last 7, 30 and 90 days",
		Long: `Coverage reads every vault object's record of a data directory and says what share of the
objects and bytes was last re-read from the storage medium itself (not a cache) and verified
against its SHA-256 within 7, 30 and 90 days, how many never were, and how many are corrupt
(docs/vault.md). With --tenant, one tenant; otherwise all of them together.

It works on a stopped server's data directory; a running server answers GET /v1/vault/coverage.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dataDir == "" {
				dataDir = defaultDataDir()
			}
			vb, err := vaultStore.backends(cmd.Context())
			if err != nil {
				return err
			}
			v, st, err := svc.OpenStoppedVault(dataDir, vb.Hot, vb.Cold)
			if err != nil {
				return err
			}
			defer st.Close()
			defer v.Close()
			tenants := []string{tenant}
			if tenant == "" {
				if tenants, err = st.VaultTenants(cmd.Context()); err != nil {
					return err
				}
			}
			var all []vault.Coverage
			for _, tn := range tenants {
				cv, err := v.Coverage(cmd.Context(), tn)
				if err != nil {
					return fmt.Errorf("tenant %s: %w", tn, err)
				}
				all = append(all, cv)
			}
			cv := vault.CoverageOf(all...)
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(cv)
			}
			fmt.Fprintf(out, "%d objects, %d bytes in %d tenants\n", cv.Objects, cv.Bytes, len(tenants))
			for _, w := range cv.Windows {
				fmt.Fprintf(out, "verified within %2d days: %5.1f%% of objects, %5.1f%% of bytes\n", w.Days, 100*w.ObjectShare, 100*w.ByteShare)
			}
			fmt.Fprintf(out, "never verified from the disk: %d objects (%d bytes); corrupt: %d\n", cv.Never, cv.NeverBytes, cv.Corrupt)
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data", "", "data directory (default $XDG_DATA_HOME/svc)")
	cmd.Flags().StringVar(&tenant, "tenant", "", "one tenant (\"live:usr_...\"); default: all")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	vaultStore.register(cmd.Flags())
	return cmd
}
