package creator

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

func parseCount(s string) (int64, error) {
	s = strings.Map(func(r rune) rune {
		if r == ',' || r == '.' || r == ' ' || r == '\u00a0' || r == '\u202f' || r == '\'' {
			return -1
		}
		return r
	}, s)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, errors.New("not a whole number")
	}
	return n, nil
}

var curSymbols = []struct{ sym, code string }{
	{"US$", "USD"}, {"CA$", "CAD"}, {"A$", "AUD"}, {"$", "USD"}, {"€", "EUR"}, {"£", "GBP"}, {"¥", "JPY"},
}

var codeRe = regexp.MustCompile(`\b([A-Z]{3})\b`)

// parseMoney reads an amount to exact cents, with the currency its symbol or code names ("" when
// none). european prefers a decimal comma when only commas appear.
func parseMoney(s string, european bool) (int64, string, error) {
	orig := s
	s = strings.TrimSpace(s)
	neg := false
	if strings.HasPrefix(s, "(") && strings.HasSuffix(s, ")") {
		neg, s = true, strings.TrimSpace(s[1:len(s)-1])
	}
	cur := ""
	for _, c := range curSymbols {
		if strings.Contains(s, c.sym) {
			cur, s = c.code, strings.ReplaceAll(s, c.sym, "")
			break
		}
	}
	if m := codeRe.FindStringSubmatch(strings.ToUpper(s)); m != nil && cur == "" {
		cur = m[1]
		s = strings.TrimSpace(regexp.MustCompile(`(?i)\b`+m[1]+`\b`).ReplaceAllString(s, ""))
	}
	s = strings.Map(func(r rune) rune {
		if r == ' ' || r == '\u00a0' || r == '\u202f' || r == '\'' {
			return -1
		}
		if r == '−' || r == '–' {
			return '-'
		}
		return r
	}, s)
	if strings.HasPrefix(s, "-") {
		neg, s = !neg, s[1:]
	} else if strings.HasSuffix(s, "-") {
		neg, s = !neg, s[:len(s)-1]
	} else if strings.HasPrefix(s, "+") {
		s = s[1:]
	}
	if strings.HasPrefix(s, "-") { // "$-12.00" after the symbol went
		neg, s = !neg, s[1:]
	}
	if s == "" {
		return 0, "", fmt.Errorf("not an amount")
	}
	dot, comma := strings.LastIndexByte(s, '.'), strings.LastIndexByte(s, ',')
	var intPart, frac string
	switch {
	case dot >= 0 && comma >= 0:
		d := dot
		if comma > dot {
			d = comma
		}
		intPart, frac = s[:d], s[d+1:]
	case comma >= 0:
		after := s[comma+1:]
		if strings.Count(s, ",") == 1 && (european || len(after) <= 2) {
			intPart, frac = s[:comma], after
		} else {
			intPart = s
		}
	case dot >= 0:
		after := s[dot+1:]
		if strings.Count(s, ".") > 1 || (european && len(after) == 3) {
			intPart = s
		} else {
			intPart, frac = s[:dot], after
		}
	default:
		intPart = s
	}
	intPart = strings.NewReplacer(",", "", ".", "").Replace(intPart)
	if intPart == "" {
		intPart = "0"
	}
	if len(frac) > 2 {
		return 0, "", fmt.Errorf("more than two decimals in %q", orig)
	}
	for len(frac) < 2 {
		frac += "0"
	}
	for _, r := range intPart + frac {
		if r < '0' || r > '9' {
			return 0, "", fmt.Errorf("not an amount")
		}
	}
	n, err := strconv.ParseInt(intPart+frac, 10, 64)
	if err != nil {
		return 0, "", fmt.Errorf("not an amount")
	}
	if neg {
		n = -n
	}
	return n, cur, nil
}

var monthNames = map[string]time.Month{}

func init() {
	for m := time.January; m <= time.December; m++ {
		n := strings.ToLower(m.String())
		monthNames[n] = m
		monthNames[n[:3]] = m
	}
	monthNames["sept"] = time.September
}

var (
	reYM      = regexp.MustCompile(`^(\d{4})[-/.](\d{1,2})$`)
	reMY      = regexp.MustCompile(`^(\d{1,2})[-/.](\d{4})$`)
	reNameY   = regexp.MustCompile(`^([a-z]+)\.?[\s,\-/]*(\d{4}|\d{2})$`)
	reYName   = regexp.MustCompile(`^(\d{4})[\s\-/]*([a-z]+)$`)
	reRange   = regexp.MustCompile(`^(.+?)\s*(?:\.\.|–|—|\bto\b|\bthrough\b|\s-\s)\s*(.+)$`)
	reISODate = regexp.MustCompile(`^(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ].*)?$`)
	reSlash   = regexp.MustCompile(`^(\d{1,2})[/.](\d{1,2})[/.](\d{4})$`)
)

// parsePeriod reads a calendar month from a period cell or from start and end dates.
func parsePeriod(period, start, end string) (Period, error) {
	if period != "" {
		if m := reRange.FindStringSubmatch(strings.TrimSpace(period)); m != nil && !reYM.MatchString(period) {
			return periodFromDates(m[1], m[2])
		}
		if p, ok := monthLabel(period); ok {
			return p, nil
		}
		if start == "" {
			if d, ok := oneDate(period); ok {
				return Month(d), nil
			}
			return Period{}, fmt.Errorf("period %q unreadable (want a month such as 2026-03 or March 2026)", period)
		}
	}
	if start == "" {
		return Period{}, errors.New("no period")
	}
	if end == "" {
		if p, ok := monthLabel(start); ok {
			return p, nil
		}
		if d, ok := oneDate(start); ok {
			return Month(d), nil
		}
		return Period{}, fmt.Errorf("period start %q unreadable", start)
	}
	return periodFromDates(start, end)
}

func monthLabel(s string) (Period, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	mk := func(y, m int) (Period, bool) {
		if y < 100 {
			y += 2000
		}
		if m < 1 || m > 12 || y < 1990 || y > 2100 {
			return Period{}, false
		}
		return Month(time.Date(y, time.Month(m), 1, 0, 0, 0, 0, time.UTC)), true
	}
	if m := reYM.FindStringSubmatch(s); m != nil {
		y, _ := strconv.Atoi(m[1])
		mo, _ := strconv.Atoi(m[2])
		return mk(y, mo)
	}
	if m := reMY.FindStringSubmatch(s); m != nil {
		y, _ := strconv.Atoi(m[2])
		mo, _ := strconv.Atoi(m[1])
		return mk(y, mo)
	}
	if m := reNameY.FindStringSubmatch(s); m != nil {
		if mo, ok := monthNames[m[1]]; ok {
			y, _ := strconv.Atoi(m[2])
			return mk(y, int(mo))
		}
	}
	if m := reYName.FindStringSubmatch(s); m != nil {
		if mo, ok := monthNames[m[2]]; ok {
			y, _ := strconv.Atoi(m[1])
			return mk(y, int(mo))
		}
	}
	return Period{}, false
}

// dates returns the readings of a date: ISO, or d/m/y and m/d/y when both are possible.
func dates(s string) []time.Time {
	s = strings.TrimSpace(s)
	var out []time.Time
	add := func(y, m, d int) {
		t := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
		if m >= 1 && m <= 12 && d >= 1 && t.Day() == d {
			out = append(out, t)
		}
	}
	if m := reISODate.FindStringSubmatch(s); m != nil {
		y, _ := strconv.Atoi(m[1])
		mo, _ := strconv.Atoi(m[2])
		d, _ := strconv.Atoi(m[3])
		add(y, mo, d)
		return out
	}
	if m := reSlash.FindStringSubmatch(s); m != nil {
		a, _ := strconv.Atoi(m[1])
		b, _ := strconv.Atoi(m[2])
		y, _ := strconv.Atoi(m[3])
		add(y, a, b) // m/d/y
		if a != b {
			add(y, b, a) // d/m/y
		}
		return out
	}
	for _, layout := range []string{"January 2, 2006", "Jan 2, 2006", "2 January 2006", "2 Jan 2006", "Jan 2 2006", "02-Jan-2006"} {
		if t, err := time.Parse(layout, s); err == nil {
			return []time.Time{t}
		}
	}
	return nil
}

func oneDate(s string) (time.Time, bool) {
	ds := dates(s)
	if len(ds) == 0 {
		return time.Time{}, false
	}
	// d/m and m/d readings of a first-of-month date share the month only when unambiguous.
	for _, d := range ds[1:] {
		if d.Month() != ds[0].Month() {
			return time.Time{}, false
		}
	}
	return ds[0], true
}

// periodFromDates reads a start and an end date that must bound one calendar month (the end
// inclusive, the month's last day, or exclusive, the next month's first).
func periodFromDates(start, end string) (Period, error) {
	for _, s := range dates(start) {
		for _, e := range dates(end) {
			if s.Day() != 1 {
				continue
			}
			p := Month(s)
			if e.Equal(p.End.AddDate(0, 0, -1)) || e.Equal(p.End) {
				return p, nil
			}
		}
	}
	return Period{}, fmt.Errorf("period %s to %s is not one calendar month", start, end)
}
