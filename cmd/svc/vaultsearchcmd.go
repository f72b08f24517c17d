package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"svc.dev/svc/client"
	svcv1 "svc.dev/svc/gen/svc/v1"
)

// newVaultSearchCmd returns "svc vault search QUERY": search the vaulted content on a running
// server (words, "phrases", -word, field:value; docs/search.md), newest first.
func newVaultSearchCmd() *cobra.Command {
	var cf clientFlags
	var limit int
	cmd := &cobra.Command{
		Use:   "search QUERY",
		Short: "Search the vault of a running server (words, \"phrases\", -word, field:value)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.resolveClient()
			if err != nil {
				return err
			}
			req := &svcv1.SearchVaultRequest{Q: args[0], Limit: proto.Int32(int32(min(max(limit, 1), 200)))}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "VAULT OBJECT\tSIZE\tCREATED\tNAME\tSNIPPET")
			n := 0
			for h, err := range client.All[*svcv1.SearchHit](cmd.Context(), c.Vault.SearchVault, req) {
				if err != nil {
					return explain(err)
				}
				o := h.GetVaultObject()
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", o.GetId(), bytesIEC(o.GetSizeBytes()), o.GetCreatedAt().AsTime().Format("2006-01-02"),
					o.GetName(), oneLine(h.GetSnippet(), 60))
				if n++; limit > 0 && n == limit {
					break
				}
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\n", plural(n, "hit"))
			return nil
		},
	}
	cf.register(cmd)
	cmd.Flags().IntVar(&limit, "limit", 20, "show at most this many hits (0: all, page by page)")
	return cmd
}

// oneLine shortens s to one line of at most n runes.
func oneLine(s string, n int) string {
	r := []rune(s)
	for i, c := range r {
		if c == '\n' || c == '\r' || c == '\t' {
			r[i] = ' '
		}
	}
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return string(r)
}
