package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/mail"
	"svc.dev/svc/plan"
	"svc.dev/svc/plan/discover"
	"svc.dev/svc/plan/spamc"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/local"
)

// readLabels reads a labels file: one message a line, "ID<TAB>LABEL[<TAB>SOURCE]", where ID is
// the id vendor_d_local lists the message under (a Maildir's "DIR/UNIQUE", an mbox's
// "FILE#OFFSET") and SOURCE defaults to the id's first path element. Blank lines and lines
// starting with # are skipped.
func readLabels(name string) (map[string][2]string, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string][2]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) < 2 || cols[0] == "" || cols[1] == "" {
			return nil, fmt.Errorf("%s:%d: want ID<TAB>LABEL[<TAB>SOURCE]", name, n)
		}
		src := cols[0]
		if i := strings.IndexAny(src, "/#"); i > 0 {
			src = src[:i]
		}
		if len(cols) > 2 && cols[2] != "" {
			src = cols[2]
		}
		out[cols[0]] = [2]string{cols[1], src}
	}
	return out, sc.Err()
}

// evidenceCheck decides, independently of the plan's classifier, whether the mailbox shows a
// message is a conversation the owner is part of: it is in a sent folder; it answers or shares a
// thread with the owner's sent mail; its sender is an address the owner sent from or to; or it
// came through a discussion list (a List-Id, or X-Mailing-List, with the list's own headers: a
// List-Post that takes posts by mail, or a list manager's). A newsletter's List-Id with a web
// List-Post is not one. The bench counts removable messages it finds evidence for: the target
// is 0.
type evidenceCheck struct {
	own, known, threads map[string]bool
}

func isSentFolder(containers []string) bool {
	for _, c := range containers {
		c = strings.ToLower(c)
		for _, part := range strings.FieldsFunc(c, func(r rune) bool { return r == '/' || r == '.' }) {
			if part == "sent" || strings.HasPrefix(part, "sent ") || part == "gesendet" || part == "enviados" {
				return true
			}
		}
	}
	return false
}

func lowAddr(a string) string {
	a = strings.ToLower(strings.TrimSpace(a))
	if i := strings.LastIndexByte(a, '<'); i >= 0 {
		a = strings.TrimSuffix(a[i+1:], ">")
	}
	return a
}

func newEvidenceCheck(ctx context.Context, objs plan.Objects) (*evidenceCheck, error) {
	e := &evidenceCheck{own: map[string]bool{}, known: map[string]bool{}, threads: map[string]bool{}}
	for {
		pg, err := objs.Next(ctx)
		if err != nil {
			return nil, err
		}
		for i := range pg.Objects {
			o := &pg.Objects[i]
			if o.Kind != "message" || !isSentFolder(o.Containers) {
				continue
			}
			e.own[lowAddr(o.From)] = true
			for _, a := range append(slices.Clone(o.To), o.Cc...) {
				e.known[lowAddr(a)] = true
			}
			e.threads[strings.Trim(o.ThreadID, "<>")] = true
			e.threads[o.Facts[mail.FactMessageID]] = true
		}
		if pg.Last {
			delete(e.threads, "")
			delete(e.own, "")
			delete(e.known, "")
			return e, nil
		}
	}
}

func (e *evidenceCheck) has(o *plan.Object) bool {
	from := lowAddr(o.From)
	post := strings.ToLower(o.Facts[mail.FactListPost])
	platforms := o.Facts[mail.FactPlatform]
	discussion := strings.Contains(post, "mailto:")
	for _, p := range []string{"mailman", "google-groups", "groups.io", "discourse", "yahoo-groups", "mailing-list"} {
		discussion = discussion || strings.Contains(platforms, p)
	}
	return isSentFolder(o.Containers) || e.own[from] || e.known[from] || e.threads[strings.Trim(o.ThreadID, "<>")] ||
		e.threads[strings.Trim(o.Facts[mail.FactInReplyTo], "<>")] || (discussion && (o.ListID != "" || strings.Contains(platforms, "mailing-list")))
}

// runRealBench plans over a Maildir or mbox tree listed by vendor_d_local and prints, per source
// and label, the share of messages each plan would remove, and the removable messages with
// conversation evidence.
func runRealBench(ctx context.Context, w io.Writer, labelsFile, root string, explain int, spamdAddr string) error {
	labels, err := readLabels(labelsFile)
	if err != nil {
		return fmt.Errorf("labels: %w", err)
	}
	tmp, err := os.MkdirTemp("", "svc-corpus-trash-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	p, err := local.New(ctx, providers.Config{"root": root, "trash_dir": tmp})
	if err != nil {
		return err
	}
	// The listed objects, kept to look up each plan object's headers.
	objs := map[string]plan.Object{}
	listStart := time.Now()
	l := discover.Objects(p, "")
	for {
		pg, err := l.Next(ctx)
		if err != nil {
			return err
		}
		for _, o := range pg.Objects {
			objs[o.ID] = o
		}
		if pg.Last {
			break
		}
	}
	listTime := time.Since(listStart)
	ev, err := newEvidenceCheck(ctx, discover.Objects(p, ""))
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Mailbox %s: %d objects listed by vendor_d_local, %d labelled (%s)\n", root, len(objs), len(labels), labelsFile)
	listing := func() plan.Objects { return discover.Objects(p, "") }
	if spamdAddr != "" {
		// spamd's verdicts are the same for both plans: ask once, then replay them.
		sl := spamc.Objects(discover.Objects(p, ""), func(ctx context.Context, id string) (io.ReadCloser, error) {
			c, err := p.Fetch(ctx, providers.FetchRequest{ObjectID: id})
			if err != nil {
				return nil, err
			}
			return c.Body, nil
		}, &spamc.Client{Addr: spamdAddr})
		start := time.Now()
		var pages []plan.Page
		for {
			pg, err := sl.Next(ctx)
			if err != nil {
				return err
			}
			pages = append(pages, pg)
			if pg.Last {
				break
			}
		}
		fmt.Fprintf(w, "spamd %s: %d messages checked in %.1f s, %d spam, %d not checked (%v)\n",
			spamdAddr, sl.Checked, time.Since(start).Seconds(), sl.Spam, sl.Failed, sl.LastErr)
		listing = func() plan.Objects { return &replay{pages: pages} }
	}
	type key struct{ source, label string }
	for _, bp := range benchPolicies[:2] {
		start := time.Now()
		pl, err := corpusPlan(ctx, listing(), bp.pol)
		if err != nil {
			return err
		}
		planTime := time.Since(start)
		total, removable := map[key]int{}, map[key]int{}
		evidenceRemovable := 0
		var examples []string
		reasons := map[string]int{}
		for _, po := range pl.Objects {
			if objs[po.ProviderObjectId].Kind != "message" {
				continue
			}
			lab, ok := labels[po.ProviderObjectId]
			if !ok {
				lab = [2]string{"unlabelled", "-"}
			}
			k := key{lab[1], lab[0]}
			total[k]++
			trashed := slices.Contains(po.Actions, svcv1.PlanAction_PLAN_ACTION_TRASH)
			if explain > 0 && (trashed != (lab[0] == "junk") || explain > 100) {
				r := fmt.Sprintf("%s %s: %s", lab[0], map[bool]string{true: "removable", false: "kept"}[trashed], po.StorageClassReason)
				if explain > 200 { // with the sender, to look at examples
					r += "  [" + objs[po.ProviderObjectId].From + "]"
				}
				reasons[r]++
			}
			if !slices.Contains(po.Actions, svcv1.PlanAction_PLAN_ACTION_TRASH) {
				continue
			}
			removable[k]++
			if o := objs[po.ProviderObjectId]; o.Kind == "message" && ev.has(&o) &&
				po.StorageClass != svcv1.StorageClass_STORAGE_CLASS_DUPLICATE {
				evidenceRemovable++
				if len(examples) < 5 {
					examples = append(examples, po.ProviderObjectId+": "+po.StorageClassReason)
				}
			}
		}
		fmt.Fprintf(w, "\n== %s (planned in %.2f s)\n", bp.name, planTime.Seconds())
		keys := make([]key, 0, len(total))
		for k := range total {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b key) int { return strings.Compare(a.source+"\x00"+a.label, b.source+"\x00"+b.label) })
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "source\tlabel\tmessages\tremovable\tshare\ttarget\t")
		for _, k := range keys {
			share := float64(removable[k]) / float64(total[k])
			target := ""
			switch k.label {
			case "discussion", "transactional", "ham":
				target = verdictOf(share <= 0.05, "<= 5%")
			case "junk":
				target = verdictOf(share >= 0.60, ">= 60%")
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.2f%%\t%s\t\n", k.source, k.label, total[k], removable[k], 100*share, target)
		}
		tw.Flush()
		fmt.Fprintf(w, "conversation-evidence messages removable (duplicates of a kept copy aside): %d  %s\n", evidenceRemovable, verdictOf(evidenceRemovable == 0, "= 0"))
		for _, ex := range examples {
			fmt.Fprintf(w, "  %s\n", ex)
		}
		if explain > 0 {
			rs := sortedKeys(reasons)
			slices.SortStableFunc(rs, func(a, b string) int { return reasons[b] - reasons[a] })
			fmt.Fprintln(w, "most common reasons for junk kept and other mail removable:")
			for _, r := range rs[:min(explain, len(rs))] {
				fmt.Fprintf(w, "  %5d  %s\n", reasons[r], r)
			}
		}
		if bp.name == "removePromotional" {
			fmt.Fprintf(w, "\nlisting %.2f s, planning %.2f s: planning / listing = %.2fx (target <= 1.5x)\n",
				listTime.Seconds(), planTime.Seconds(), planTime.Seconds()/listTime.Seconds())
		}
	}
	return nil
}

// replay is a listing read before, page by page again.
type replay struct {
	pages []plan.Page
	at    int
}

func (r *replay) Next(context.Context) (plan.Page, error) {
	pg := r.pages[r.at]
	r.at++
	return pg, nil
}

func verdictOf(ok bool, target string) string {
	if ok {
		return target + " MET"
	}
	return target + " MISSED"
}
