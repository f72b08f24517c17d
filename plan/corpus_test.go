package plan_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/internal/corpus"
	"svc.dev/svc/plan"
	"svc.dev/svc/plan/discover"
	"svc.dev/svc/providers"
)

// TestCorpusTargets plans over the labelled corpus (read by the mail reader as a provider reads
// it) and holds the classes to the targets: what plans trash is junk, marketing or
// notices (precision >= 0.97 per removable class), at most 1% of conversations and
// transactional mail is trashed by any plan, and junk and marketing are found (recall >= 0.80).
// `svc corpus bench` prints the same figures for larger corpora.
func TestCorpusTargets(t *testing.T) {
	epoch := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	msgs := corpus.Generate(7, 2500, epoch)
	objs := make([]plan.Object, len(msgs))
	for i, m := range msgs {
		h, facts := providers.ReadMail(bytes.NewReader(m.Raw))
		folder := m.Folder
		if folder == "" {
			folder = "INBOX"
		}
		po := providers.Object{ID: fmt.Sprint(i), Version: "v1", Kind: providers.KindMessage, Name: h.Subject, SizeBytes: int64(len(m.Raw)),
			Containers: []string{folder}, ModifiedAt: m.Date, Message: h, Metadata: facts}
		objs[i] = discover.Object(&po)
	}
	for _, pol := range []*svcv1.SourcePolicy{{}, {RemovePromotional: proto.Bool(true)}, {RemovePromotional: proto.Bool(true), MinAgeDays: i64(30)}} {
		req := request(pol, objs...)
		req.Now = epoch
		p, err := plan.Build(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		outs := make([]corpus.Outcome, 0, len(p.Objects))
		for _, o := range p.Objects {
			var i int
			fmt.Sscan(o.ProviderObjectId, &i)
			outs = append(outs, corpus.Outcome{Label: msgs[i].Label, Class: wireName(o.StorageClass), Trashed: slices.Contains(o.Actions, svcv1.PlanAction_PLAN_ACTION_TRASH)})
		}
		s := corpus.Tally(outs)
		if s.RemovalPrecision() < 0.97 || s.TrashedShare(corpus.Conversation) > 0.01 || s.TrashedShare(corpus.Transactional) > 0.01 {
			var b bytes.Buffer
			s.Print(&b)
			t.Errorf("policy %v: removal precision %.3f, conversations trashed %.3f, transactional trashed %.3f\n%s",
				pol, s.RemovalPrecision(), s.TrashedShare(corpus.Conversation), s.TrashedShare(corpus.Transactional), b.String())
		}
		if pol.MinAgeDays == nil {
			for _, l := range []corpus.Label{corpus.Junk, corpus.Marketing} {
				if s.Precision(l) < 0.97 || s.Recall(l) < 0.80 {
					t.Errorf("policy %v: %s precision %.3f recall %.3f", pol, l, s.Precision(l), s.Recall(l))
				}
			}
		}
	}
}

func wireName(c svcv1.StorageClass) string {
	return map[svcv1.StorageClass]string{
		svcv1.StorageClass_STORAGE_CLASS_PRESERVE: "preserve", svcv1.StorageClass_STORAGE_CLASS_LIKELY_REMOVABLE: "likely_removable",
		svcv1.StorageClass_STORAGE_CLASS_REVIEW: "review", svcv1.StorageClass_STORAGE_CLASS_PROMOTIONAL: "promotional",
		svcv1.StorageClass_STORAGE_CLASS_DUPLICATE: "duplicate", svcv1.StorageClass_STORAGE_CLASS_LARGE_ATTACHMENT: "large_attachment",
		svcv1.StorageClass_STORAGE_CLASS_COLD: "cold", svcv1.StorageClass_STORAGE_CLASS_RECENT: "recent",
		svcv1.StorageClass_STORAGE_CLASS_PROTECTED_BY_RULE: "protected_by_rule",
	}[c]
}
