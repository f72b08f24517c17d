package corpus

import (
	"fmt"
	"strings"
)

type brand struct{ name, domain string }

var (
	shops    = []brand{{"Northwind Outfitters", "northwind-outfitters.example"}, {"Bookery", "bookery.example"}, {"GadgetHub", "gadgethub.example"}, {"Casa Verde", "casaverde.example"}, {"Kaufhaus Nord", "kaufhaus-nord.example"}, {"La Boutique", "laboutique.example"}}
	services = []brand{{"CloudDrive", "clouddrive.example"}, {"StreamFlix", "streamflix.example"}, {"FitTrack", "fittrack.example"}, {"Photon Hosting", "photon-hosting.example"}, {"TaskPilot", "taskpilot.example"}}
	banks    = []brand{{"First Harbor Bank", "firstharbor.example"}, {"Banco Sol", "bancosol.example"}, {"Sparkasse Mitte", "sparkasse-mitte.example"}}
	travel   = []brand{{"SkyJet Airlines", "skyjet.example"}, {"RailEuro", "raileuro.example"}, {"StayWell Hotels", "staywell.example"}}
)

// esp adds the headers an email sending platform writes.
func (g *gen) esp(h *header, name string) {
	switch name {
	case "sendgrid":
		h.add("X-SG-EID", fmt.Sprintf("%x", g.r.Uint64()))
		h.add("X-SG-ID", fmt.Sprintf("%x", g.r.Uint64()))
	case "amazon-ses":
		h.add("X-SES-Outgoing", "2024.01.01-54.240.0.1")
		h.add("Feedback-ID", fmt.Sprintf("1.us-east-1.%x=:AmazonSES", g.r.Uint32()))
	case "postmark":
		h.add("X-PM-Message-Id", fmt.Sprintf("%x", g.r.Uint64()))
	case "mandrill":
		h.add("X-Mandrill-User", "md_"+fmt.Sprint(g.r.IntN(99999)))
	case "mailgun":
		h.add("X-Mailgun-Sid", fmt.Sprintf("W%x", g.r.Uint64()))
	case "mailchimp":
		h.add("X-Mailer", "MailChimp Mailer - **CID"+fmt.Sprintf("%x", g.r.Uint32())+"**")
		h.add("X-Campaign", fmt.Sprintf("mailchimp%x.%x", g.r.Uint32(), g.r.Uint32()))
		h.add("X-campaignid", fmt.Sprintf("mailchimp%x", g.r.Uint32()))
		h.add("X-MC-User", fmt.Sprintf("%x", g.r.Uint64()))
		h.add("X-Report-Abuse", "Please report abuse for this campaign here: https://mailchimp.com/contact/abuse/")
	case "klaviyo":
		h.add("X-Kmail-Relay", "true")
		h.add("X-Kmail-Account", fmt.Sprintf("%X", g.r.Uint32()))
	case "sfmc":
		h.add("X-SFMC-Stack", "7")
		h.add("x-job", fmt.Sprintf("%d_%d", g.r.IntN(1e6), g.r.IntN(1e6)))
	case "hubspot":
		h.add("X-HS-Cid", fmt.Sprintf("%x", g.r.Uint64()))
	}
}

func (g *gen) from(h *header, display, addr string) {
	h.add("From", encodeWord(display, "utf-8", false)+" <"+addr+">")
}

// transactional: receipts, orders, shipping, statements, bookings, security notices, tickets,
// contracts, renewals; some carry a marketing footer or List-Unsubscribe, some are in other
// languages, some come from the same domains as the marketing.
func (g *gen) transactional() Message {
	d := g.date()
	h := &header{}
	var subject, text, kind string
	var files []string
	esp := g.pick([]string{"sendgrid", "amazon-ses", "postmark", "mandrill", "", ""})
	switch c := g.r.IntN(13); c {
	case 0, 1:
		s := shops[g.r.IntN(len(shops))]
		n := 100000 + g.r.IntN(900000)
		g.from(h, s.name, g.pick([]string{"orders", "no-reply", "auto-confirm", "shop"})+"@"+s.domain)
		subject = g.pick([]string{fmt.Sprintf("Your %s order #%d", s.name, n), fmt.Sprintf("Order confirmation #%d", n), fmt.Sprintf("Thanks for your order! (#%d)", n), fmt.Sprintf("Bestellbestätigung Nr. %d", n), fmt.Sprintf("Confirmation de votre commande n°%d", n)})
		text = fmt.Sprintf("Hi Sam,\n\nThanks for shopping with us. Order number: %d\n\n1 x Rain jacket   $89.00\nSubtotal $89.00\nShipping $0.00\nOrder total: $89.00\n\nPaid with Visa ending in %04d.\n", n, g.r.IntN(10000))
		kind = "order"
	case 2, 3:
		carrier := g.pick([]string{"UPS", "DHL", "FedEx", "Royal Mail", "La Poste"})
		s := shops[g.r.IntN(len(shops))]
		if g.chance(50) {
			g.from(h, carrier, "tracking@"+strings.ToLower(strings.ReplaceAll(carrier, " ", ""))+".example")
		} else {
			g.from(h, s.name, "shipment-tracking@"+s.domain)
		}
		subject = g.pick([]string{"Your package has shipped", "Your order is out for delivery", "Delivered: your package", fmt.Sprintf("%s: shipment notification", carrier), "Ihre Sendung ist unterwegs"})
		text = fmt.Sprintf("Good news! Your package is on its way.\nTracking number: 1Z%X\nEstimated delivery: tomorrow by 8pm.\n", g.r.Uint32())
		kind = "shipping"
	case 4:
		s := services[g.r.IntN(len(services))]
		g.from(h, s.name+" Billing", g.pick([]string{"billing", "invoices", "receipts"})+"@"+s.domain)
		n := g.r.IntN(99999)
		subject = g.pick([]string{fmt.Sprintf("Your receipt from %s", s.name), fmt.Sprintf("Invoice INV-%05d", n), fmt.Sprintf("[%s] Payment received", s.name), "Your subscription has been renewed", fmt.Sprintf("Rechnung %05d", n)})
		text = fmt.Sprintf("Invoice number: INV-%05d\nBilling period: this month\nAmount paid: $%d.99\nPayment method: card ending in %04d\n", n, 5+g.r.IntN(50), g.r.IntN(10000))
		if g.chance(60) {
			files = append(files, fmt.Sprintf("Invoice-INV-%05d.pdf", n))
		}
		kind = "invoice"
	case 5:
		b := banks[g.r.IntN(len(banks))]
		g.from(h, b.name, g.pick([]string{"statements", "alerts", "no-reply"})+"@"+b.domain)
		subject = g.pick([]string{"Your statement is ready", "Your monthly account statement", "Payment due reminder", "A payment of $250.00 was made", "Ihr Kontoauszug ist verfügbar", "Su extracto mensual"})
		text = "Your statement for the account ending in 4821 is now available in online banking.\nAmount due: $1,204.50\n"
		kind = "bank"
	case 6:
		t := travel[g.r.IntN(len(travel))]
		g.from(h, t.name, g.pick([]string{"bookings", "noreply", "reservations"})+"@"+t.domain)
		ref := fmt.Sprintf("%X", g.r.Uint32())[:6]
		subject = g.pick([]string{"Booking confirmation " + ref, "Your e-ticket and itinerary", "Your boarding pass", "Check-in is open for your flight", "Reservation confirmed: " + ref})
		text = "Booking reference: " + ref + "\nPassenger: Sam Rivera\nPlease keep this confirmation for your records.\n"
		if g.chance(50) {
			files = append(files, "e-ticket-"+ref+".pdf")
		}
		kind = "travel"
	case 7, 8:
		s := append(services, banks...)[g.r.IntN(len(services)+len(banks))]
		g.from(h, s.name, g.pick([]string{"security", "no-reply", "account-security", "noreply"})+"@"+s.domain)
		subject = g.pick([]string{"Security alert: new sign-in from Chrome on Windows", "Reset your password", "Your password was changed", fmt.Sprintf("Your verification code is %06d", g.r.IntN(1e6)), "Confirm your email address", "New sign-in to your account", "Two-factor authentication enabled"})
		text = "We noticed a new sign-in to your account.\nIf this was you, you don't need to do anything. If this wasn't you, secure your account now.\n"
		kind = "security"
	case 9:
		s := services[g.r.IntN(len(services))]
		n := 10000 + g.r.IntN(90000)
		g.from(h, s.name+" Support", "support@"+s.domain)
		subject = g.pick([]string{fmt.Sprintf("[Ticket #%d] Re: cannot export my data", n), fmt.Sprintf("Case #%d has been updated", n), fmt.Sprintf("Your request #%d has been received", n)})
		text = fmt.Sprintf("Hello Sam,\n\nThanks for contacting us. Your request #%d has been updated:\n\n%s\n\nKind regards,\nThe support team\n", n, g.pick(lines))
		h.add("In-Reply-To", g.msgID(s.domain))
		kind = "ticket"
	case 10:
		g.from(h, "DocuSign", "dse@docusign.example")
		h.add("Reply-To", g.person(workDoms).addr)
		subject = g.pick([]string{"Completed: Please DocuSign: Lease Agreement 2024.pdf", "Please DocuSign: Employment Contract", "Signature requested: Service Agreement"})
		text = "All parties have completed the envelope. Please sign the agreement or view the completed document.\n"
		kind = "contract"
	case 11:
		p := g.person(personal)
		g.fromField(h, p, "utf-8")
		subject = g.pick([]string{"Invoice for the kitchen work", "Receipt for the deposit", "Factura de marzo", "Rechnung Gartenarbeiten"})
		text = "Hi Sam,\n\nattached is the invoice for last month. Amount due: 480 EUR.\n\nThanks,\n" + p.name + "\n"
		files = append(files, g.pick([]string{"invoice-2024-03.pdf", "Rechnung_März.pdf", "factura.pdf"}))
		kind = "invoice-from-person"
		esp = ""
	default:
		s := services[g.r.IntN(len(services))]
		g.from(h, s.name, "no-reply@"+s.domain)
		subject = g.pick([]string{"Your subscription will renew on March 3", "Your free trial ends in 3 days", "Your annual plan renewal notice", "Important: changes to your account"})
		text = "Your plan will renew automatically. Amount: $99.00 per year. Manage your subscription in account settings.\n"
		kind = "renewal"
	}
	dom := h.senderDomain()
	g.common(h, d, dom, g.ownerTo())
	h.add("Subject", encodeWord(subject, "utf-8", g.chance(40)))
	g.esp(h, esp)
	if kind != "invoice-from-person" && g.chance(20) {
		// Some shops put an unsubscribe link and a promo in receipts too.
		h.add("List-Unsubscribe", "<https://"+dom+"/unsubscribe?u=1>")
		text += "\nYou might also like: 20% off our new collection. Unsubscribe from marketing emails.\n"
	}
	if kind != "invoice-from-person" && g.chance(50) {
		h.add("Auto-Submitted", "auto-generated")
	}
	var body part
	if g.chance(60) && kind != "invoice-from-person" {
		html := "<html><body><table><tr><td><h2>" + htmlEscape(subject) + "</h2><p>" + strings.ReplaceAll(htmlEscape(text), "\n", "<br>") + "</p></td></tr></table></body></html>"
		body = multipart("alternative", fmt.Sprintf("b1_%x", g.r.Uint64()), textPart("plain", text, "utf-8", "quoted-printable"), textPart("html", html, "utf-8", "quoted-printable"))
	} else {
		body = textPart("plain", text, g.pick([]string{"utf-8", "iso-8859-1"}), "quoted-printable")
	}
	return g.msg(h, g.withAttachments(body, files...), Transactional, kind, "", d)
}

// marketing: retail promotions, newsletters (some written by a person on a newsletter
// platform), product updates, surveys and events, in several languages.
func (g *gen) marketing() Message {
	d := g.date()
	h := &header{}
	var subject, html, kind string
	esp := g.pick([]string{"mailchimp", "klaviyo", "sfmc", "sendgrid", "hubspot", "mailgun", "amazon-ses", ""})
	switch c := g.r.IntN(8); c {
	case 0, 1, 2:
		s := shops[g.r.IntN(len(shops))]
		g.from(h, s.name, g.pick([]string{"news", "hello", "offers", "email", "deals", "info"})+"@"+g.pick([]string{"", "mail.", "e."})+s.domain)
		subject = g.pick([]string{fmt.Sprintf("%d%% off everything this weekend", 10+5*g.r.IntN(10)), "New arrivals you'll love 🌿", "Last chance: free shipping ends tonight", "Our biggest sale of the year", "Jetzt 20 % sparen – nur heute", "Nouveautés de la semaine", "Sam, we picked these for you", "Your cart misses you", "Black Friday starts now"})
		html = "<html><body><a href=\"https://" + s.domain + "/view\">View this email in your browser</a><h1>" + htmlEscape(subject) + "</h1><p>Shop now and save on our new collection. Use code SAVE20.</p><p>You are receiving this email because you signed up. <a href=\"https://" + s.domain + "/unsubscribe\">Unsubscribe</a> | Manage preferences</p><p>" + s.name + ", 1 Market St, Springfield</p></body></html>"
		kind = "retail"
	case 3, 4:
		p := g.person(personal)
		pub := strings.ToLower(strings.Fields(p.name)[1])
		if g.chance(50) {
			g.from(h, p.name, pub+"@substack.example")
			h.add("X-Mailgun-Sid", fmt.Sprintf("W%x", g.r.Uint64()))
			h.add("List-Post", "<https://"+pub+".substack.example/p/post>")
			esp = ""
			kind = "newsletter-author"
		} else {
			g.from(h, g.pick([]string{"The Morning Brief", "Tech Weekly", "City Digest", "Garden Notes"}), "newsletter@"+g.pick([]string{"morningbrief", "techweekly", "citydigest", "gardennotes"})+".example")
			kind = "newsletter"
		}
		subject = g.pick([]string{"This week: what changed in AI policy", "Issue #214: the quiet comeback of trains", "Your Sunday reading list", "5 things to know today", "Notes from the garden: March"})
		html = "<html><body><p>" + htmlEscape(g.pick(lines)) + "</p><p>Read more on the web. Thanks for reading! Share this newsletter with a friend.</p><p><a href=\"https://x.example/unsubscribe\">Unsubscribe</a></p></body></html>"
	case 5:
		s := services[g.r.IntN(len(services))]
		g.from(h, s.name, g.pick([]string{"team", "product", "hello", "marketing"})+"@"+s.domain)
		subject = g.pick([]string{"What's new in " + s.name + ": March update", "Join our webinar: scaling your workflow", "Upgrade to Pro and get 2 months free", "We'd love your feedback (2-minute survey)"})
		html = "<html><body><h2>" + htmlEscape(subject) + "</h2><p>Discover the new features we shipped this month. Upgrade today.</p><p>Don't want these emails? Unsubscribe or update your email preferences.</p></body></html>"
		kind = "product"
	case 6:
		s := travel[g.r.IntN(len(travel))]
		g.from(h, s.name, "deals@"+s.domain)
		subject = g.pick([]string{"Fares from $49 – book by Sunday", "Your next getaway is waiting", "Members only: 30% off summer stays"})
		html = "<html><body><p>Exclusive member deals. Book now, offer ends soon.</p><a href=\"#\">Unsubscribe</a></body></html>"
		kind = "travel-deals"
	default:
		org := g.pick([]string{"City Museum", "Save the Forests", "Community Radio"})
		g.from(h, org, "info@"+strings.ToLower(strings.ReplaceAll(org, " ", ""))+".example")
		subject = g.pick([]string{"Our spring gala – tickets on sale", "Help us reach our goal this month", "Members' newsletter: upcoming events"})
		html = "<html><body><p>Upcoming events and ways to support us. Donate today.</p><p>To stop receiving these emails, unsubscribe.</p></body></html>"
		kind = "nonprofit"
	}
	dom := h.senderDomain()
	g.common(h, d, dom, Owner)
	h.add("Subject", encodeWord(subject, "utf-8", g.chance(50)))
	g.esp(h, esp)
	switch {
	case g.chance(80):
		h.add("List-Unsubscribe", "<https://"+dom+"/u/"+fmt.Sprintf("%x", g.r.Uint64())+">, <mailto:unsubscribe@"+dom+">")
		if g.chance(75) {
			h.add("List-Unsubscribe-Post", "List-Unsubscribe=One-Click")
		}
	case g.chance(50):
		h.add("List-Unsubscribe", "<mailto:leave-"+fmt.Sprintf("%x", g.r.Uint32())+"@"+dom+">")
	}
	if g.chance(40) {
		h.add("Precedence", "bulk")
	}
	if g.chance(30) {
		h.add("List-Id", "<"+fmt.Sprint(g.r.IntN(99999))+".list-id."+dom+">")
	}
	folder := ""
	plain := strings.TrimSpace(stripTags(html))
	var body part
	if g.chance(70) {
		body = multipart("alternative", fmt.Sprintf("_----------=_%x", g.r.Uint64()), textPart("plain", plain, "utf-8", "quoted-printable"), textPart("html", html, "utf-8", g.pick([]string{"quoted-printable", "base64"})))
	} else {
		body = textPart("html", html, "utf-8", g.pick([]string{"quoted-printable", "base64"}))
	}
	return g.msg(h, body, Marketing, kind, folder, d)
}

func stripTags(s string) string {
	var b strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '<':
			in = true
		case r == '>':
			in = false
			b.WriteByte(' ')
		case !in:
			b.WriteRune(r)
		}
	}
	return b.String()
}
