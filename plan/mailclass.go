package plan

import (
	"path"
	"slices"
	"strings"
)

// mailKind is what a message is to the person who keeps it.
type mailKind uint8

const (
	mailUnknown       mailKind = iota // no judgement: the general rules decide (notifications, alerts)
	mailConversation                  // people writing to each other, shown by the mailbox: never removable by default
	mailTransactional                 // receipts, orders, statements, security notices: preserve
	mailMarketing                     // bulk marketing and newsletters: promotional
	mailJunk                          // spam: removable
	mailConflict                      // signals disagree: review
	mailUnreadable                    // nothing could be read: review
	mailStranger                      // looks like a person's mail, no evidence the owner knows them: review
)

// verdict is a message's kind and why, before the mailbox's evidence is weighed
// (markConversations).
type verdict struct {
	kind   mailKind
	reason string
	// person is set for unsolicited mail that looks like a person's: its class depends on
	// whether the mailbox shows the owner knows the sender.
	person bool
	// junk and junkWhy are the junk signals of a stranger's mail (mailStranger).
	junk    int
	junkWhy string

	// For the per-mailbox model (junkmodel.go): judged is set when judgeMail read the message
	// (its tokens are in the rules' scratch, the first nSubj the subject's); said when the
	// provider or a filter already called it spam; trans is its transactional score;
	// unsolicited says nothing shows the owner asked for it.
	judged      bool
	list        bool // came through a discussion list or code-host thread the owner receives
	nSubj       int
	said        bool
	trans       int
	unsolicited bool
}

// Folder and label names providers use for spam and for the owner's sent mail (Maildir++
// folders, IMAP special-use names in a few languages, Gmail labels).
var (
	spamFolders = []string{"spam", "junk", "junk e-mail", "junk email", "bulk mail", "junk mail", "[gmail]/spam", "pourriel", "correo no deseado"}
	sentFolders = []string{"sent", "sent items", "sent mail", "sent messages", "[gmail]/sent mail", "gesendet", "gesendete objekte", "enviados", "envoyés", "elementos enviados", "posta inviata"}
)

// folderIs reports whether a container (a path, a Maildir++ ".Folder.Sub" name or a label) names
// one of the folders.
func folderIs(container string, names []string) bool {
	c := strings.ToLower(strings.TrimSpace(container))
	if slices.Contains(names, c) {
		return true
	}
	last := path.Base(strings.TrimSuffix(c, "/"))
	if i := strings.LastIndexByte(last, '.'); i >= 0 && i < len(last)-1 {
		last = last[i+1:] // Maildir++: ".INBOX.Sent"
	}
	return slices.Contains(names, strings.TrimPrefix(last, "."))
}

func inFolder(o *Object, names []string) string {
	for _, c := range o.Containers {
		if folderIs(c, names) {
			return c
		}
	}
	return ""
}

// Sending platforms by what they mostly send.
var (
	discussionPlatforms = []string{"mailman", "google-groups", "groups.io", "discourse", "yahoo-groups", "mailing-list"}
	codeHostPlatforms   = []string{"github", "gitlab", "gitea", "bugzilla", "jira"}
	marketingPlatforms  = []string{"mailchimp", "klaviyo", "hubspot", "salesforce-marketing-cloud", "campaign", "substack"}
	bulkPlatforms       = []string{"sendgrid", "mailgun", "amazon-ses"} // marketing and transactional alike
)

// Local parts (their first word, split at - + . _) of addresses that belong to a function, not a
// person; and words that mark an automated address anywhere in it.
var (
	roleWords = words("noreply", "no-reply", "donotreply", "do-not-reply", "notification", "notifications", "notify", "alert", "alerts",
		"tracking", "root", "cron", "feedback", "calendar", "info", "news", "newsletter", "newsletters", "hello", "hi", "marketing",
		"promo", "promotions", "offers", "deals", "sales", "team", "support", "help", "billing", "invoice", "invoices", "receipt",
		"receipts", "order", "orders", "shipping", "account", "accounts", "security", "mailer-daemon", "postmaster", "updates",
		"digest", "bounce", "bounces", "service", "customerservice", "care", "rewards", "store", "shop", "admin", "contact",
		"members", "community", "events", "mail", "email", "auto-confirm", "payment", "payments", "statement", "statements")
	roleMarks          = []string{"noreply", "no-reply", "donotreply", "bounce", "notif", "alert", "daemon"}
	transactionalWords = words("billing", "invoice", "invoices", "receipt", "receipts", "order", "orders", "order-update", "shipping",
		"shipment-tracking", "account", "accounts", "account-security", "security", "payment", "payments", "statement", "statements",
		"auto-confirm", "booking", "bookings", "reservation", "reservations", "ticket", "tickets", "eticket", "e-ticket")
	marketingWords = words("news", "newsletter", "newsletters", "marketing", "promo", "offers", "deals", "hello", "hi")
)
