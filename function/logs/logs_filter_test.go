package logs_test

import (
	"testing"

	"github.com/runnel-dev/runnel/function/logs"
)

// Each ? of a filter pattern starts a new OR group, and the plain (and -)
// terms after it belong to that group (CDK aws-logs pattern.ts:
// FilterPattern.anyTermGroup(["ERROR","MainThread"],["WARN","Deadlock"])
// renders ?"ERROR" "MainThread" ?"WARN" "Deadlock" and documents it as
// "lines that either contain both ERROR and MainThread, or both WARN and
// Deadlock"). runnel used to read it as MainThread and Deadlock and
// (ERROR or WARN): it matched "ERROR MainThread WARN Deadlock" only.
func TestATermGroupIsItsOwnAlternative(t *testing.T) {
	for _, c := range []struct {
		pattern, msg string
		want         bool
	}{
		{`?"ERROR" "MainThread" ?"WARN" "Deadlock"`, "WARN Deadlock detected", true},
		{`?"ERROR" "MainThread" ?"WARN" "Deadlock"`, "ERROR in MainThread", true},
		{`?"ERROR" "MainThread" ?"WARN" "Deadlock"`, "ERROR MainThread WARN Deadlock", true},
		{`?"ERROR" "MainThread" ?"WARN" "Deadlock"`, "ERROR Deadlock", false},
		{`?"ERROR" "MainThread" ?"WARN" "Deadlock"`, "WARN in MainThread", false},
		// anyTerm and allTerms as CDK renders them.
		{`?"ERROR" ?"WARN"`, "a WARN", true},
		{`?"ERROR" ?"WARN"`, "INFO", false},
		{`"ERROR" "MainThread"`, "ERROR in MainThread", true},
		{`"ERROR" "MainThread"`, "ERROR elsewhere", false},
		// An exclusion belongs to its group too.
		{`?ERROR -timeout ?WARN`, "ERROR timeout", false},
		{`?ERROR -timeout ?WARN`, "WARN timeout", true},
		// Terms before the first ? are a group of their own.
		{`ERROR MainThread ?WARN`, "WARN", true},
		{`ERROR MainThread ?WARN`, "ERROR MainThread", true},
		{`ERROR MainThread ?WARN`, "ERROR", false},
	} {
		p, err := logs.ParsePattern(c.pattern)
		if err != nil {
			t.Fatalf("%q: %v", c.pattern, err)
		}
		if got := p.Match(c.msg); got != c.want {
			t.Errorf("%s on %q: %v, want %v", c.pattern, c.msg, got, c.want)
		}
	}
}

// A quoted term takes \" for a quote and \\ for a backslash (CDK aws-logs
// pattern.ts quoteTerm: "Inner double quotes are escaped using a
// backslash", and backslashes doubled), so FilterPattern.allTerms(`say
// "hi"`) renders "say \"hi\"" and matches say "hi". runnel used to cut the
// term at the escaped quote: it searched for `say \`.
func TestAQuotedTermKeepsItsEscapedQuotes(t *testing.T) {
	for _, c := range []struct {
		pattern, msg string
		want         bool
	}{
		{`"say \"hi\""`, `they say "hi" here`, true},
		{`"say \"hi\""`, `say \ x`, false},
		{`"say \"hi\""`, `say hi`, false},
		{`"C:\\temp"`, `open C:\temp`, true},
		{`"a\b"`, `x a\b`, true}, // a backslash before anything else is itself
		{`?"say \"hi\"" ?bye`, `bye now`, true},
	} {
		p, err := logs.ParsePattern(c.pattern)
		if err != nil {
			t.Fatalf("%s: %v", c.pattern, err)
		}
		if got := p.Match(c.msg); got != c.want {
			t.Errorf("%s on %q: %v, want %v", c.pattern, c.msg, got, c.want)
		}
	}
	for _, bad := range []string{`"say \"hi\"`, `"ends in \"`} {
		if _, err := logs.ParsePattern(bad); err == nil {
			t.Errorf("%s: an unclosed quoted term parsed", bad)
		}
	}
}
