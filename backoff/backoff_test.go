package backoff_test

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/backoff"
)

func TestFullJitterStaysInsideItsBoundsAndSpreadsOverThem(t *testing.T) {
	p := backoff.Policy{BaseDelaySeconds: 1, MaxDelaySeconds: 43200, MaxAttempts: 100, MaximumAgeInSeconds: 86400}
	r := rand.New(rand.NewPCG(1, 2))
	for n := 1; n <= 20; n++ {
		hi := min(1<<(n-1), 43200)
		seen := map[time.Duration]int{}
		var sum float64
		const draws = 10000
		for i := 0; i < draws; i++ {
			d := p.Delay(n, r)
			if d < time.Second || d > time.Duration(hi)*time.Second {
				t.Fatalf("attempt %d: delay %v outside [1s, %ds]", n, d, hi)
			}
			seen[d]++
			sum += d.Seconds()
		}
		// Full jitter: uniform over [1, hi], so the mean is (1+hi)/2 and,
		// for small ranges, every whole second appears.
		mean := sum / draws
		want := float64(1+hi) / 2
		if d := mean - want; d > want*0.05+0.05 || d < -(want*0.05+0.05) {
			t.Fatalf("attempt %d: mean delay %.2fs, want about %.2fs (uniform)", n, mean, want)
		}
		if hi <= 64 && len(seen) != hi {
			t.Fatalf("attempt %d: %d distinct delays, want all %d", n, len(seen), hi)
		}
	}
}

func TestDelayIsCappedByMaxDelay(t *testing.T) {
	p := backoff.Policy{BaseDelaySeconds: 10, MaxDelaySeconds: 60, MaxAttempts: 50, MaximumAgeInSeconds: 86400}
	r := rand.New(rand.NewPCG(3, 4))
	var top time.Duration
	for i := 0; i < 10000; i++ {
		top = max(top, p.Delay(30, r))
	}
	if top != 60*time.Second {
		t.Fatalf("largest delay at attempt 30 = %v, want the cap 60s reached", top)
	}
}

func TestExhaustedByAttemptsOrAge(t *testing.T) {
	p := backoff.Policy{BaseDelaySeconds: 1, MaxDelaySeconds: 60, MaxAttempts: 3, MaximumAgeInSeconds: 3600}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name    string
		attempt int
		age     time.Duration
		want    bool
		why     string
	}{
		{"below both limits", 2, time.Minute, false, ""},
		{"the last attempt is exhausted", 3, time.Minute, true, "MaxAttempts"},
		{"older than MaximumAge", 1, time.Hour + time.Second, true, "MaximumAge"},
		{"exactly MaximumAge is still allowed", 1, time.Hour, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, why := p.Exhausted(c.attempt, t0, t0.Add(c.age))
			if got != c.want || why != c.why {
				t.Fatalf("Exhausted = %v %q, want %v %q", got, why, c.want, c.why)
			}
		})
	}
}

func TestValidateNamesFieldAndRange(t *testing.T) {
	cases := []struct {
		p    backoff.Policy
		text string
	}{
		{backoff.Policy{BaseDelaySeconds: 0, MaxDelaySeconds: 10, MaxAttempts: 3, MaximumAgeInSeconds: 600}, "RetryPolicy.BaseDelaySeconds"},
		{backoff.Policy{BaseDelaySeconds: 1, MaxDelaySeconds: 43201, MaxAttempts: 3, MaximumAgeInSeconds: 600}, "between 1 and 43200"},
		{backoff.Policy{BaseDelaySeconds: 1, MaxDelaySeconds: 10, MaxAttempts: 1001, MaximumAgeInSeconds: 600}, "RetryPolicy.MaxAttempts"},
		{backoff.Policy{BaseDelaySeconds: 1, MaxDelaySeconds: 10, MaxAttempts: 3, MaximumAgeInSeconds: 1209601}, "between 60 and 1209600"},
	}
	for _, c := range cases {
		err := c.p.Validate("RetryPolicy.")
		if !errors.Is(err, awserr.ErrInvalidParameterValue) || !strings.Contains(err.Error(), c.text) {
			t.Fatalf("Validate(%+v) = %v, want %q", c.p, err, c.text)
		}
	}
	if err := (backoff.Policy{}).WithDefaults().Validate(""); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
}
