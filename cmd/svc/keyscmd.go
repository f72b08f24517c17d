package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"svc.dev/svc"
	"svc.dev/svc/platform"
	"svc.dev/svc/storage/postgres"
)

func newKeysCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Rotate the keys of a data directory",
	}
	var dataDir, database string
	var receipts bool
	rotate := &cobra.Command{
		Use:   "rotate",
		Short: "Replace the master key (re-wrapping every vault data key, re-sealing every secret), or the receipt signing key",
		Long: `Rotate replaces the master key of a stopped server's data directory: a new key is written
beside the old one (master.key.next), every tenant's vault data key is re-wrapped under the new
key-encryption key, and every sealed secret (source and destination configurations, webhook
signing secrets) is sealed again; then the new key takes the old one's place and the old one is
kept as master.key.previous. A crash at any point loses nothing: svc serve refuses the
directory while a rotation is pending, and running this again finishes it. Cursors and signed
export URLs issued before stop working.

With --receipts it rotates the receipt signing key instead: new receipts are signed with a new
key, and the old keys stay published, so receipts already issued keep verifying.

With --receipts --database postgres://... it rotates the receipt signing key that the replicas
of a cluster share, while they run: the new key is stored in the database (sealed under the
master key, which must come from SVC_MASTER_KEY or the data directory's key file), every
replica publishes it within 30 seconds, and it signs from 2 minutes after the rotation on.
The master key of a cluster is not rotated here (docs/scale-out.md says how).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dataDir == "" {
				dataDir = defaultDataDir()
			}
			out := cmd.OutOrStdout()
			if database != "" {
				if !receipts {
					return fmt.Errorf("--database rotates only the receipt signing key (with --receipts): see docs/scale-out.md for the master key of a cluster")
				}
				return rotateSharedReceiptKey(cmd, dataDir, database)
			}
			if receipts {
				kid, err := svc.RotateReceiptKey(cmd.Context(), dataDir)
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "receipts are now signed with key %s; the old keys stay published\n", kid)
				return nil
			}
			rep, err := svc.RotateMasterKey(cmd.Context(), dataDir)
			if err != nil {
				return err
			}
			if rep.Resumed {
				fmt.Fprintln(out, "finished the rotation an earlier run began")
			}
			fmt.Fprintf(out, "master key rotated: %d vault data keys re-wrapped (%d already), %d secrets re-sealed; the previous key is %s%s\n",
				rep.Vault.Rewrapped, rep.Vault.Already, rep.Secrets, svc.MasterKeyFile, svc.PreviousKeySuffix)
			return nil
		},
	}
	rotate.Flags().StringVar(&dataDir, "data", "", "data directory (default $XDG_DATA_HOME/svc or ~/.local/share/svc)")
	rotate.Flags().BoolVar(&receipts, "receipts", false, "rotate the receipt signing key instead of the master key")
	rotate.Flags().StringVar(&database, "database", "", "with --receipts: rotate the receipt signing key a cluster's replicas share in this PostgreSQL database")
	cmd.AddCommand(rotate)
	return cmd
}

// rotateSharedReceiptKey rotates the receipt signing key kept in a cluster's database.
func rotateSharedReceiptKey(cmd *cobra.Command, dataDir, database string) error {
	ctx := cmd.Context()
	master, err := svc.ExistingMasterKey(dataDir)
	if err != nil {
		return err
	}
	env, err := platform.NewLocalEnvelope(master)
	if err != nil {
		return err
	}
	pg, err := postgres.Open(ctx, database)
	if err != nil {
		return fmt.Errorf("--database: %w", err)
	}
	defer pg.Close()
	kid, err := svc.RotateSharedReceiptKey(ctx, pg, env)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "receipt key %s is published now (each replica loads it within %s) and signs from %s on; the old keys stay published\n",
		kid, svc.ReceiptKeyReload, time.Now().Add(svc.ReceiptKeyActivation).UTC().Format(time.RFC3339))
	return nil
}
