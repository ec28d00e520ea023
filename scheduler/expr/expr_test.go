package expr

import (
	"testing"
	"time"
)

func mustParse(t *testing.T, s, tz string) *Expr {
	t.Helper()
	e, err := Parse(s, tz)
	if err != nil {
		t.Fatalf("Parse(%q, %q): %v", s, tz, err)
	}
	return e
}

func TestNextOccurrences(t *testing.T) {
	utc := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	cases := []struct {
		expr, tz, from string
		want           []string // successive occurrences
	}{
		{"rate(5 minutes)", "", "2026-01-01T00:00:00Z", []string{"2026-01-01T00:05:00Z", "2026-01-01T00:10:00Z"}},
		{"rate(1 day)", "", "2026-01-01T10:00:00Z", []string{"2026-01-02T10:00:00Z"}},
		{"cron(0/15 * * * ? *)", "", "2026-01-01T00:07:00Z", []string{"2026-01-01T00:15:00Z", "2026-01-01T00:30:00Z"}},
		{"cron(0 9 ? * MON-FRI *)", "", "2026-01-02T10:00:00Z", []string{"2026-01-05T09:00:00Z", "2026-01-06T09:00:00Z"}}, // Fri 2 Jan → Mon 5
		{"cron(0 12 L * ? *)", "", "2026-02-01T00:00:00Z", []string{"2026-02-28T12:00:00Z", "2026-03-31T12:00:00Z"}},
		{"cron(0 8 ? * 2#1 *)", "", "2026-01-01T00:00:00Z", []string{"2026-01-05T08:00:00Z", "2026-02-02T08:00:00Z"}}, // first Monday
		{"cron(30 10 1 JAN ? 2027)", "", "2026-06-01T00:00:00Z", []string{"2027-01-01T10:30:00Z"}},
		// 09:00 in New York is 14:00 UTC in winter, 13:00 in summer.
		{"cron(0 9 * * ? *)", "America/New_York", "2026-03-07T15:00:00Z", []string{"2026-03-08T13:00:00Z"}},
		// 02:30 does not exist on 8 March 2026 in New York: skipped.
		{"cron(30 2 * * ? *)", "America/New_York", "2026-03-07T08:00:00Z", []string{"2026-03-09T06:30:00Z"}},
		{"at(2026-05-01T12:00:00)", "Europe/Paris", "2026-01-01T00:00:00Z", []string{"2026-05-01T10:00:00Z"}},
		// The last Friday (6L): 27 March, 24 April 2026.
		{"cron(0 18 ? * 6L *)", "", "2026-03-01T00:00:00Z", []string{"2026-03-27T18:00:00Z", "2026-04-24T18:00:00Z"}},
		{"cron(0 9 ? * FRIL *)", "", "2026-03-01T00:00:00Z", []string{"2026-03-27T09:00:00Z"}},
		// L alone in day-of-week: Saturday, the week's last day.
		{"cron(0 9 ? * L *)", "", "2026-01-26T00:00:00Z", []string{"2026-01-31T09:00:00Z", "2026-02-07T09:00:00Z"}},
		// 15W: Sunday 15 March → Monday 16; Wednesday 15 April itself.
		{"cron(0 9 15W * ? *)", "", "2026-03-01T00:00:00Z", []string{"2026-03-16T09:00:00Z", "2026-04-15T09:00:00Z"}},
		// 1W: Saturday 1 August → Monday 3 (not July); Tuesday 1 September.
		{"cron(0 9 1W * ? *)", "", "2026-07-15T00:00:00Z", []string{"2026-08-03T09:00:00Z", "2026-09-01T09:00:00Z"}},
		// LW: Sunday 31 May → Friday 29; Tuesday 30 June.
		{"cron(0 9 LW * ? *)", "", "2026-05-01T00:00:00Z", []string{"2026-05-29T09:00:00Z", "2026-06-30T09:00:00Z"}},
		// 31W: not in April (30 days); Sunday 31 May → Friday 29.
		{"cron(0 9 31W * ? *)", "", "2026-04-01T00:00:00Z", []string{"2026-05-29T09:00:00Z"}},
	}
	for _, c := range cases {
		e := mustParse(t, c.expr, c.tz)
		from := utc(c.from)
		for _, w := range c.want {
			got, ok := e.Next(from)
			if !ok || !got.Equal(utc(w)) {
				t.Errorf("%s (%s) after %s: %v %v, want %s", c.expr, c.tz, from.UTC().Format(time.RFC3339), got.UTC(), ok, w)
				break
			}
			from = got
		}
	}
	if _, ok := mustParse(t, "at(2026-05-01T12:00:00)", "").Next(utc("2026-06-01T00:00:00Z")); ok {
		t.Error("an at() in the past has an occurrence")
	}
	if _, ok := mustParse(t, "cron(0 0 1 1 ? 2026)", "").Next(utc("2026-06-01T00:00:00Z")); ok {
		t.Error("a cron of a past year has an occurrence")
	}
}

func TestParseErrors(t *testing.T) {
	for _, s := range []string{"rate(1 minutes)", "rate(5 minute)", "rate(0 minutes)", "rate(5 weeks)", "cron(* * * * * *)",
		"cron(0 9 * * ?)", "cron(60 * * * ? *)", "cron(0 9 ? * 8 *)", "cron(0 0 1 1 ? 2200)", "at(2026-13-01T00:00:00)", "every(5)",
		"cron(0 9 32W * ? *)", "cron(0 9 0W * ? *)", "cron(0 9 ? * 8L *)", "cron(0 9 ? * XL *)"} {
		if _, err := Parse(s, ""); err == nil {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
	if _, err := Parse("rate(5 minutes)", "Mars/Olympus"); err == nil {
		t.Error("an unknown time zone accepted")
	}
}
