package creator

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"math/big"
	"strings"
)

// termAliases maps normalized terms-file headers to fields.
var termAliases = map[string]TermField{
	"fee": TermFeeBPS, "fee rate": TermFeeBPS, "platform fee": TermFeeBPS, "fees": TermFeeBPS, "fee percent": TermFeeBPS,
	"royalty": TermRoyaltyBPS, "royalty rate": TermRoyaltyBPS, "royalty share": TermRoyaltyBPS, "revenue share": TermRoyaltyBPS,
	"rate per 1000": TermUnitRate, "rate per thousand": TermUnitRate, "rpm": TermUnitRate, "per 1000": TermUnitRate, "rate per 1k": TermUnitRate,
	"commission": TermCommission, "commission per conversion": TermCommission, "cpa": TermCommission, "bounty": TermCommission,
	"withholding": TermWithholdingBPS, "withholding rate": TermWithholdingBPS, "tax withholding": TermWithholdingBPS,
	"payout day": TermPayoutDay, "pay day": TermPayoutDay, "payment day": TermPayoutDay,
}

// ParseTerms reads a terms file: the published or contracted terms of the creator's platforms,
// one row per platform (and effective month, when terms changed by contract). Columns: platform,
// effective (optional), and any of fee rate ("8%"), royalty rate ("70%"), rate per 1000
// ("$4.00"), commission per conversion ("$12.00"), withholding rate ("2%"), payout day ("15").
func ParseTerms(r io.Reader, opts StatementOptions) ([]TermChange, error) {
	data, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return nil, err
	}
	first, _, _ := bytes.Cut(data, []byte("\n"))
	cr := csv.NewReader(bytes.NewReader(data))
	cr.Comma, cr.LazyQuotes, cr.FieldsPerRecord = detectSep(string(first)), true, -1
	fail := &StatementError{File: opts.Path}
	hdr, err := cr.Read()
	if err != nil {
		return nil, &StatementError{File: opts.Path, Rows: []RowError{{Line: 1, Reason: "header unreadable"}}}
	}
	european := cr.Comma == ';'
	type col struct {
		f    TermField
		role string
	}
	cols := make([]col, len(hdr))
	hasPlatform := false
	for i, h := range hdr {
		n := normHeader(h)
		switch {
		case headerAliases[n] == fPlatform || n == "platform name" || n == "sponsor":
			cols[i].role, hasPlatform = "platform", true
		case n == "effective" || n == "effective from" || n == "from" || n == "effective month" || n == "since":
			cols[i].role = "effective"
		default:
			cols[i].f = termAliases[n]
		}
	}
	if !hasPlatform {
		return nil, &StatementError{File: opts.Path, Rows: []RowError{{Line: 1, Reason: "missing column: platform"}}}
	}
	var out []TermChange
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			fail.Rows = append(fail.Rows, RowError{Line: line, Reason: err.Error()})
			continue
		}
		if blank(rec) {
			continue
		}
		var platform, eff string
		var row []TermChange
		for i, c := range cols {
			if i >= len(rec) {
				break
			}
			v := strings.TrimSpace(rec[i])
			switch {
			case c.role == "platform":
				platform = v
			case c.role == "effective":
				if v != "" {
					p, err := parsePeriod(v, "", "")
					if err != nil {
						fail.Rows = append(fail.Rows, RowError{Line: line, Reason: err.Error()})
					}
					eff = p.Label
				}
			case c.f != "" && v != "":
				n, err := termValue(c.f, v, european)
				if err != nil {
					fail.Rows = append(fail.Rows, RowError{Line: line, Reason: fmt.Sprintf("%s %q: %v", hdr[i], v, err)})
					continue
				}
				row = append(row, TermChange{Field: c.f, Value: n})
			}
		}
		key := StreamKey(platform)
		if key == "" {
			fail.Rows = append(fail.Rows, RowError{Line: line, Reason: "no platform"})
			continue
		}
		for _, t := range row {
			t.Stream, t.Effective = key, eff
			t.Evidence = Evidence{Kind: EvidenceContract, Ref: fmt.Sprintf("%s#L%d", opts.Path, line), SourceID: opts.SourceID,
				ObservedAt: opts.ObservedAt, Excerpt: excerpt(strings.Join(rec, string(cr.Comma)))}
			out = append(out, t)
		}
	}
	if len(fail.Rows) > 0 {
		return nil, fail
	}
	return out, nil
}

// termValue reads a term: a percentage to basis points, a rate per 1,000 to hundredths of a
// cent, a commission to cents, a day to its number.
func termValue(f TermField, v string, european bool) (int64, error) {
	switch f {
	case TermFeeBPS, TermRoyaltyBPS, TermWithholdingBPS:
		return percentBPS(v)
	case TermUnitRate:
		return rateHundredths(v)
	case TermCommission:
		c, _, err := parseMoney(v, european)
		return c, err
	case TermPayoutDay:
		n, err := parseCount(v)
		if err == nil && (n < 1 || n > 28) {
			err = fmt.Errorf("day %d outside 1..28", n)
		}
		return n, err
	}
	return 0, fmt.Errorf("unknown term")
}

// percentBPS reads "8%", "8.25 %" or "0.0825" as basis points.
func percentBPS(v string) (int64, error) {
	s := strings.TrimSpace(strings.ReplaceAll(v, ",", "."))
	pct := strings.HasSuffix(s, "%")
	s = strings.TrimSpace(strings.TrimSuffix(s, "%"))
	r, ok := new(big.Rat).SetString(s)
	if !ok || r.Sign() < 0 {
		return 0, fmt.Errorf("not a rate")
	}
	if pct {
		r.Mul(r, big.NewRat(100, 1))
	} else {
		r.Mul(r, big.NewRat(10000, 1))
	}
	if !r.IsInt() {
		return 0, fmt.Errorf("finer than a basis point")
	}
	return r.Num().Int64(), nil
}

// rateHundredths reads a money rate such as "$4.00" or "3.875" as hundredths of a cent.
func rateHundredths(v string) (int64, error) {
	s := strings.TrimSpace(v)
	for _, c := range curSymbols {
		s = strings.ReplaceAll(s, c.sym, "")
	}
	s = strings.TrimSpace(strings.ReplaceAll(s, ",", "."))
	r, ok := new(big.Rat).SetString(s)
	if !ok || r.Sign() < 0 {
		return 0, fmt.Errorf("not a rate")
	}
	r.Mul(r, big.NewRat(10000, 1))
	if !r.IsInt() {
		return 0, fmt.Errorf("finer than a hundredth of a cent")
	}
	return r.Num().Int64(), nil
}

// formatRate writes hundredths of a cent per 1,000 units as dollars ("$4.00", "$3.875").
func formatRate(h int64) string {
	s := fmt.Sprintf("%d.%04d", h/10000, h%10000)
	s = strings.TrimRight(s, "0")
	if i := strings.IndexByte(s, '.'); len(s)-i < 3 {
		s += strings.Repeat("0", 3-(len(s)-i))
	}
	return s
}

// formatBPS writes basis points as a percentage ("8%", "8.25%").
func formatBPS(b int64) string {
	s := fmt.Sprintf("%d.%02d", b/100, b%100)
	s = strings.TrimSuffix(strings.TrimSuffix(strings.TrimRight(s, "0"), "."), ".")
	return s + "%"
}
