package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"svc.dev/svc/creator"
	"svc.dev/svc/creator/synthetic"
)

// newCreatorCmd is creator revenue without a server: scan statements and mail, and measure the
// pipeline on synthetic creators.
func newCreatorCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "creator", Short: "Reconcile creator revenue from statements and payout mail (no server)"}
	cmd.AddCommand(newCreatorScanCmd(), newCreatorBenchCmd())
	return cmd
}

func newCreatorScanCmd() *cobra.Command {
	var (
		mboxes, maildirs, self []string
		statements, asOf, home string
		asJSON                 bool
	)
	cmd := &cobra.Command{
		Use:   "scan [--mbox FILE]... [--maildir DIR]... [--statements DIR] [--as-of RFC3339] [--json]",
		Short: "Reconcile revenue items and find anomalies in CSV statements and payout, remittance and invoice mail",
		Long: "scan reads CSV statements (a directory; terms*.csv holds published or contracted terms) and\n" +
			"mailboxes, makes one source per platform or sponsor, reconciles one revenue item per source and\n" +
			"earning period (one per sponsor invoice) and finds anomalies across periods. Files or rows it\n" +
			"cannot use are reported on stderr with the reason.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in := creator.ScanInput{Statements: statements, Mail: append(append([]string(nil), mboxes...), maildirs...), Home: home, Self: self}
			if asOf != "" {
				t, err := time.Parse(time.RFC3339, asOf)
				if err != nil {
					return fmt.Errorf("--as-of %q: want RFC 3339, as 2026-11-20T00:00:00Z", asOf)
				}
				in.AsOf = t.UTC()
			}
			if statements == "" && len(in.Mail) == 0 {
				return fmt.Errorf("nothing to scan: give --statements, --mbox or --maildir")
			}
			res, err := creator.Scan(cmd.Context(), in)
			if err != nil {
				return err
			}
			for _, p := range res.Problems {
				fmt.Fprintln(cmd.ErrOrStderr(), "creator scan:", p)
			}
			if asJSON {
				if res.Items == nil {
					res.Items = []*creator.Item{}
				}
				if res.Anomalies == nil {
					res.Anomalies = []*creator.Anomaly{}
				}
				if res.Sources == nil {
					res.Sources = []creator.ScanSource{}
				}
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			printScan(cmd.OutOrStdout(), res)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&mboxes, "mbox", nil, "an mbox file of payout, statement, remittance and invoice mail (repeatable)")
	f.StringArrayVar(&maildirs, "maildir", nil, "a Maildir (or a directory of .eml files) (repeatable)")
	f.StringVar(&statements, "statements", "", "a directory of CSV statements")
	f.StringVar(&asOf, "as-of", "", "the moment to reconcile as of (RFC 3339; default now): later mail is ignored")
	f.StringVar(&home, "home-currency", "USD", "the currency foreign payouts are converted to")
	f.StringArrayVar(&self, "self", nil, "the creator's own address or domain (default: the address most mail was sent to)")
	f.BoolVar(&asJSON, "json", false, `print {"asOf","sources","items","anomalies"} as JSON`)
	return cmd
}

func revenueCents(cur string, c *int64) string {
	if c == nil {
		return "-"
	}
	v := *c
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	s := fmt.Sprintf("%d", v/100)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return fmt.Sprintf("%s%s %s.%02d", sign, cur, s, v%100)
}

// printScan writes a readable summary per source: its items and its anomalies.
func printScan(w io.Writer, res *creator.ScanResult) {
	fmt.Fprintf(w, "as of %s: %d sources, %d revenue items, %d anomalies\n", res.AsOf.Format(time.RFC3339), len(res.Sources), len(res.Items), len(res.Anomalies))
	items := map[string][]*creator.Item{}
	for _, it := range res.Items {
		items[it.CreatorSourceID] = append(items[it.CreatorSourceID], it)
	}
	anoms := map[string][]*creator.Anomaly{}
	for _, a := range res.Anomalies {
		anoms[a.CreatorSourceID] = append(anoms[a.CreatorSourceID], a)
	}
	for _, s := range res.Sources {
		dom := s.Domain
		if dom == "" {
			dom = "no domain"
		}
		fmt.Fprintf(w, "\n%s (%s, %s) %s\n", s.Label, s.Kind, dom, s.ID)
		its := items[s.ID]
		sort.Slice(its, func(i, j int) bool {
			if its[i].Period.Label != its[j].Period.Label {
				return its[i].Period.Label < its[j].Period.Label
			}
			return its[i].Invoice < its[j].Invoice
		})
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  PERIOD\tEXPECTED\tREPORTED\tSCHEDULED\tSETTLED\tVARIANCE\tSTATE\tEVIDENCE")
		for _, it := range its {
			label := it.Period.Label
			if it.Invoice != "" {
				label = it.Invoice
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", label, revenueCents(it.Currency, it.ExpectedCents), revenueCents(it.Currency, it.ReportedCents),
				revenueCents(it.Currency, it.ScheduledCents), revenueCents(it.Currency, it.SettledCents), revenueCents(it.Currency, it.VarianceCents), it.State, it.EvidenceLevel)
		}
		tw.Flush()
		as := anoms[s.ID]
		sort.Slice(as, func(i, j int) bool { return as[i].Period < as[j].Period })
		for _, a := range as {
			status := string(a.Status)
			if a.Resolution != "" {
				status += ": " + a.Resolution
			}
			fmt.Fprintf(w, "  ! [%s] %s (%s, %s) %s\n    %s\n", a.Severity, a.Language, a.Kind, status, a.Period, a.Detail)
		}
	}
	if len(res.Problems) > 0 {
		fmt.Fprintf(w, "\n%d problems (see stderr): %s\n", len(res.Problems), strings.Join(res.Problems[:min(3, len(res.Problems))], "; "))
	}
}

func newCreatorBenchCmd() *cobra.Command {
	var (
		seed   uint64
		n      int
		errors bool
	)
	cmd := &cobra.Command{
		Use:   "bench [--seed N] [--creators N]",
		Short: "Measure the creator pipeline on labelled synthetic creators: per-anomaly-kind precision and recall, exact cents",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := synthetic.Run(cmd.Context(), seed, n)
			if err != nil {
				return err
			}
			s.Print(cmd.OutOrStdout())
			if errors {
				for _, e := range s.Errors {
					fmt.Fprintln(cmd.OutOrStdout(), e)
				}
			}
			return nil
		},
	}
	cmd.Flags().Uint64Var(&seed, "seed", 1, "the first synthetic creator's seed")
	cmd.Flags().IntVar(&n, "creators", 50, "how many synthetic creators (seeds seed..seed+creators-1)")
	cmd.Flags().BoolVar(&errors, "errors", false, "also list every miss, false finding and wrong amount")
	return cmd
}
