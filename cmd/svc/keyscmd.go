package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"svc.dev/svc"
)

func newKeysCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Rotate the keys of a data directory",
	}
	var dataDir string
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
key, and the old keys stay published, so receipts already issued keep verifying.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dataDir == "" {
				dataDir = defaultDataDir()
			}
			out := cmd.OutOrStdout()
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
	cmd.AddCommand(rotate)
	return cmd
}
