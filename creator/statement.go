package creator

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math/big"
	"path"
	"regexp"
	"strings"
	"time"
	"unicode"
)

// RowError is one bad row of an upload: its physical line (the header is line 1 when it is the
// file's first line) and why it was refused.
type RowError struct {
	Line   int
	Reason string
}

// StatementError is a refused upload: every bad row. A refused upload changes nothing.
type StatementError struct {
	File string
	Rows []RowError
}

func (e *StatementError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "statement %s refused:", e.File)
	for i, r := range e.Rows {
		if i == 10 {
			fmt.Fprintf(&b, " (and %d more)", len(e.Rows)-10)
			break
		}
		fmt.Fprintf(&b, " line %d: %s;", r.Line, r.Reason)
	}
	return strings.TrimSuffix(b.String(), ";")
}

// ErrBadStatement is what a StatementError matches with errors.Is.
var ErrBadStatement = errors.New("bad statement")

// Is makes errors.Is(err, ErrBadStatement) true for a StatementError.
func (e *StatementError) Is(target error) bool { return target == ErrBadStatement }

// StatementOptions say how to read one uploaded statement.
type StatementOptions struct {
	// Path is the statement's path relative to the statements directory: the ref of its
	// evidence ("fanclub/2026.csv#L4").
	Path string
	// Platform names the platform when the file has no platform column (default: the first
	// directory of Path, else the file name up to its first "-", "_" or ".").
	Platform string
	// Currency is the currency when neither a column nor the amounts say (default USD).
	Currency string
	// Known are the currencies of streams already reconciled: a row in another currency is refused.
	Known map[string]string
	// Reconciled are periods already reconciled by stream ("fanclub" -> "2026-03" -> true):
	// informational; an upload restating one is accepted as a correction.
	SourceID   string
	ObservedAt time.Time
}

// field is a canonical statement column.
type field string

const (
	fPlatform   field = "platform"
	fPeriod     field = "period"
	fStart      field = "period_start"
	fEnd        field = "period_end"
	fCurrency   field = "currency"
	fGross      field = "gross"
	fUnits      field = "units"
	fConv       field = "conversions"
	fFees       field = "fees"
	fRefunds    field = "refunds"
	fAdjust     field = "adjustments"
	fWithhold   field = "withholding"
	fRoyalty    field = "royalty"
	fCommission field = "commission"
	fEarned     field = "earned"
	fNet        field = "net"
	fFX         field = "fx_rate"
	fDeduction  field = "deduction" // a named deduction column (fee-like or tax-like)
)

// headerAliases maps normalized header names to fields.
var headerAliases = map[string]field{}

func init() {
	for f, names := range map[field][]string{
		fPlatform:   {"platform", "store", "channel", "network", "service", "partner", "retailer", "marketplace", "source platform"},
		fPeriod:     {"period", "month", "statement period", "reporting period", "earning period", "earnings period", "sales period", "period label", "statement month", "payout period", "month ending", "period ending", "month end"},
		fStart:      {"period start", "start date", "start", "from", "period from", "period begin", "begin date"},
		fEnd:        {"period end", "end date", "end", "to", "period to", "through"},
		fCurrency:   {"currency", "ccy", "currency code", "cur"},
		fGross:      {"gross", "gross revenue", "gross sales", "gross earnings", "gross amount", "revenue", "total sales", "sales", "list sales", "sales amount", "gross receipts", "gross income", "list price sales", "total revenue", "total gross", "gross total", "sales revenue", "total sales amount"},
		fUnits:      {"units", "streams", "views", "plays", "downloads", "quantity", "units sold", "impressions", "listens"},
		fConv:       {"conversions", "referrals", "conversion count", "orders referred", "leads", "referred orders"},
		fFees:       {"fees", "fee", "platform fee", "platform fees", "service fee", "service fees", "processing fee", "processing fees", "transaction fees", "transaction fee", "payment processing"},
		fRefunds:    {"refunds", "refund", "returns", "refunded", "chargebacks", "refunds and chargebacks"},
		fAdjust:     {"adjustments", "adjustment", "corrections", "other adjustments", "adj"},
		fWithhold:   {"withholding", "withholding tax", "tax withheld", "taxes withheld", "withheld", "backup withholding", "tax withholding"},
		fRoyalty:    {"royalty", "royalties", "royalty amount", "royalty earned", "royalties earned"},
		fCommission: {"commission", "commissions", "commission earned", "commissions earned"},
		fEarned:     {"earnings", "earned", "creator earnings", "creator share", "your share", "estimated earnings", "revenue share"},
		fNet:        {"net", "net revenue", "net earnings", "net amount", "net payable", "payable", "amount payable", "payout", "net payout", "total payout", "amount due", "net proceeds"},
		fFX:         {"fx rate", "exchange rate", "conversion rate", "fx", "rate to usd", "usd rate"},
	} {
		for _, n := range names {
			headerAliases[n] = f
		}
	}
}

var deductionWord = regexp.MustCompile(`\b(tax|taxes|levy|vat|gst|deduction|deductions|surcharge|charge|charges|fee|fees|withheld|dst)\b`)
var taxWord = regexp.MustCompile(`\b(tax|taxes|levy|vat|gst|withheld|dst)\b`)

// normHeader lower-cases a header and turns everything but letters and digits into single spaces.
func normHeader(s string) string {
	s = strings.TrimPrefix(s, "\ufeff")
	var b strings.Builder
	sp := false
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if sp && b.Len() > 0 {
				b.WriteByte(' ')
			}
			sp = false
			b.WriteRune(r)
		} else {
			sp = true
		}
	}
	h := b.String()
	// Units in parentheses or currency suffixes: "gross (usd)", "net usd".
	for _, suf := range []string{" usd", " eur", " gbp", " cad", " aud", " amount"} {
		if t := strings.TrimSuffix(h, suf); t != h && headerAliases[t] != "" {
			return t
		}
	}
	return h
}

type column struct {
	f    field
	name string // normalized header
	tax  bool   // a tax-like deduction (else fee-like)
}

// ParseStatement reads one CSV statement into activity. It accepts comma, semicolon and tab
// separated files, preamble lines before the header, header aliases, and amounts written as
// "1,234.56", "$1,234.56", "1.234,56 €", "(12.00)" or "12.00-". Every bad row is reported with
// its line and reason in a *StatementError, and then nothing of the file is returned.
func ParseStatement(r io.Reader, opts StatementOptions) (*Ledger, error) {
	data, err := io.ReadAll(io.LimitReader(r, 32<<20))
	if err != nil {
		return nil, fmt.Errorf("read statement %s: %w", opts.Path, err)
	}
	fail := &StatementError{File: opts.Path}
	lines := bytes.Split(data, []byte("\n"))
	// The header is the first line naming a period and an amount.
	hdrLine := -1
	var sep rune
	for i, ln := range lines {
		if i > 20 {
			break
		}
		s := strings.TrimSpace(string(ln))
		if s == "" {
			continue
		}
		sep = detectSep(s)
		cr := csv.NewReader(strings.NewReader(s))
		cr.Comma, cr.LazyQuotes = sep, true
		rec, err := cr.Read()
		if err != nil {
			continue
		}
		hasPeriod, hasMoney := false, false
		for _, h := range rec {
			switch headerAliases[normHeader(h)] {
			case fPeriod, fStart:
				hasPeriod = true
			case fGross, fNet, fRoyalty, fCommission, fEarned:
				hasMoney = true
			}
		}
		if hasPeriod && hasMoney {
			hdrLine = i
			break
		}
	}
	if hdrLine < 0 {
		fail.Rows = append(fail.Rows, RowError{Line: 1, Reason: "no header naming a period column and an amount column (gross, net, royalty, commission or earnings)"})
		return nil, fail
	}
	cr := csv.NewReader(bytes.NewReader(bytes.Join(lines[hdrLine:], []byte("\n"))))
	cr.Comma, cr.LazyQuotes, cr.FieldsPerRecord = sep, true, -1 // values are trimmed one by one: TrimLeadingSpace would eat empty tab-separated cells
	header, err := cr.Read()
	if err != nil {
		fail.Rows = append(fail.Rows, RowError{Line: hdrLine + 1, Reason: "header unreadable: " + err.Error()})
		return nil, fail
	}
	european := sep == ';'
	cols := make([]column, len(header))
	have := map[field]bool{}
	for i, h := range header {
		n := normHeader(h)
		f := headerAliases[n]
		if f == "" && n != "" && deductionWord.MatchString(n) {
			f = fDeduction
		}
		if f != "" && f != fDeduction && f != fFees && have[f] {
			fail.Rows = append(fail.Rows, RowError{Line: hdrLine + 1, Reason: fmt.Sprintf("two columns mean %s (%q)", f, h)})
		}
		have[f] = true
		cols[i] = column{f: f, name: n, tax: f == fDeduction && taxWord.MatchString(n)}
	}
	if !have[fPeriod] && !have[fStart] {
		fail.Rows = append(fail.Rows, RowError{Line: hdrLine + 1, Reason: "missing column: period"})
	}
	if len(fail.Rows) > 0 {
		return nil, fail
	}
	platform := opts.Platform
	if dir := path.Dir(opts.Path); platform == "" && dir != "." && dir != "/" {
		platform = strings.Split(strings.TrimPrefix(dir, "/"), "/")[0] // fanclub/2026-03.csv is Fanclub's
	}
	if platform == "" {
		base := path.Base(opts.Path)
		if i := strings.IndexAny(base, "-_."); i > 0 {
			base = base[:i]
		}
		platform = base
	}
	if platform != "" && platform == strings.ToLower(platform) {
		// A name taken from a file or directory name: capitalized as a platform's name is.
		platform = strings.ToUpper(platform[:1]) + platform[1:]
	}
	defCur := opts.Currency
	if defCur == "" {
		defCur = "USD"
	}
	led := &Ledger{}
	seen := map[string]int{} // stream/period -> line
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		line, _ := cr.FieldPos(0)
		line += hdrLine
		if err != nil {
			fail.Rows = append(fail.Rows, RowError{Line: line, Reason: "unreadable row: " + err.Error()})
			continue
		}
		if blank(rec) {
			continue
		}
		a, reason := parseRow(rec, cols, european, platform, defCur)
		if reason == "skip" {
			continue
		}
		if reason != "" {
			fail.Rows = append(fail.Rows, RowError{Line: line, Reason: reason})
			continue
		}
		key := a.Stream + "/" + a.Period.Label
		if prev, dup := seen[key]; dup {
			fail.Rows = append(fail.Rows, RowError{Line: line, Reason: fmt.Sprintf("period %s of %s duplicated (also on line %d)", a.Period.Label, a.Name, prev)})
			continue
		}
		seen[key] = line
		if k := opts.Known[a.Stream]; k != "" && k != a.Currency {
			fail.Rows = append(fail.Rows, RowError{Line: line, Reason: fmt.Sprintf("currency %s differs from the %s this source's %s statements are in", a.Currency, k, a.Name)})
			continue
		}
		a.Evidence = Evidence{Kind: EvidenceStatement, Ref: fmt.Sprintf("%s#L%d", opts.Path, line), SourceID: opts.SourceID,
			ObservedAt: opts.ObservedAt, Excerpt: excerpt(strings.Join(rec, string(sep)))}
		led.stream(a.Stream, a.Name, "", KindStatement, opts.SourceID)
		led.Activity = append(led.Activity, a)
	}
	if len(fail.Rows) > 0 {
		return nil, fail
	}
	if len(led.Activity) == 0 {
		return nil, &StatementError{File: opts.Path, Rows: []RowError{{Line: hdrLine + 1, Reason: "no rows"}}}
	}
	return led, nil
}

func blank(rec []string) bool {
	for _, s := range rec {
		if strings.TrimSpace(s) != "" {
			return false
		}
	}
	return true
}

func detectSep(s string) rune {
	best, n := ',', strings.Count(s, ",")
	for _, c := range []rune{';', '\t', '|'} {
		if k := strings.Count(s, string(c)); k > n {
			best, n = c, k
		}
	}
	return best
}

// parseRow turns one row into activity; the reason is "" when it is good and "skip" for a
// totals row.
func parseRow(rec []string, cols []column, european bool, platform, defCur string) (Activity, string) {
	a := Activity{Name: platform, Deductions: map[string]int64{}}
	var startS, endS, periodS, curCol string
	feeCol := false // the platform's own fee column has an amount (not a named deduction)
	curSeen := ""
	amt := map[field]*int64{}
	var reasons []string
	for i, c := range cols {
		if i >= len(rec) || c.f == "" {
			continue
		}
		v := strings.TrimSpace(rec[i])
		switch c.f {
		case fPlatform:
			if v != "" {
				a.Name = v
			}
		case fPeriod:
			periodS = v
		case fStart:
			startS = v
		case fEnd:
			endS = v
		case fCurrency:
			curCol = strings.ToUpper(v)
		case fFX:
			if v != "" {
				if _, ok := new(big.Rat).SetString(strings.ReplaceAll(v, ",", ".")); !ok {
					reasons = append(reasons, fmt.Sprintf("%s %q is not a number", c.name, v))
				} else {
					a.FXRate = strings.ReplaceAll(v, ",", ".")
				}
			}
		case fUnits, fConv:
			if v == "" {
				continue
			}
			n, err := parseCount(v)
			if err != nil {
				reasons = append(reasons, fmt.Sprintf("%s %q: %v", c.name, v, err))
				continue
			}
			if c.f == fUnits {
				a.Units = &n
			} else {
				a.Conversions = &n
			}
		default:
			if v == "" || v == "-" || v == "—" {
				continue
			}
			cents, cur, err := parseMoney(v, european)
			if err != nil {
				reasons = append(reasons, fmt.Sprintf("%s %q: %v", c.name, v, err))
				continue
			}
			if cur != "" {
				if curSeen != "" && curSeen != cur {
					reasons = append(reasons, fmt.Sprintf("amounts in two currencies (%s and %s)", curSeen, cur))
				}
				curSeen = cur
			}
			switch c.f {
			case fFees, fDeduction:
				if cents < 0 {
					cents = -cents
				}
				feeCol = feeCol || (c.f == fFees && cents != 0)
				if c.f == fFees || !c.tax {
					a.Fees += cents
				} else {
					a.Withholding += cents
				}
				a.Deductions[c.name] += cents
			case fWithhold:
				if cents < 0 {
					cents = -cents
				}
				a.Withholding += cents
				a.Deductions[c.name] += cents
			case fRefunds:
				if cents < 0 {
					cents = -cents
				}
				a.Refunds += cents
			default:
				v := cents
				if amt[c.f] != nil {
					v += *amt[c.f]
				}
				amt[c.f] = &v
			}
		}
	}
	if low := strings.ToLower(periodS + startS); strings.HasPrefix(low, "total") || strings.HasPrefix(low, "grand total") || strings.HasPrefix(low, "sum") {
		return a, "skip"
	}
	if len(reasons) > 0 {
		return a, strings.Join(reasons, "; ")
	}
	p, err := parsePeriod(periodS, startS, endS)
	if err != nil {
		return a, err.Error()
	}
	a.Period = p
	a.Stream = StreamKey(a.Name)
	if a.Stream == "" {
		return a, "no platform name (no platform column and none in the file name)"
	}
	switch {
	case curCol != "":
		if len(curCol) != 3 {
			return a, fmt.Sprintf("currency %q is not an ISO 4217 code", curCol)
		}
		if curSeen != "" && curSeen != curCol {
			return a, fmt.Sprintf("amounts in %s but the currency column says %s", curSeen, curCol)
		}
		a.Currency = curCol
	case curSeen != "":
		a.Currency = curSeen
	default:
		a.Currency = defCur
	}
	a.Gross = amt[fGross]
	a.Net = amt[fNet]
	if adj := amt[fAdjust]; adj != nil {
		a.Adjustments = *adj
	}
	a.Adjustments -= a.Refunds
	switch {
	case amt[fRoyalty] != nil:
		a.Model, a.Earned = ModelRoyalty, amt[fRoyalty]
	case a.Conversions != nil || amt[fCommission] != nil:
		a.Model, a.Earned = ModelAffiliate, amt[fCommission]
		if a.Earned == nil {
			a.Earned = amt[fEarned]
		}
	case a.Units != nil && !feeCol && (amt[fEarned] != nil || a.Gross != nil):
		a.Model, a.Earned = ModelPerUnit, amt[fEarned]
		if a.Earned == nil {
			a.Earned = a.Gross
		}
	default:
		a.Model = ModelFee
		if e := amt[fEarned]; e != nil {
			a.Earned = e
		}
	}
	if a.Model != ModelFee && a.Model != ModelRoyalty && a.Gross == nil && a.Earned != nil {
		a.Gross = ptr(*a.Earned)
	}
	if a.Model == ModelFee && a.Gross != nil && a.Earned == nil {
		a.Earned = ptr(*a.Gross - a.Fees)
	}
	if a.Model == ModelRoyalty && a.Gross != nil && a.Fees == 0 {
		a.Fees = *a.Gross - *a.Earned // the platform's share
	}
	if a.Gross != nil && *a.Gross < 0 {
		return a, fmt.Sprintf("negative gross %s", money(a.Currency, *a.Gross))
	}
	if a.Gross == nil && a.Net == nil && a.Earned == nil {
		return a, "no amount: gross, net, royalty, commission and earnings are all empty"
	}
	if a.Net == nil && a.Earned != nil {
		a.Net = ptr(*a.Earned + a.Adjustments - a.Withholding)
		if a.Model == ModelFee {
			a.Net = ptr(*a.Earned + a.Adjustments - a.Withholding)
		}
	}
	return a, ""
}
