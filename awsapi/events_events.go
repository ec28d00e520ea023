package awsapi

// EventBridge's PutEvents and TestEventPattern.
// https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutEvents.html

import (
	"encoding/json"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/eventbus"
	"github.com/runnel-dev/runnel/mapping/filter"
)

type putEventsInput struct {
	Entries []struct {
		eventbus.PutEventsRequestEntry
		Time *epoch
	}
}

func eventsPutEvents(rq *request, in *putEventsInput) (any, error) {
	entries := make([]eventbus.PutEventsRequestEntry, len(in.Entries))
	for i, e := range in.Entries {
		entries[i] = e.PutEventsRequestEntry
		if e.Time != nil {
			t := time.Time(*e.Time)
			entries[i].Time = &t
		}
	}
	return rq.h.rn.Events.PutEvents(rq.ctx, entries)
}

type testEventPatternInput struct {
	EventPattern string
	Event        string
}

// eventsTestEventPattern matches an event against a pattern; the event
// needs id, account, source, time, region, resources and detail-type.
func eventsTestEventPattern(rq *request, in *testEventPatternInput) (any, error) {
	m, err := filter.CompileEventPattern(in.EventPattern)
	if err != nil {
		return nil, err
	}
	var ev map[string]any
	if err := json.Unmarshal([]byte(in.Event), &ev); err != nil {
		return nil, awserr.New(awserr.ErrInvalidArgument, "Parameter Event is not valid.")
	}
	for _, k := range []string{"id", "account", "source", "time", "region", "resources", "detail-type"} {
		if _, ok := ev[k]; !ok {
			return nil, awserr.New(awserr.ErrInvalidArgument, "Parameter Event is not valid.")
		}
	}
	return map[string]bool{"Result": m.Match(ev)}, nil
}
