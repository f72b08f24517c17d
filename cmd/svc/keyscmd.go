package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
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

With --database postgres://... alone it rotates the master key of a cluster, whose replicas
must all be stopped: the current key comes from SVC_MASTER_KEY, the new one from
SVC_NEW_MASTER_KEY (32 bytes, base64; make it with: head -c32 /dev/urandom | base64), and
everything sealed in the database (vault data keys, configurations, webhook secrets, the
receipt key set) is moved to the new key. Running it again with the same keys finishes a run
that stopped midway. Then start every replica with SVC_MASTER_KEY set to the new key.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dataDir == "" {
				dataDir = defaultDataDir()
			}
			out := cmd.OutOrStdout()
			if database != "" {
				if !receipts {
					return rotateClusterMasterKey(cmd, dataDir, database)
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
	rotate.Flags().StringVar(&database, "database", "", "rotate the keys of the cluster on this PostgreSQL database (the master key, replicas stopped; with --receipts the receipt signing key, replicas running)")
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

// newMasterKeyEnv names the environment variable that holds the new master key of a cluster's
// rotation.
const newMasterKeyEnv = "SVC_NEW_MASTER_KEY"

// rotateClusterMasterKey rotates the master key of the cluster on database.
func rotateClusterMasterKey(cmd *cobra.Command, dataDir, database string) error {
	ctx := cmd.Context()
	if os.Getenv(svc.MasterKeyEnv) == "" {
		return fmt.Errorf("the cluster's current master key must be in %s", svc.MasterKeyEnv)
	}
	oldKey, err := svc.ExistingMasterKey(dataDir)
	if err != nil {
		return err
	}
	newKey, err := base64.StdEncoding.DecodeString(strings.TrimSpace(os.Getenv(newMasterKeyEnv)))
	if err != nil || len(newKey) != 32 {
		return fmt.Errorf("%s: want the new master key, 32 bytes in base64 (make one with: head -c32 /dev/urandom | base64)", newMasterKeyEnv)
	}
	if bytes.Equal(oldKey, newKey) {
		return fmt.Errorf("%s is the current key: give a new one", newMasterKeyEnv)
	}
	pg, err := postgres.Open(ctx, database)
	if err != nil {
		return fmt.Errorf("--database: %w", err)
	}
	defer pg.Close()
	rep, err := svc.RotateStoreMasterKey(ctx, pg, oldKey, newKey)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "master key rotated in the database: %d vault data keys re-wrapped (%d already), %d secrets re-sealed; start every replica with %s set to the new key\n",
		rep.Vault.Rewrapped, rep.Vault.Already, rep.Secrets, svc.MasterKeyEnv)
	return nil
}
