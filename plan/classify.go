package plan

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
)

// Thresholds the policy does not set.
const (
	// LargeAttachmentBytes is the size from which a message or attachment is a large attachment.
	LargeAttachmentBytes = 10 << 20
	// ColdAfter is how long an object must go unmodified to be cold.
	ColdAfter = 365 * 24 * time.Hour
)

// rules is a resolved source policy.
type rules struct {
	minAge, excludeRecent        time.Duration
	minSize                      int64
	senders, domains, labels     []string // lower case
	folders                      []string // cleaned, without trailing slash
	excludeStarred, excludeShare bool
	mimeTypes, keywords          []string // lower case
	removePromotional            bool
	duplicates                   svcv1.DuplicateHandling
	sourceAction                 svcv1.SourceAction
	preservation                 svcv1.PreservationMode

	scratch []string // tokens of the message being judged, reused
}

func lower(ss []string) []string {
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		if s = strings.ToLower(strings.TrimSpace(s)); s != "" {
			out = append(out, s)
		}
	}
	return out
}

const day = 24 * time.Hour

func resolve(p *svcv1.SourcePolicy) rules {
	r := rules{
		minAge:            time.Duration(p.GetMinAgeDays()) * day,
		excludeRecent:     time.Duration(p.GetExcludeRecentDays()) * day,
		minSize:           p.GetMinSizeBytes(),
		senders:           lower(p.GetExcludeSenders()),
		domains:           lower(p.GetExcludeDomains()),
		labels:            lower(p.GetExcludeLabels()),
		excludeStarred:    p.GetExcludeStarred(),
		excludeShare:      p.GetExcludeShared(),
		mimeTypes:         lower(p.GetPreserveMimeTypes()),
		keywords:          lower(p.GetPreserveKeywords()),
		removePromotional: p.GetRemovePromotional(),
		duplicates:        p.GetDuplicateHandling(),
		sourceAction:      p.GetSourceAction(),
		preservation:      p.GetPreservation(),
	}
	for _, f := range p.GetExcludeFolders() {
		if f = strings.Trim(path.Clean("/"+strings.TrimSpace(f)), "/"); f != "" {
			r.folders = append(r.folders, strings.ToLower(f))
		}
	}
	if r.duplicates == svcv1.DuplicateHandling_DUPLICATE_HANDLING_UNSPECIFIED {
		r.duplicates = svcv1.DuplicateHandling_DUPLICATE_HANDLING_KEEP_NEWEST
	}
	if r.sourceAction == svcv1.SourceAction_SOURCE_ACTION_UNSPECIFIED {
		r.sourceAction = svcv1.SourceAction_SOURCE_ACTION_TRASH
	}
	if r.preservation == svcv1.PreservationMode_PRESERVATION_MODE_UNSPECIFIED {
		r.preservation = svcv1.PreservationMode_PRESERVATION_MODE_VAULT_ALL
	}
	return r
}

// age is how old an object is: since its last modification, else its creation.
func age(o *Object, now time.Time) time.Duration {
	t := o.ModifiedAt
	if t.IsZero() {
		t = o.CreatedAt
	}
	if t.IsZero() {
		return time.Duration(1<<63 - 1) // unknown: as old as can be
	}
	return now.Sub(t)
}

// address returns the lower-case email address of a From header ("Ann <a@b.c>" -> "a@b.c").
func address(from string) string {
	from = strings.ToLower(strings.TrimSpace(from))
	if i := strings.LastIndexByte(from, '<'); i >= 0 {
		from = strings.TrimSuffix(from[i+1:], ">")
	}
	return strings.TrimSpace(from)
}

func domainOf(addr string) string {
	if i := strings.LastIndexByte(addr, '@'); i >= 0 {
		return addr[i+1:]
	}
	return ""
}

// exclusion returns why a policy excludes the object from the plan, or "" when it does not.
func (r *rules) exclusion(o *Object, now time.Time) (svcv1.ExclusionReason, string) {
	if o.Kind == "folder" {
		return svcv1.ExclusionReason_EXCLUSION_REASON_UNSUPPORTED_CAPABILITY, "folders are planned through their contents"
	}
	if len(r.senders) > 0 || len(r.domains) > 0 {
		addr := address(o.From)
		if addr != "" && slices.Contains(r.senders, addr) {
			return svcv1.ExclusionReason_EXCLUSION_REASON_POLICY_EXCLUSION, "sender " + addr + " is excluded"
		}
		if d := domainOf(addr); d != "" {
			for _, x := range r.domains {
				if d == x || strings.HasSuffix(d, "."+x) {
					return svcv1.ExclusionReason_EXCLUSION_REASON_POLICY_EXCLUSION, "domain " + x + " is excluded"
				}
			}
		}
	}
	for _, c := range o.Containers {
		if slices.Contains(r.labels, strings.ToLower(c)) {
			return svcv1.ExclusionReason_EXCLUSION_REASON_POLICY_EXCLUSION, "label " + c + " is excluded"
		}
	}
	if len(r.folders) > 0 {
		dir := strings.ToLower(strings.Trim(path.Clean("/"+path.Dir("/"+o.Path)), "/"))
		for _, f := range r.folders {
			if dir == f || strings.HasPrefix(dir, f+"/") {
				return svcv1.ExclusionReason_EXCLUSION_REASON_POLICY_EXCLUSION, "folder " + f + " is excluded"
			}
		}
		for _, c := range o.Containers {
			if slices.Contains(r.folders, strings.ToLower(strings.Trim(c, "/"))) {
				return svcv1.ExclusionReason_EXCLUSION_REASON_POLICY_EXCLUSION, "folder " + c + " is excluded"
			}
		}
	}
	if r.excludeStarred && o.Starred {
		return svcv1.ExclusionReason_EXCLUSION_REASON_PROTECTED_BY_RULE, "starred items are excluded"
	}
	if r.excludeShare && o.Shared {
		return svcv1.ExclusionReason_EXCLUSION_REASON_SHARED, "shared items are excluded"
	}
	if r.excludeRecent > 0 && age(o, now) < r.excludeRecent {
		return svcv1.ExclusionReason_EXCLUSION_REASON_RECENT, fmt.Sprintf("modified within the last %d days", r.excludeRecent/day)
	}
	return 0, ""
}

// classify gives an object that is not excluded its storage class and the reason for it, and,
// for a message, what judgeMail found. The first rule that applies decides (docs/plans.md):
// the owner's rules, then what the message is, then size and age. Duplicates and threads the
// owner took part in are settled later, across the whole plan.
// owner reports whether the class came from the owner's own rules.
func (r *rules) classify(o *Object, now time.Time) (class svcv1.StorageClass, reason string, v verdict, owner bool) {
	if why := r.preserved(o); why != "" {
		return svcv1.StorageClass_STORAGE_CLASS_PRESERVE, why, verdict{}, true
	}
	if o.Starred {
		return svcv1.StorageClass_STORAGE_CLASS_PROTECTED_BY_RULE, "starred", verdict{}, true
	}
	if o.Shared {
		return svcv1.StorageClass_STORAGE_CLASS_PROTECTED_BY_RULE, "shared", verdict{}, true
	}
	if o.Kind == "message" {
		v = judgeMail(o, &r.scratch)
	}
	a := age(o, now)
	if r.minAge > 0 && a < r.minAge {
		return svcv1.StorageClass_STORAGE_CLASS_RECENT, fmt.Sprintf("younger than minAgeDays (%d)", r.minAge/day), v, true
	}
	if r.minSize > 0 && o.SizeBytes < r.minSize {
		return svcv1.StorageClass_STORAGE_CLASS_REVIEW, "smaller than minSizeBytes: not worth removing", v, true
	}
	switch v.kind {
	case mailUnreadable, mailConflict, mailStranger:
		return svcv1.StorageClass_STORAGE_CLASS_REVIEW, v.reason, v, false
	case mailConversation:
		return svcv1.StorageClass_STORAGE_CLASS_PROTECTED_BY_RULE, v.reason, v, false
	case mailTransactional:
		return svcv1.StorageClass_STORAGE_CLASS_PRESERVE, v.reason, v, false
	case mailJunk:
		return svcv1.StorageClass_STORAGE_CLASS_LIKELY_REMOVABLE, v.reason, v, false
	case mailMarketing:
		return svcv1.StorageClass_STORAGE_CLASS_PROMOTIONAL, v.reason, v, false
	}
	if o.Kind != "message" && anyIn(o.Containers, marketingLabels) {
		return svcv1.StorageClass_STORAGE_CLASS_PROMOTIONAL, "filed under promotions or newsletters", v, false
	}
	if (o.Kind == "attachment" || o.Kind == "message") && o.SizeBytes >= LargeAttachmentBytes {
		return svcv1.StorageClass_STORAGE_CLASS_LARGE_ATTACHMENT, "10 MiB or more", v, false
	}
	if a >= ColdAfter {
		return svcv1.StorageClass_STORAGE_CLASS_COLD, "unmodified for over a year", v, false
	}
	if r.minAge > 0 || r.minSize > 0 {
		return svcv1.StorageClass_STORAGE_CLASS_LIKELY_REMOVABLE, "passed the minAgeDays or minSizeBytes you set", v, false
	}
	return svcv1.StorageClass_STORAGE_CLASS_REVIEW, "no rule decides: yours to review", v, false
}

// preserved returns why the policy preserves the object, or "".
func (r *rules) preserved(o *Object) string {
	mt := strings.ToLower(o.MIMEType)
	for _, m := range r.mimeTypes {
		if mt == m || (strings.HasSuffix(m, "/*") && strings.HasPrefix(mt, strings.TrimSuffix(m, "*"))) {
			return "preserveMimeTypes has " + m
		}
	}
	if len(r.keywords) > 0 {
		text := strings.ToLower(o.Name + "\n" + o.Subject)
		for _, k := range r.keywords {
			if strings.Contains(text, k) {
				return "preserveKeywords has " + strconv.Quote(k)
			}
		}
	}
	return ""
}

func anyIn(containers, set []string) bool {
	for _, c := range containers {
		if slices.Contains(set, strings.ToLower(c)) {
			return true
		}
	}
	return false
}

// removable reports whether objects of a class are removed by a cleanup under these rules.
func (r *rules) removable(c svcv1.StorageClass) bool {
	switch c {
	case svcv1.StorageClass_STORAGE_CLASS_LIKELY_REMOVABLE, svcv1.StorageClass_STORAGE_CLASS_DUPLICATE,
		svcv1.StorageClass_STORAGE_CLASS_LARGE_ATTACHMENT, svcv1.StorageClass_STORAGE_CLASS_COLD:
		return true
	case svcv1.StorageClass_STORAGE_CLASS_PROMOTIONAL:
		return r.removePromotional
	}
	return false
}
