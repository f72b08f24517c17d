package mail

import (
	"strings"
)

// Keys of the header facts a provider puts in a listed message's metadata (the manifest's
// providerMetadata), beside the fields providers.MessageHeaders carries. Values are valid UTF-8
// of at most MaxFactBytes; a fact that does not hold is absent.
const (
	FactFromName     = "mail.from_name"      // the From display name
	FactReplyTo      = "mail.reply_to"       // the first Reply-To address
	FactInReplyTo    = "mail.in_reply_to"    // the id the message answers (In-Reply-To or References)
	FactListPost     = "mail.list_post"      // List-Post (RFC 2369): where posts to the list go, or NO
	FactPrecedence   = "mail.precedence"     // Precedence (bulk, list, junk)
	FactAutoSubmit   = "mail.auto_submitted" // Auto-Submitted (RFC 3834), when not "no"
	FactPlatform     = "mail.platform"       // the sending platforms whose headers the message carries
	FactSpam         = "mail.spam"           // a spam filter's verdict in the headers (X-Spam-Flag, X-Spam-Status)
	FactAuthFail     = "mail.auth_fail"      // failed DKIM, SPF or DMARC results
	FactAttachments  = "mail.attachments"    // attachment names, "; " separated
	FactTextTail     = "mail.text_tail"      // the end of the text (where footers are)
	FactProblems     = "mail.problems"       // what Read had to guess, "; " separated
	FactUnreadable   = "mail.unreadable"     // why nothing could be read
	FactFromAddrSelf = "mail.from_self"      // "true" when the provider knows the owner sent it
	FactMessageID    = "mail.message_id"     // Message-ID, without angle brackets
	FactReturnPath   = "mail.return_path"    // the Return-Path address (the envelope sender), when not empty
	FactHTMLOnly     = "mail.html_only"      // "true" when the message is a single text/html part (no plain text)
)

// MaxFactBytes bounds each fact's value.
const MaxFactBytes = 1024

// platforms maps header fields that only a sending platform writes to the platform's name.
// Mailing-list managers and code hosts are platforms too: their names tell a classifier what
// kind of mail it is.
var platforms = []struct{ header, name string }{
	{"X-Mailman-Version", "mailman"},
	{"X-Google-Group-Id", "google-groups"},
	{"X-Groupsio-Msgnum", "groups.io"},
	{"X-Discourse-Post-Id", "discourse"},
	{"X-Egroups-Return", "yahoo-groups"},
	{"X-Mailing-List", "mailing-list"}, // SmartList, vger and other list managers name the list here
	{"X-GitHub-Reason", "github"},
	{"X-GitLab-Project", "gitlab"},
	{"X-Gitea-Reason", "gitea"},
	{"X-Bugzilla-Reason", "bugzilla"},
	{"X-JIRA-FingerPrint", "jira"},
	{"X-MC-User", "mailchimp"},
	{"X-Mailchimp-Campaign", "mailchimp"},
	{"X-SG-EID", "sendgrid"},
	{"X-Mailgun-Sid", "mailgun"},
	{"X-SES-Outgoing", "amazon-ses"},
	{"X-PM-Message-Id", "postmark"},
	{"X-Mandrill-User", "mandrill"},
	{"X-SFMC-Stack", "salesforce-marketing-cloud"},
	{"X-Kmail-Relay", "klaviyo"},
	{"X-HS-Cid", "hubspot"},
	{"X-Campaign-Id", "campaign"},
	{"X-Substack-Post-Id", "substack"},
}

// Platforms returns the names of the sending platforms whose headers the message carries.
func (m *Message) Platforms() []string {
	// One pass over the fields, looking only at X- fields (every platform header is one; a
	// test checks), instead of a search of every field per platform.
	var found uint64 // bit i: platforms[i].header is present
	for _, f := range m.Fields {
		if len(f.Key) < 3 || f.Key[0]|0x20 != 'x' || f.Key[1] != '-' {
			continue
		}
		for i, p := range platforms {
			if strings.EqualFold(f.Key, p.header) {
				found |= 1 << i
			}
		}
	}
	var out []string
	for i, p := range platforms {
		if found&(1<<i) != 0 && !contains(out, p.name) {
			out = append(out, p.name)
		}
	}
	if x := strings.ToLower(m.Get("X-Mailer")); strings.Contains(x, "mailchimp") && !contains(out, "mailchimp") {
		out = append(out, "mailchimp")
	}
	return out
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// Spam returns a spam filter's positive verdict found in the headers, or "".
func (m *Message) Spam() string {
	if v := strings.TrimSpace(m.Get("X-Spam-Flag")); strings.EqualFold(v, "yes") {
		return "X-Spam-Flag: YES"
	}
	if v := strings.TrimSpace(m.Get("X-Spam-Status")); len(v) >= 3 && strings.EqualFold(v[:3], "yes") {
		return "X-Spam-Status: " + truncate(v, 80)
	}
	if v := strings.TrimSpace(m.Get("X-Spam-Verdict")); strings.EqualFold(v, "spam") {
		return "X-Spam-Verdict: spam"
	}
	return ""
}

// AuthFailures returns the failed results of Authentication-Results (RFC 8601): "dkim=fail",
// "spf=fail", "dmarc=fail".
func (m *Message) AuthFailures() []string {
	var out []string
	for _, f := range m.Fields {
		if !strings.EqualFold(f.Key, "Authentication-Results") {
			continue
		}
		v := strings.ToLower(f.Value)
		for _, k := range []string{"dkim=fail", "spf=fail", "spf=softfail", "dmarc=fail"} {
			if strings.Contains(v, k) && !contains(out, k) {
				out = append(out, k)
			}
		}
	}
	return out
}

// Facts returns the message's header facts keyed by the Fact* constants.
func (m *Message) Facts() map[string]string {
	f := map[string]string{}
	set := func(k, v string) {
		if v = strings.TrimSpace(v); v != "" {
			f[k] = truncate(v, MaxFactBytes)
		}
	}
	if m.Unreadable != "" {
		set(FactUnreadable, m.Unreadable)
		return f
	}
	set(FactFromName, m.From.Name)
	if len(m.ReplyTo) > 0 {
		set(FactReplyTo, m.ReplyTo[0].Addr)
	}
	switch {
	case m.InReplyTo != "":
		set(FactInReplyTo, m.InReplyTo)
	case len(m.References) > 0:
		set(FactInReplyTo, m.References[len(m.References)-1])
	}
	set(FactMessageID, m.MessageID)
	if rp := strings.Trim(strings.TrimSpace(m.Get("Return-Path")), "<>"); rp != "" {
		set(FactReturnPath, rp)
	}
	if m.MIMEType == "text/html" {
		set(FactHTMLOnly, "true")
	}
	set(FactListPost, m.ListPost)
	set(FactPrecedence, strings.ToLower(m.Get("Precedence")))
	if a := strings.ToLower(strings.TrimSpace(m.Get("Auto-Submitted"))); a != "" && a != "no" {
		set(FactAutoSubmit, a)
	}
	set(FactPlatform, strings.Join(m.Platforms(), ","))
	set(FactSpam, m.Spam())
	set(FactAuthFail, strings.Join(m.AuthFailures(), ","))
	var names []string
	for _, a := range m.Attachments {
		if a.Name != "" {
			names = append(names, a.Name)
		}
	}
	set(FactAttachments, strings.Join(names, "; "))
	if len(m.Text) > 400 {
		tail := m.Text[len(m.Text)-300:]
		for len(tail) > 0 && tail[0]&0xc0 == 0x80 {
			tail = tail[1:]
		}
		set(FactTextTail, tail)
	}
	set(FactProblems, strings.Join(m.Problems, "; "))
	m.shapeFacts(set)
	return f
}
