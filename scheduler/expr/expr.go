// Package expr reads the schedule expressions of EventBridge Scheduler
// and of EventBridge scheduled rules and computes their occurrences:
//
//	at(2026-01-01T09:30:00)              once, in the schedule's time zone (Scheduler only)
//	rate(5 minutes)                      every value unit: minute(s), hour(s), day(s)
//	cron(0/15 8-17 ? * MON-FRI *)        minutes hours day-of-month month day-of-week year
//
// Cron fields take `,` `-` `*` `/`, month names JAN-DEC, weekday names
// SUN-SAT (1 = SUN .. 7 = SAT), `?` in exactly one of day-of-month and
// day-of-week; in day-of-month `L` (the last day of the month), `nW` (the
// weekday, Monday to Friday, nearest day n, never in another month: 1W
// on a Saturday is Monday the 3rd) and `LW` (the month's last weekday);
// in day-of-week `dL` (the month's last weekday d: 6L is its last
// Friday), `L` alone (the week's last day: every Saturday) and `d#n` (the n-th
// weekday d of the month); years 1970..2199. nW of a day the month lacks
// (31W in April) matches nothing that month. Nothing is faster than one
// minute. Cron and at() are read in the expression's time zone
// (IANA; default UTC): a local time that does not exist (the hour skipped
// when daylight saving time starts) is skipped, a time that occurs twice
// runs once (its first occurrence).
//
// https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html,
// https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-scheduled-rule-pattern.html
package expr

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Kind is the kind of an expression.
type Kind int

// The kinds.
const (
	At Kind = iota
	Rate
	Cron
)

// Expr is a parsed schedule expression. It is immutable.
type Expr struct {
	Kind Kind
	// Src is the expression as given.
	Src string
	at  time.Time     // At
	per time.Duration // Rate
	loc *time.Location
	// Cron: the allowed values of each field.
	min, hour, month [60]bool
	dom              [32]bool
	lastDOM          bool
	domW             int     // nW: the weekday nearest day n (0: none)
	lastW            bool    // LW: the month's last weekday
	lastDOW          int     // dL: the month's last weekday d (0: none)
	dow              [8]bool // 1 = Sunday
	nth              [8]int  // dow#n: the n-th such weekday (0: any)
	domAny, dowAny   bool    // the field is ? (or *)
	yearLo, yearHi   int
	years            map[int]bool
}

// Parse reads s in the time zone tz (an IANA name; "" is UTC). Errors
// say what is wrong with the expression or the zone.
func Parse(s, tz string) (*Expr, error) {
	loc, err := Location(tz)
	if err != nil {
		return nil, err
	}
	return parseIn(s, loc)
}

// ParseStored is Parse for an expression already stored: a time zone of
// "Local", which runnel accepted before it was refused, keeps meaning the
// host's zone, so that such a schedule still loads and fires (refusing it
// at load made it a ghost: never fired, not listed, not deletable, its
// name taken). Anything else is Parse's.
func ParseStored(s, tz string) (*Expr, error) {
	if tz == "Local" {
		return parseIn(s, time.Local)
	}
	return Parse(s, tz)
}

func parseIn(s string, loc *time.Location) (*Expr, error) {
	e := &Expr{Src: s, loc: loc}
	body, kind := "", ""
	if i := strings.IndexByte(s, '('); i > 0 && strings.HasSuffix(s, ")") {
		kind, body = s[:i], s[i+1:len(s)-1]
	}
	switch kind {
	case "at":
		t, err := time.ParseInLocation("2006-01-02T15:04:05", body, loc)
		if err != nil {
			return nil, fmt.Errorf("at() needs yyyy-mm-ddThh:mm:ss, got %q", body)
		}
		e.Kind, e.at = At, t
		return e, nil
	case "rate":
		return e, e.parseRate(body)
	case "cron":
		return e, e.parseCron(body)
	}
	return nil, fmt.Errorf("expression must be at(...), rate(...) or cron(...), got %q", s)
}

// Location returns the time zone tz names: an IANA name such as
// "America/New_York" ("" is UTC). "Local" (Go's name for the host's zone,
// which AWS does not know) and unknown names are errors. The zone
// database is compiled into the binary (cmd/runnel imports time/tzdata),
// so a host without /usr/share/zoneinfo knows every name.
func Location(tz string) (*time.Location, error) {
	if tz == "" {
		return time.UTC, nil
	}
	if tz == "Local" {
		return nil, fmt.Errorf("invalid time zone %q: an IANA name such as America/New_York is required", tz)
	}
	l, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("invalid time zone %q: an IANA name such as America/New_York is required", tz)
	}
	return l, nil
}

func (e *Expr) parseRate(body string) error {
	e.Kind = Rate
	f := strings.Fields(body)
	if len(f) != 2 {
		return fmt.Errorf("rate() needs a value and a unit, got %q", body)
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n < 1 {
		return fmt.Errorf("rate() value must be a positive integer, got %q", f[0])
	}
	units := map[string]time.Duration{"minute": time.Minute, "minutes": time.Minute, "hour": time.Hour,
		"hours": time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour}
	u, ok := units[f[1]]
	if !ok {
		return fmt.Errorf("rate() unit must be minute(s), hour(s) or day(s), got %q", f[1])
	}
	if (n == 1) != !strings.HasSuffix(f[1], "s") {
		return fmt.Errorf("rate() unit must be singular for 1 and plural otherwise, got %q", body)
	}
	e.per = time.Duration(n) * u
	return nil
}

var monthNames = map[string]int{"JAN": 1, "FEB": 2, "MAR": 3, "APR": 4, "MAY": 5, "JUN": 6, "JUL": 7, "AUG": 8, "SEP": 9, "OCT": 10, "NOV": 11, "DEC": 12}
var dayNames = map[string]int{"SUN": 1, "MON": 2, "TUE": 3, "WED": 4, "THU": 5, "FRI": 6, "SAT": 7}

func (e *Expr) parseCron(body string) error {
	e.Kind = Cron
	f := strings.Fields(body)
	if len(f) != 6 {
		return fmt.Errorf("cron() needs 6 fields (minutes hours day-of-month month day-of-week year), got %d", len(f))
	}
	if (f[2] == "?") == (f[4] == "?") {
		return fmt.Errorf("cron(): exactly one of day-of-month and day-of-week must be ?")
	}
	var hours, months [60]bool
	var years [2200]bool
	if err := setField(e.min[:], f[0], 0, 59, nil, "minutes"); err != nil {
		return err
	}
	if err := setField(hours[:], f[1], 0, 23, nil, "hours"); err != nil {
		return err
	}
	e.hour = hours
	if err := setField(months[:], f[3], 1, 12, monthNames, "month"); err != nil {
		return err
	}
	e.month = months
	e.domAny, e.dowAny = f[2] == "?" || f[2] == "*", f[4] == "?" || f[4] == "*"
	switch n, isW := strings.CutSuffix(f[2], "W"); {
	case f[2] == "L":
		e.lastDOM = true
	case f[2] == "LW":
		e.lastW = true
	case isW:
		d, err := strconv.Atoi(n)
		if err != nil || d < 1 || d > 31 {
			return fmt.Errorf("cron(): day-of-month %q: want nW with n 1..31", f[2])
		}
		e.domW = d
	case f[2] != "?":
		if err := setField(e.dom[:], f[2], 1, 31, nil, "day-of-month"); err != nil {
			return err
		}
	}
	if f[4] == "L" {
		e.dow[7] = true // the week's last day: every Saturday
	} else if d, isL := strings.CutSuffix(f[4], "L"); isL {
		wd, err := fieldValue(d, dayNames)
		if err != nil || wd < 1 || wd > 7 {
			return fmt.Errorf("cron(): day-of-week %q: want dL with d 1..7 (or SUN..SAT)", f[4])
		}
		e.dow[wd], e.lastDOW = true, wd
	} else if d, n, ok := strings.Cut(f[4], "#"); ok {
		wd, err1 := fieldValue(d, dayNames)
		k, err2 := strconv.Atoi(n)
		if err1 != nil || err2 != nil || wd < 1 || wd > 7 || k < 1 || k > 5 {
			return fmt.Errorf("cron(): day-of-week %q: want d#n with d 1..7 (or SUN..SAT) and n 1..5", f[4])
		}
		e.dow[wd], e.nth[wd] = true, k
	} else if f[4] != "?" {
		if err := setField(e.dow[:], f[4], 1, 7, dayNames, "day-of-week"); err != nil {
			return err
		}
	}
	if err := setField(years[:], f[5], 1970, 2199, nil, "year"); err != nil {
		return err
	}
	e.years = map[int]bool{}
	for y := 1970; y <= 2199; y++ {
		if years[y] {
			e.years[y] = true
			if e.yearLo == 0 {
				e.yearLo = y
			}
			e.yearHi = y
		}
	}
	return nil
}

func fieldValue(s string, names map[string]int) (int, error) {
	if v, ok := names[strings.ToUpper(s)]; ok {
		return v, nil
	}
	return strconv.Atoi(s)
}

// setField marks the values a cron field allows in set: * ? a a-b a/n
// a-b/n *_/n, comma-separated.
func setField(set []bool, spec string, lo, hi int, names map[string]int, what string) error {
	bad := func() error {
		return fmt.Errorf("cron(): %s field %q is not valid (values %d..%d; , - * / allowed)", what, spec, lo, hi)
	}
	for _, part := range strings.Split(spec, ",") {
		rng, stepS, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepS)
			if err != nil || n < 1 {
				return bad()
			}
			step = n
		}
		a, b := lo, hi
		switch {
		case rng == "*" || rng == "?":
		case strings.Contains(rng, "-"):
			x, y, _ := strings.Cut(rng, "-")
			var err1, err2 error
			a, err1 = fieldValue(x, names)
			b, err2 = fieldValue(y, names)
			if err1 != nil || err2 != nil {
				return bad()
			}
		default:
			v, err := fieldValue(rng, names)
			if err != nil {
				return bad()
			}
			a, b = v, v
			if hasStep {
				b = hi
			}
		}
		if a < lo || b > hi || a > b {
			return bad()
		}
		for v := a; v <= b; v += step {
			set[v] = true
		}
	}
	return nil
}

// Location is the expression's time zone.
func (e *Expr) Location() *time.Location { return e.loc }

// Next returns the first occurrence strictly after from, and false when
// there is none. A rate's occurrences are from + the rate: from is the
// previous occurrence (or the start).
func (e *Expr) Next(from time.Time) (time.Time, bool) {
	switch e.Kind {
	case At:
		return e.at, e.at.After(from)
	case Rate:
		return from.Add(e.per), true
	}
	t := from.In(e.loc).Truncate(time.Minute).Add(time.Minute)
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, e.loc)
	for day.Year() <= e.yearHi {
		y, m, d := day.Date()
		if !e.years[y] || !e.month[m] {
			day = time.Date(y, m+1, 1, 0, 0, 0, 0, e.loc)
			continue
		}
		if e.dayMatches(day) {
			for h := 0; h < 24; h++ {
				if !e.hour[h] {
					continue
				}
				for mi := 0; mi < 60; mi++ {
					if !e.min[mi] {
						continue
					}
					c := time.Date(y, m, d, h, mi, 0, 0, e.loc)
					if c.Hour() != h || c.Minute() != mi || c.Day() != d {
						continue // does not exist on this day (DST)
					}
					if c.After(from) && !c.Before(t) {
						return c, true
					}
				}
			}
		}
		day = time.Date(y, m, d+1, 0, 0, 0, 0, e.loc)
	}
	return time.Time{}, false
}

// dayMatches applies day-of-month and day-of-week to a day.
func (e *Expr) dayMatches(day time.Time) bool {
	y, m, d := day.Date()
	last := time.Date(y, m+1, 0, 0, 0, 0, 0, e.loc).Day()
	if !e.domAny || e.lastDOM {
		switch {
		case e.lastDOM:
			return d == last
		case e.lastW:
			return d == nearestWeekday(y, m, last, last, e.loc)
		case e.domW > 0:
			return e.domW <= last && d == nearestWeekday(y, m, e.domW, last, e.loc)
		}
		return e.dom[d]
	}
	if e.dowAny {
		return true
	}
	wd := int(day.Weekday()) + 1
	if !e.dow[wd] {
		return false
	}
	if e.lastDOW != 0 {
		return d+7 > last // no such weekday later this month
	}
	return e.nth[wd] == 0 || (d-1)/7+1 == e.nth[wd]
}

// nearestWeekday is the day, Monday to Friday, of month m nearest day n
// (last: the month's last day), never outside the month: a Saturday goes
// back to Friday unless n is the 1st (then Monday the 3rd), a Sunday on
// to Monday unless n is the last day (then Friday before).
func nearestWeekday(y int, m time.Month, n, last int, loc *time.Location) int {
	switch time.Date(y, m, n, 12, 0, 0, 0, loc).Weekday() {
	case time.Saturday:
		if n == 1 {
			return 3
		}
		return n - 1
	case time.Sunday:
		if n == last {
			return n - 2
		}
		return n + 1
	}
	return n
}
