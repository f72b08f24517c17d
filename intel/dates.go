package intel

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// textDate is a calendar date written in text.
type textDate struct {
	t       time.Time
	hasYear bool
	start   int
}

var (
	monthNames = `(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)`
	dateRe     = regexp.MustCompile(`(?i)\b(?:` +
		monthNames + `\.?\s+(\d{1,2})(?:st|nd|rd|th)?(?:,?\s+(\d{4}))?` + // November 30, 2026 / Nov 30
		`|(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?` + monthNames + `\.?,?(?:\s+(\d{4}))?` + // 30 November 2026
		`|(\d{4})-(\d{2})-(\d{2})` + // 2026-11-30
		`|(\d{1,2})/(\d{1,2})/(\d{4})` + // 11/30/2026 (US), 30/11/2026 when the first is over 12
		`|(\d{1,2})\.(\d{1,2})\.(\d{4})` + // 30.11.2026
		`)\b`)
)

func monthOf(s string) time.Month {
	s = strings.ToLower(s)
	for i, m := range []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"} {
		if strings.HasPrefix(s, m) {
			return time.Month(i + 1)
		}
	}
	return 0
}

// findDates returns the dates in a line. A date without a year takes the year of the next date
// in the line that has one, else the year that puts it nearest to ref.
func findDates(line string, ref time.Time) []textDate {
	if !strings.ContainsAny(line, "0123456789") {
		return nil
	}
	var out []textDate
	for _, m := range dateRe.FindAllStringSubmatchIndex(line, -1) {
		g := func(i int) string {
			if m[2*i] < 0 {
				return ""
			}
			return line[m[2*i]:m[2*i+1]]
		}
		atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
		var y, d int
		var mo time.Month
		switch {
		case g(1) != "":
			mo, d, y = monthOf(g(1)), atoi(g(2)), atoi(g(3))
		case g(5) != "":
			d, mo, y = atoi(g(4)), monthOf(g(5)), atoi(g(6))
		case g(7) != "":
			y, mo, d = atoi(g(7)), time.Month(atoi(g(8))), atoi(g(9))
		case g(10) != "":
			a, b := atoi(g(10)), atoi(g(11))
			if a > 12 {
				a, b = b, a
			}
			mo, d, y = time.Month(a), b, atoi(g(12))
		case g(13) != "":
			d, mo, y = atoi(g(13)), time.Month(atoi(g(14))), atoi(g(15))
		}
		if mo < 1 || mo > 12 || d < 1 || d > 31 || (y != 0 && (y < 1990 || y > 2100)) {
			continue
		}
		out = append(out, textDate{t: time.Date(y, mo, d, 0, 0, 0, 0, time.UTC), hasYear: y != 0, start: m[0]})
	}
	for i := range out {
		if out[i].hasYear {
			continue
		}
		y := 0
		for j := i + 1; j < len(out); j++ {
			if out[j].hasYear {
				y = out[j].t.Year()
				if out[i].t.Month() > out[j].t.Month() {
					y-- // "Dec 15 - Jan 14, 2027"
				}
				break
			}
		}
		if y == 0 {
			y = ref.Year()
			c := time.Date(y, out[i].t.Month(), out[i].t.Day(), 0, 0, 0, 0, time.UTC)
			if c.Sub(ref) > 183*24*time.Hour {
				y--
			} else if ref.Sub(c) > 183*24*time.Hour {
				y++
			}
		}
		out[i].t = time.Date(y, out[i].t.Month(), out[i].t.Day(), 0, 0, 0, 0, time.UTC)
	}
	return out
}
