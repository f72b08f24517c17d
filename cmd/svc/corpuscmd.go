package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/internal/corpus"
	"svc.dev/svc/mail"
	"svc.dev/svc/plan"
	"svc.dev/svc/plan/discover"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/local"
)

// corpusEpoch dates the generated corpus, so runs are comparable.
var corpusEpoch = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// newCorpusCmd returns "svc corpus": the labelled mail corpus and the classification bench
// (docs/plans.md, "Measuring the classes").
func newCorpusCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "corpus", Short: "Generate the labelled mail corpus and measure classification on it"}
	var n int
	var seed uint64
	gen := &cobra.Command{
		Use:   "generate DIR",
		Short: "Write the labelled corpus as Maildirs (INBOX, Sent, Junk) and DIR/labels.tsv",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			msgs := corpus.Generate(seed, n, corpusEpoch)
			labels, err := corpus.WriteMaildir(args[0], msgs)
			if err != nil {
				return err
			}
			f, err := os.Create(args[0] + "/labels.tsv")
			if err != nil {
				return err
			}
			defer f.Close()
			ids := make([]string, 0, len(labels))
			for id := range labels {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			for _, id := range ids {
				fmt.Fprintf(f, "%s\t%s\t%s\n", id, labels[id].Label, labels[id].Kind)
			}
			fmt.Fprintf(c.OutOrStdout(), "wrote %d messages to %s\n", len(msgs), args[0])
			return f.Close()
		},
	}
	var timing, explain int
	var labels, spamdAddr string
	bench := &cobra.Command{
		Use:   "bench [--labels FILE PATH]",
		Short: "Plan over the generated corpus, or a labelled Maildir or mbox tree, and print what plans would remove",
		Long: `Without --labels: generates the labelled corpus, plans over it and prints per-class precision
and recall, what plans would trash, and planning time.

With --labels FILE PATH: lists PATH (Maildirs and mbox files, as vendor_d_local lists them), plans
over it and prints per source and label the share of messages each plan would remove, against the
targets (discussion and transactional <= 5%, junk >= 60%), and how many removable messages have
conversation evidence (target 0). FILE has one line per message: ID<TAB>LABEL[<TAB>SOURCE].`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if labels != "" {
				if len(args) != 1 {
					return fmt.Errorf("--labels needs the PATH of the Maildir or mbox tree")
				}
				return runRealBench(c.Context(), c.OutOrStdout(), labels, args[0], explain, spamdAddr)
			}
			if len(args) > 0 {
				return fmt.Errorf("PATH needs --labels")
			}
			return runCorpusBench(c.Context(), c.OutOrStdout(), seed, n, timing, explain)
		},
	}
	bench.Flags().StringVar(&spamdAddr, "spamd", "", "with --labels: ask SpamAssassin's spamd at HOST:PORT (the spamc protocol) for a verdict on every message (about 6 messages/s)")
	bench.Flags().StringVar(&labels, "labels", "", "labels file for a real mailbox at PATH (ID<TAB>LABEL[<TAB>SOURCE] a line)")
	for _, sub := range []*cobra.Command{gen, bench} {
		sub.Flags().IntVar(&n, "n", 6000, "messages")
		sub.Flags().Uint64Var(&seed, "seed", 1, "generator seed")
	}
	bench.Flags().IntVar(&explain, "explain", 0, "print the N most common wrong classes with their reasons")
	bench.Flags().IntVar(&timing, "timing", 20000, "messages in the Maildir planning is timed over (0: skip)")
	cmd.AddCommand(gen, bench)
	return cmd
}

// benchPolicies are the plans measured: the default, and the most removing a person can ask for.
var benchPolicies = []struct {
	name string
	pol  *svcv1.SourcePolicy
}{
	{"default policy", &svcv1.SourcePolicy{}},
	{"removePromotional", &svcv1.SourcePolicy{RemovePromotional: proto.Bool(true)}},
	{"removePromotional, minAgeDays 30", &svcv1.SourcePolicy{RemovePromotional: proto.Bool(true), MinAgeDays: proto.Int64(30)}},
}

func corpusMaildir(ctx context.Context, seed uint64, n int) (providers.Provider, map[string]corpus.Message, func(), error) {
	dir, err := os.MkdirTemp("", "svc-corpus-")
	if err != nil {
		return nil, nil, nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	labels, err := corpus.WriteMaildir(dir+"/mail", corpus.Generate(seed, n, corpusEpoch))
	if err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	p, err := local.New(ctx, providers.Config{"root": dir + "/mail", "trash_dir": dir + "/trash"})
	if err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	return p, labels, cleanup, nil
}

func corpusPlan(ctx context.Context, objs plan.Objects, pol *svcv1.SourcePolicy) (*svcv1.Plan, error) {
	return plan.Build(ctx, plan.Request{TenantID: "test:usr_01JD0000000000000000000000", UserID: "usr_01JD0000000000000000000000",
		Actor:  &svcv1.Actor{Type: svcv1.ActorType_ACTOR_TYPE_USER, PrincipalId: "usr_01JD0000000000000000000000"},
		Intent: svcv1.PlanIntent_PLAN_INTENT_SVC, PreservationRequired: true, Now: corpusEpoch, Policy: pol,
		Sources: []plan.Source{{ID: "src_01JD0000000000000000000000", Provider: svcv1.Provider_PROVIDER_VENDOR_D_LOCAL,
			Status: svcv1.SourceStatus_SOURCE_STATUS_CONNECTED, CanTrash: true, Objects: objs}}})
}

func runCorpusBench(ctx context.Context, w io.Writer, seed uint64, n, timing, explain int) error {
	p, labels, cleanup, err := corpusMaildir(ctx, seed, n)
	if err != nil {
		return err
	}
	defer cleanup()
	fmt.Fprintf(w, "Corpus: %d messages, seed %d, listed by vendor_d_local from Maildirs, planned with intent svc\n", n, seed)
	worst := map[corpus.Label]float64{}
	minRemoval := 1.0
	var first *corpus.Score
	for _, bp := range benchPolicies {
		pl, err := corpusPlan(ctx, discover.Objects(p, ""), bp.pol)
		if err != nil {
			return err
		}
		outs := make([]corpus.Outcome, 0, len(pl.Objects))
		for _, o := range pl.Objects {
			m, ok := labels[o.ProviderObjectId]
			if !ok {
				return fmt.Errorf("plan object %q is not in the corpus", o.ProviderObjectId)
			}
			outs = append(outs, corpus.Outcome{Label: m.Label, Class: enumName(o.StorageClass), Trashed: slices.Contains(o.Actions, svcv1.PlanAction_PLAN_ACTION_TRASH)})
		}
		if len(outs) != len(labels) {
			return fmt.Errorf("plan has %d objects for %d messages (%d excluded)", len(outs), len(labels), len(pl.Excluded))
		}
		s := corpus.Tally(outs)
		fmt.Fprintf(w, "\n== %s\n", bp.name)
		s.Print(w)
		if explain > 0 && bp.name == "removePromotional" {
			misses := map[string]int{}
			for _, o := range pl.Objects {
				m := labels[o.ProviderObjectId]
				if want := corpus.Expected[m.Label]; want != "" && want != enumName(o.StorageClass) {
					key := fmt.Sprintf("%s/%s -> %s: %s", m.Label, m.Kind, enumName(o.StorageClass), o.StorageClassReason)
					if explain > 100 { // and an example subject
						key += "  [" + mail.Read(bytes.NewReader(m.Raw)).Subject + "]"
					}
					misses[key]++
				}
			}
			keys := sortedKeys(misses)
			slices.SortStableFunc(keys, func(a, b string) int { return misses[b] - misses[a] })
			fmt.Fprintln(w, "most common wrong classes:")
			for _, k := range keys[:min(explain, len(keys))] {
				fmt.Fprintf(w, "  %5d  %s\n", misses[k], k)
			}
		}
		fmt.Fprintf(w, "removal precision (trashed that may be trashed): %.4f of %d trashed\n", s.RemovalPrecision(), s.TrashedAll)
		for _, l := range corpus.Labels {
			worst[l] = max(worst[l], s.TrashedShare(l))
		}
		minRemoval = min(minRemoval, s.RemovalPrecision())
		if first == nil || bp.name == "removePromotional" {
			first = s
		}
	}
	s := first
	fmt.Fprintf(w, "\n== Targets (classes from the removePromotional plan; removal over every plan above)\n")
	check := func(name string, v, target float64, atLeast bool) {
		ok := v >= target
		if !atLeast {
			ok = v <= target
		}
		verdict := "MET"
		if !ok {
			verdict = "MISSED"
		}
		op := ">="
		if !atLeast {
			op = "<="
		}
		fmt.Fprintf(w, "  %-58s %.4f  (target %s %.2f)  %s\n", name, v, op, target, verdict)
	}
	check("precision of likely_removable (junk)", s.Precision(corpus.Junk), 0.97, true)
	check("precision of promotional (marketing)", s.Precision(corpus.Marketing), 0.97, true)
	check("removal precision, worst plan", minRemoval, 0.97, true)
	check("conversations trashed, worst plan", worst[corpus.Conversation], 0.01, false)
	check("transactional trashed, worst plan", worst[corpus.Transactional], 0.01, false)
	check("recall of junk", s.Recall(corpus.Junk), 0.80, true)
	check("recall of marketing", s.Recall(corpus.Marketing), 0.80, true)

	if timing > 0 {
		return benchPlanningTime(ctx, w, seed, timing)
	}
	return nil
}

// benchPlanningTime times, over one Maildir, listing alone, planning without mail
// classification (messages planned as plain files: the general rules only) and planning with it.
func benchPlanningTime(ctx context.Context, w io.Writer, seed uint64, n int) error {
	p, _, cleanup, err := corpusMaildir(ctx, seed+1, n)
	if err != nil {
		return err
	}
	defer cleanup()
	pol := &svcv1.SourcePolicy{RemovePromotional: proto.Bool(true)}
	measure := func(f func() error) (time.Duration, error) {
		var ds []time.Duration
		for range 3 {
			start := time.Now()
			if err := f(); err != nil {
				return 0, err
			}
			ds = append(ds, time.Since(start))
		}
		slices.Sort(ds)
		return ds[1], nil
	}
	list, err := measure(func() error {
		l := discover.Objects(p, "")
		for {
			pg, err := l.Next(ctx)
			if err != nil || pg.Last {
				return err
			}
		}
	})
	if err != nil {
		return err
	}
	without, err := measure(func() error {
		_, err := corpusPlan(ctx, unclassified{discover.Objects(p, "")}, pol)
		return err
	})
	if err != nil {
		return err
	}
	with, err := measure(func() error {
		_, err := corpusPlan(ctx, discover.Objects(p, ""), pol)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\n== Planning time over a Maildir of %d messages (median of 3, in process)\n", n)
	fmt.Fprintf(w, "  list only (mail reader included)      %8.3f s  %7.0f messages/s\n", list.Seconds(), float64(n)/list.Seconds())
	fmt.Fprintf(w, "  plan without mail classification      %8.3f s\n", without.Seconds())
	fmt.Fprintf(w, "  plan with mail classification         %8.3f s\n", with.Seconds())
	verdict := "MET"
	if r := with.Seconds() / without.Seconds(); r > 1.5 {
		verdict = "MISSED"
	}
	fmt.Fprintf(w, "  classification factor                 %8.2fx  (target <= 1.5x)  %s\n", with.Seconds()/without.Seconds(), verdict)
	return nil
}

// unclassified is a listing whose messages are planned as plain files: planning without mail
// classification, the baseline of the timing.
type unclassified struct{ plan.Objects }

func (u unclassified) Next(ctx context.Context) (plan.Page, error) {
	pg, err := u.Objects.Next(ctx)
	for i := range pg.Objects {
		if pg.Objects[i].Kind == "message" {
			pg.Objects[i].Kind = "file"
		}
	}
	return pg, err
}
