package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"svc.dev/svc/migrate"
	"svc.dev/svc/storage/postgres"
)

func newMigrateCmd() *cobra.Command {
	var from, to string
	var force bool
	var vf vaultFlags
	cmd := &cobra.Command{
		Use:   "migrate --from DATA_DIR --to postgres://... [--vault-hot s3://... --vault-cold s3://...] [--force]",
		Short: "Copy a single-node data directory into a cluster's database and bucket, and check the copy",
		Long: `Migrate copies the data directory of a stopped single-node server (its bbolt svc.db, the
receipt signing keys and, with --vault-hot/--vault-cold, the local vault's files) into a
cluster's PostgreSQL database and S3-compatible bucket. Every record is then read back from
both sides and compared kind by kind (counts and a SHA-256 over the records' bytes), every
vault file is read back and its SHA-256 compared, and a summary is printed.

A target that holds any record, receipt key or vault file is refused unless --force is given
(records with the same keys are then replaced, others kept).

Sealed values move as they are: run the cluster with the data directory's master key
(SVC_MASTER_KEY set to the base64 of DATA_DIR/master.key, on every replica). The receipt keys
are sealed into the database under that key, so every replica signs with them and receipts
issued before keep verifying. A vault tier not given is not copied: it stays in
DATA_DIR/vault, which only a single process can serve. See docs/scale-out.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from == "" || to == "" {
				return fmt.Errorf("migrate: --from DATA_DIR and --to postgres://... are required")
			}
			ctx := cmd.Context()
			vb, err := vf.backends(ctx)
			if err != nil {
				return err
			}
			pg, err := postgres.Open(ctx, to)
			if err != nil {
				return fmt.Errorf("--to: %w", err)
			}
			defer pg.Close()
			out := cmd.OutOrStdout()
			rep, err := migrate.Run(ctx, migrate.Options{From: from, To: pg, VaultHot: vb.Hot, VaultCold: vb.Cold,
				Force: force, Progress: cmd.ErrOrStderr()})
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(out, 2, 8, 2, ' ', 0)
			fmt.Fprintln(tw, "KIND\tSOURCE\tTARGET\tSHA-256")
			for _, c := range rep.Counts {
				if c.Source == 0 && c.Target == 0 {
					continue
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", c.Kind, c.Source, c.Target, c.Hash[:16])
			}
			tw.Flush()
			for _, tier := range []string{"hot", "cold"} {
				if n, ok := rep.VaultFiles[tier]; ok {
					fmt.Fprintf(out, "vault %s tier: %d files, %d bytes copied, each read back and its SHA-256 checked\n", tier, n, rep.VaultBytes[tier])
				} else {
					fmt.Fprintf(out, "vault %s tier: not copied (stays in %s/vault/%s)\n", tier, from, tier)
				}
			}
			if rep.UsageLogDeltas > 0 {
				fmt.Fprintf(out, "usage log: %d pending increments added to the counters\n", rep.UsageLogDeltas)
			}
			if len(rep.ReceiptKeys) > 0 {
				fmt.Fprintf(out, "receipt keys: %d in the database, sealed under master key %s; %s signs\n", len(rep.ReceiptKeys), rep.KeyID, rep.ReceiptKeyCurrent)
			}
			fmt.Fprintf(out, "migrated and checked in %s. Run every replica with this data directory's master key (SVC_MASTER_KEY).\n", rep.Elapsed.Round(time.Millisecond))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "the data directory of a stopped single-node server")
	f.StringVar(&to, "to", "", "the cluster's PostgreSQL database (postgres://user@host:port/db)")
	f.BoolVar(&force, "force", false, "copy into a target that is not empty (records with the same keys are replaced)")
	vf.register(f)
	return cmd
}
