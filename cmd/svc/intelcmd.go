package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"svc.dev/svc/intel"
	"svc.dev/svc/internal/intelcorpus"
)

// newIntelCmd returns "svc intel": billing traps and trials found in mail files, without a
// server (docs/intel.md).
func newIntelCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "intel", Short: "Find billing traps (meters) and trials in mail files"}
	cmd.AddCommand(newIntelScanCmd(), newIntelBenchCmd())
	return cmd
}

func newIntelScanCmd() *cobra.Command {
	var asOf string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "scan PATH...",
		Short: "Scan mbox files, Maildirs or folders of .eml files for meters and trials",
		Long: `Scan reads every message under each PATH (an mbox file, a Maildir, a folder of .eml
files, at any depth) and prints the meters (one per recurring paid service, with the billing
trap found) and trials its mail shows. No server is needed. --as-of fixes "now" (RFC 3339) so a
scan is reproducible: mail dated after it is ignored. Messages that cannot be read are skipped;
their count and reasons go to stderr.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			now := time.Now().UTC()
			if asOf != "" {
				t, err := time.Parse(time.RFC3339, asOf)
				if err != nil {
					return fmt.Errorf("--as-of: %w", err)
				}
				now = t.UTC()
			}
			s := intel.NewScanner(nil)
			for _, p := range args {
				if err := s.ScanPath(p); err != nil {
					return err
				}
			}
			res := s.Result(now)
			reportSkips(c.ErrOrStderr(), s)
			if asJSON {
				enc := json.NewEncoder(c.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			printIntel(c.OutOrStdout(), res)
			return nil
		},
	}
	cmd.Flags().StringVar(&asOf, "as-of", "", "the time the scan is as of (RFC 3339; default now)")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"asOf","meters","trials"} as JSON`)
	return cmd
}

// reportSkips writes how many messages were skipped and why, most common reason first.
func reportSkips(w io.Writer, s *intel.Scanner) {
	st := s.Stats()
	if st.Skipped == 0 {
		return
	}
	fmt.Fprintf(w, "skipped %d of %d messages:\n", st.Skipped, st.Messages)
	count := map[string]int{}
	example := map[string]string{}
	for _, k := range s.Skipped() {
		count[k.Reason]++
		if example[k.Reason] == "" {
			example[k.Reason] = k.Ref
		}
	}
	reasons := make([]string, 0, len(count))
	for r := range count {
		reasons = append(reasons, r)
	}
	slices.SortFunc(reasons, func(a, b string) int {
		if count[a] != count[b] {
			return count[b] - count[a]
		}
		return strings.Compare(a, b)
	})
	for _, r := range reasons {
		fmt.Fprintf(w, "  %d  %s (e.g. %s)\n", count[r], r, example[r])
	}
}

func cents(p *int64) string {
	if p == nil {
		return "-"
	}
	c := *p
	sign := ""
	if c < 0 {
		sign, c = "-", -c
	}
	return fmt.Sprintf("%s%d.%02d", sign, c/100, c%100)
}

func printIntel(w io.Writer, res intel.Result) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "METERS as of %s\n", res.AsOf.Format(time.RFC3339))
	fmt.Fprintln(tw, "SERVICE\tDOMAIN\tPERIOD\tCURRENT\tPREVIOUS\tPROJECTED\tTRAP\tEVIDENCE\tCONFIDENCE\tDRIVER")
	for _, m := range res.Meters {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%s\n", m.Service, orDash(m.ServiceDomain), m.BillingPeriod,
			cents(m.CurrentPeriodCostCents), cents(m.PreviousPeriodCostCents), cents(m.ProjectedPeriodCostCents), m.TrapType, m.EvidenceLevel, m.Confidence, m.PrimaryDriver)
	}
	fmt.Fprintf(tw, "\nTRIALS\n")
	fmt.Fprintln(tw, "SERVICE\tDOMAIN\tSTARTED\tENDS\tCADENCE\tPRICE AFTER\tSTATUS\tWORTH IT")
	for _, t := range res.Trials {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Service, orDash(t.ServiceDomain), day(t.StartedAt), day(t.EndsAt), t.Cadence,
			cents(t.PriceAfterTrialCents), t.Status, t.WorthIt.Verdict+": "+strings.Join(t.WorthIt.Reasons, "; "))
	}
	tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func day(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format("2006-01-02")
}

// newIntelBenchCmd returns the hidden "svc intel bench": quality of the detectors on the
// labelled synthetic mailbox, and, with --speed, scanning speed and memory against a
// parse-only pass over the same mbox.
func newIntelBenchCmd() *cobra.Command {
	var seed uint64
	var services, noise, speed, rounds int
	var verbose bool
	var write string
	cmd := &cobra.Command{
		Use:    "bench",
		Short:  "Measure the intel detectors on the labelled synthetic mailbox",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			out := c.OutOrStdout()
			asOf := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
			corp := intelcorpus.Generate(seed, services, noise, asOf)
			if write != "" {
				// The labelled mailbox for people and other tools: an mbox and its labels.
				if err := os.MkdirAll(write, 0o755); err != nil {
					return err
				}
				if _, err := intelcorpus.WriteMbox(filepath.Join(write, "corpus.mbox"), corp, len(corp.Messages)); err != nil {
					return err
				}
				b, err := json.MarshalIndent(map[string]any{"asOf": asOf, "services": corp.Services, "trials": corp.Trials}, "", "  ")
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(write, "labels.json"), b, 0o644); err != nil {
					return err
				}
				fmt.Fprintf(out, "wrote %d messages to %s and their labels to %s\n", len(corp.Messages), filepath.Join(write, "corpus.mbox"), filepath.Join(write, "labels.json"))
				return nil
			}
			dir, err := os.MkdirTemp("", "svc-intel-bench-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			box := filepath.Join(dir, "corpus.mbox")
			n := len(corp.Messages)
			if speed > 0 {
				n = speed
			}
			size, err := intelcorpus.WriteMbox(box, corp, n)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "corpus: seed %d, %d services, %d messages (%d of them noise); scanned as an mbox of %d messages, %.1f MB\n\n",
				seed, services, len(corp.Messages), noise, n, float64(size)/1e6)
			if speed > 0 {
				prev := runtime.GOMAXPROCS(1)
				defer runtime.GOMAXPROCS(prev)
				// The passes alternate, twice each, and the faster of each is kept: on a
				// shared machine one pass can be slowed by others' work.
				var parse, scan intelcorpus.Pass
				for range rounds {
					p, err := intelcorpus.ParseOnly(box)
					if err != nil {
						return err
					}
					q, _, err := intelcorpus.Scan(box, asOf)
					if err != nil {
						return err
					}
					if parse.Messages == 0 || p.CPURate() > parse.CPURate() {
						parse = p
					}
					if scan.Messages == 0 || q.CPURate() > scan.CPURate() {
						scan = q
					}
				}
				fmt.Fprintf(out, "speed on one core (GOMAXPROCS=1), %d messages, the fastest (in CPU time) of %d alternating runs of each:\n", n, rounds)
				fmt.Fprintf(out, "  parse-only (go-message walks and reads every part): %8.0f msg/s wall, %8.0f msg/s CPU  peak heap %6.1f MB\n", parse.Rate(), parse.CPURate(), float64(parse.PeakHeap)/1e6)
				fmt.Fprintf(out, "  intel scan (read, extract, meters and trials):     %8.0f msg/s wall, %8.0f msg/s CPU  peak heap %6.1f MB\n", scan.Rate(), scan.CPURate(), float64(scan.PeakHeap)/1e6)
				fmt.Fprintf(out, "  scan / parse-only: %.2f (wall), %.2f (CPU time)\n", scan.Rate()/parse.Rate(), scan.CPURate()/parse.CPURate())
				return nil
			}
			_, res, err := intelcorpus.Scan(box, asOf)
			if err != nil {
				return err
			}
			r := intelcorpus.Evaluate(corp, res)
			r.Print(out)
			if verbose {
				fmt.Fprintln(out)
				for _, m := range r.Misses {
					fmt.Fprintln(out, "miss:", m)
				}
			}
			return nil
		},
	}
	cmd.Flags().Uint64Var(&seed, "seed", 7, "generator seed")
	cmd.Flags().IntVar(&services, "services", 460, "services in the corpus (scenarios in turn)")
	cmd.Flags().IntVar(&noise, "noise", 10000, "noise messages (newsletters, spam, lists, orders, bank mail, ...)")
	cmd.Flags().IntVar(&speed, "speed", 0, "measure speed over this many messages instead of quality")
	cmd.Flags().IntVar(&rounds, "rounds", 2, "with --speed, alternating runs of each pass (the fastest is kept)")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "list what went wrong")
	cmd.Flags().StringVar(&write, "write", "", "write the labelled mailbox (corpus.mbox, labels.json) to this directory instead of measuring")
	return cmd
}
