package sns

// Delivery retries (https://docs.aws.amazon.com/sns/latest/dg/sns-message-delivery-retries.html):
// the fixed policy of sqs and lambda endpoints, and the http/https
// delivery policy (topic DeliveryPolicy's "http" section, overridden by
// the subscription's unless disableSubscriptionOverrides): its
// healthyRetryPolicy, throttlePolicy (maxReceivesPerSecond, on the engine
// clock, per subscription in this process) and
// requestPolicy.headerContentType are applied.

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/engine"
)

// The managed policy of sqs and lambda endpoints: 3 immediate retries, 2
// after 1 s, 10 backing off exponentially from 1 s to 20 s, then 100,000
// after 20 s: 100,015 retries over about 23 days.
const (
	managedImmediate   = 3
	managedPre         = 2
	managedBackoff     = 10
	managedPost        = 100000
	managedMinDelay    = time.Second
	managedMaxDelay    = 20 * time.Second
	managedMaxAttempts = 1 + managedImmediate + managedPre + managedBackoff + managedPost
)

// managedDelay is the delay before retry n (1-based) of an sqs or lambda
// delivery, and false once the 100,015 retries are spent.
func managedDelay(n int) (time.Duration, bool) {
	switch {
	case n <= managedImmediate:
		return 0, true
	case n <= managedImmediate+managedPre:
		return managedMinDelay, true
	case n <= managedImmediate+managedPre+managedBackoff:
		k := n - managedImmediate - managedPre // 1..10
		f := math.Pow(float64(managedMaxDelay/managedMinDelay), float64(k-1)/float64(managedBackoff-1))
		return time.Duration(f * float64(managedMinDelay)).Round(time.Second), true
	case n < managedMaxAttempts:
		return managedMaxDelay, true
	}
	return 0, false
}

// httpRetryPolicy is a healthyRetryPolicy (AWS's defaults in brackets):
// numRetries [3] (0..100) in all, of which numNoDelayRetries [0] at once,
// numMinDelayRetries [0] after minDelayTarget [20 s] (1..3600), then the
// backoff retries from minDelayTarget to maxDelayTarget [20 s] by
// backoffFunction [linear] (arithmetic, exponential, geometric, linear),
// and numMaxDelayRetries [0] after maxDelayTarget.
type httpRetryPolicy struct {
	MinDelayTarget     *int   `json:"minDelayTarget,omitempty"`
	MaxDelayTarget     *int   `json:"maxDelayTarget,omitempty"`
	NumRetries         *int   `json:"numRetries,omitempty"`
	NumNoDelayRetries  *int   `json:"numNoDelayRetries,omitempty"`
	NumMinDelayRetries *int   `json:"numMinDelayRetries,omitempty"`
	NumMaxDelayRetries *int   `json:"numMaxDelayRetries,omitempty"`
	BackoffFunction    string `json:"backoffFunction,omitempty"`
}

// effectivePolicy is a policy with its defaults filled in.
type effectivePolicy struct {
	MinDelayTarget     int    `json:"minDelayTarget"`
	MaxDelayTarget     int    `json:"maxDelayTarget"`
	NumRetries         int    `json:"numRetries"`
	NumMaxDelayRetries int    `json:"numMaxDelayRetries"`
	NumNoDelayRetries  int    `json:"numNoDelayRetries"`
	NumMinDelayRetries int    `json:"numMinDelayRetries"`
	BackoffFunction    string `json:"backoffFunction"`
}

func orDefault(p *int, d int) int {
	if p == nil {
		return d
	}
	return *p
}

func (p *httpRetryPolicy) effective() effectivePolicy {
	if p == nil {
		p = &httpRetryPolicy{}
	}
	e := effectivePolicy{MinDelayTarget: orDefault(p.MinDelayTarget, 20), MaxDelayTarget: orDefault(p.MaxDelayTarget, 20),
		NumRetries: orDefault(p.NumRetries, 3), NumNoDelayRetries: orDefault(p.NumNoDelayRetries, 0),
		NumMinDelayRetries: orDefault(p.NumMinDelayRetries, 0), NumMaxDelayRetries: orDefault(p.NumMaxDelayRetries, 0),
		BackoffFunction: p.BackoffFunction}
	if e.BackoffFunction == "" {
		e.BackoffFunction = "linear"
	}
	return e
}

// check applies AWS's ranges.
func (p *httpRetryPolicy) check() error {
	e := p.effective()
	switch {
	case e.NumRetries < 0 || e.NumRetries > 100:
		return invalid("DeliveryPolicy: numRetries must be between 0 and 100, got %d", e.NumRetries)
	case e.MinDelayTarget < 1 || e.MinDelayTarget > 3600 || e.MaxDelayTarget < 1 || e.MaxDelayTarget > 3600:
		return invalid("DeliveryPolicy: minDelayTarget and maxDelayTarget must be between 1 and 3600")
	case e.MinDelayTarget > e.MaxDelayTarget:
		return invalid("DeliveryPolicy: minDelayTarget must be less than or equal to maxDelayTarget")
	case e.NumNoDelayRetries < 0 || e.NumMinDelayRetries < 0 || e.NumMaxDelayRetries < 0 ||
		e.NumNoDelayRetries+e.NumMinDelayRetries+e.NumMaxDelayRetries > e.NumRetries:
		return invalid("DeliveryPolicy: numNoDelayRetries + numMinDelayRetries + numMaxDelayRetries must not exceed numRetries")
	}
	switch e.BackoffFunction {
	case "linear", "arithmetic", "geometric", "exponential":
	default:
		return invalid("DeliveryPolicy: backoffFunction must be one of arithmetic, exponential, geometric, linear, got %q", e.BackoffFunction)
	}
	total := 0
	for n := 1; n <= e.NumRetries; n++ {
		d, _ := e.delay(n)
		total += int(d / time.Second)
	}
	if total > 3600 {
		return invalid("DeliveryPolicy: the retries add up to %d seconds, at most 3600", total)
	}
	return nil
}

// delay is the delay before retry n (1-based), and false once the
// policy's retries are spent.
func (e effectivePolicy) delay(n int) (time.Duration, bool) {
	minD, maxD := float64(e.MinDelayTarget), float64(e.MaxDelayTarget)
	backoff := e.NumRetries - e.NumNoDelayRetries - e.NumMinDelayRetries - e.NumMaxDelayRetries
	var s float64
	switch {
	case n > e.NumRetries:
		return 0, false
	case n <= e.NumNoDelayRetries:
		return 0, true
	case n <= e.NumNoDelayRetries+e.NumMinDelayRetries:
		s = minD
	case n <= e.NumNoDelayRetries+e.NumMinDelayRetries+backoff:
		k := float64(n - e.NumNoDelayRetries - e.NumMinDelayRetries) // 1..backoff
		x := k / float64(backoff)                                    // (0, 1]
		switch e.BackoffFunction {
		case "arithmetic":
			x = x * x
		case "geometric":
			x = x * x * x
		case "exponential":
			x = (math.Exp2(10*x) - 1) / (math.Exp2(10) - 1)
		}
		s = minD + (maxD-minD)*x
	default:
		s = maxD
	}
	return time.Duration(math.Round(s)) * time.Second, true
}

// topicDeliveryPolicy is a topic's DeliveryPolicy.
type topicDeliveryPolicy struct {
	HTTP *struct {
		DefaultHealthyRetryPolicy    *httpRetryPolicy `json:"defaultHealthyRetryPolicy,omitempty"`
		DisableSubscriptionOverrides bool             `json:"disableSubscriptionOverrides"`
		DefaultThrottlePolicy        *throttlePolicy  `json:"defaultThrottlePolicy,omitempty"`
		DefaultRequestPolicy         *requestPolicy   `json:"defaultRequestPolicy,omitempty"`
	} `json:"http,omitempty"`
}

// throttlePolicy caps http/https deliveries: maxReceivesPerSecond (at
// least 1; unset: no cap).
type throttlePolicy struct {
	MaxReceivesPerSecond *int `json:"maxReceivesPerSecond,omitempty"`
}

func (p *throttlePolicy) check() error {
	if p != nil && p.MaxReceivesPerSecond != nil && *p.MaxReceivesPerSecond < 1 {
		return invalid("DeliveryPolicy: maxReceivesPerSecond must be at least 1, got %d", *p.MaxReceivesPerSecond)
	}
	return nil
}

// rate is the policy's cap, 0 for none.
func (p *throttlePolicy) rate() int {
	if p == nil || p.MaxReceivesPerSecond == nil {
		return 0
	}
	return *p.MaxReceivesPerSecond
}

// maxReceives is sub's delivery cap per second (0: none): its own unless
// the topic disables overrides or it has none, else the topic's default.
func maxReceives(topicPolicy string, sub *subscription) int {
	tp, _ := parseTopicDeliveryPolicy(topicPolicy)
	if tp == nil || tp.HTTP == nil || (!tp.HTTP.DisableSubscriptionOverrides && sub.throttle.rate() > 0) {
		return sub.throttle.rate()
	}
	return tp.HTTP.DefaultThrottlePolicy.rate()
}

// throttle spaces one subscription's deliveries 1/rate apart on the
// engine clock.
type throttle struct {
	mu   sync.Mutex
	next time.Time
}

// wait waits for the next free slot at rate deliveries a second.
func (th *throttle) wait(ctx context.Context, clock clockwork.Clock, rate int) error {
	th.mu.Lock()
	now := clock.Now()
	at := now
	if th.next.After(now) {
		at = th.next
	}
	th.next = at.Add(time.Second / time.Duration(rate))
	th.mu.Unlock()
	if d := at.Sub(now); d > 0 {
		return engine.Sleep(ctx, clock, d)
	}
	return nil
}

// requestPolicy is a delivery policy's request policy: the Content-Type
// of http/https deliveries (default "text/plain; charset=UTF-8").
type requestPolicy struct {
	HeaderContentType string `json:"headerContentType,omitempty"`
}

// subDeliveryPolicy is a subscription's DeliveryPolicy.
type subDeliveryPolicy struct {
	HealthyRetryPolicy *httpRetryPolicy `json:"healthyRetryPolicy,omitempty"`
	ThrottlePolicy     *throttlePolicy  `json:"throttlePolicy,omitempty"`
	RequestPolicy      *requestPolicy   `json:"requestPolicy,omitempty"`
}

// decodePolicy decodes a delivery policy strictly and checks its retry
// policy.
func decodePolicy(src string, v any) error {
	dec := json.NewDecoder(bytes.NewReader([]byte(src)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return invalid("DeliveryPolicy: %v", err)
	}
	var rp *httpRetryPolicy
	var tp *throttlePolicy
	switch p := v.(type) {
	case *subDeliveryPolicy:
		rp, tp = p.HealthyRetryPolicy, p.ThrottlePolicy
	case *topicDeliveryPolicy:
		if p.HTTP != nil {
			rp, tp = p.HTTP.DefaultHealthyRetryPolicy, p.HTTP.DefaultThrottlePolicy
		}
	}
	if err := tp.check(); err != nil {
		return err
	}
	if rp != nil {
		return rp.check()
	}
	return nil
}

func parseTopicDeliveryPolicy(src string) (*topicDeliveryPolicy, error) {
	var p topicDeliveryPolicy
	if src == "" {
		return &p, nil
	}
	if err := decodePolicy(src, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// httpPolicy is the retry policy of an http/https subscription: its own
// unless the topic disables overrides, else the topic's default, else
// AWS's.
func httpPolicy(topicPolicy string, sub *subscription) effectivePolicy {
	tp, _ := parseTopicDeliveryPolicy(topicPolicy)
	var rp *httpRetryPolicy
	if tp != nil && tp.HTTP != nil {
		rp = tp.HTTP.DefaultHealthyRetryPolicy
		if sub.retry != nil && !tp.HTTP.DisableSubscriptionOverrides {
			rp = sub.retry
		}
	} else if sub != nil {
		rp = sub.retry
	}
	return rp.effective()
}

// contentType is the Content-Type of sub's http/https deliveries: its
// request policy's, else the topic's default, else SNS's.
func contentType(topicPolicy string, sub *subscription) string {
	if sub.request != nil && sub.request.HeaderContentType != "" {
		return sub.request.HeaderContentType
	}
	if tp, _ := parseTopicDeliveryPolicy(topicPolicy); tp != nil && tp.HTTP != nil && tp.HTTP.DefaultRequestPolicy != nil && tp.HTTP.DefaultRequestPolicy.HeaderContentType != "" {
		return tp.HTTP.DefaultRequestPolicy.HeaderContentType
	}
	return "text/plain; charset=UTF-8"
}

// effectiveDeliveryPolicy is a topic's EffectiveDeliveryPolicy attribute.
func effectiveDeliveryPolicy(topicPolicy string) string {
	tp, _ := parseTopicDeliveryPolicy(topicPolicy)
	var rp *httpRetryPolicy
	dis := false
	if tp != nil && tp.HTTP != nil {
		rp, dis = tp.HTTP.DefaultHealthyRetryPolicy, tp.HTTP.DisableSubscriptionOverrides
	}
	b, _ := json.Marshal(map[string]any{"http": map[string]any{"defaultHealthyRetryPolicy": rp.effective(),
		"disableSubscriptionOverrides": dis}})
	return string(b)
}

// effectiveSubPolicy is an http/https subscription's
// EffectiveDeliveryPolicy attribute.
func effectiveSubPolicy(topicPolicy string, sub *subscription) string {
	b, _ := json.Marshal(map[string]any{"healthyRetryPolicy": httpPolicy(topicPolicy, sub)})
	return string(b)
}
