package awsapi

// EventBridge's event buses (JSON 1.1, X-Amz-Target AWSEvents.*):
// CreateEventBus, DeleteEventBus, DescribeEventBus, ListEventBuses. The
// bus "default" always exists. No partner event sources, KMS keys, dead
// letter configs or policies on buses.
// https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_CreateEventBus.html

import (
	"strconv"

	"github.com/runnel-dev/runnel/eventbus"
)

type eventBusInput struct {
	Name        string
	Description string
}

func eventsDeleteEventBus(rq *request, in *eventBusInput) (any, error) {
	return nil, rq.h.rn.Events.DeleteEventBus(rq.ctx, in.Name)
}

func eventsDescribeEventBus(rq *request, in *eventBusInput) (any, error) {
	return answer(busOut)(rq.h.rn.Events.DescribeEventBus(in.Name))
}

func busOut(b *eventbus.EventBus) map[string]any {
	return map[string]any{"Name": b.Name, "Arn": b.Arn, "Description": b.Description,
		"CreationTime": epoch(b.CreationTime), "LastModifiedTime": epoch(b.LastModifiedTime)}
}

// listInput is the paging of EventBridge's List calls: NamePrefix, Limit
// (1..100) and NextToken (an index this endpoint returned).
type listInput struct {
	NamePrefix string
	NextToken  string
	Limit      int
}

// eventsPage answers a list: {key: items[from:to], "NextToken"}.
func eventsPage[T any](items []T, in *listInput, key string, out func(*T) any) (any, error) {
	from := 0
	if in.NextToken != "" {
		n, err := strconv.Atoi(in.NextToken)
		if err != nil || n < 0 || n > len(items) {
			return nil, eventsInvalid("NextToken %q is not a token this endpoint returned", in.NextToken)
		}
		from = n
	}
	limit := in.Limit
	if limit < 0 || limit > 100 {
		return nil, eventsInvalid("1 validation error detected: Value '%d' at 'limit' failed to satisfy constraint: Member must have value less than or equal to 100 and greater than or equal to 1", limit)
	}
	if limit == 0 {
		limit = 100
	}
	to := min(len(items), from+limit)
	list := make([]any, 0, to-from)
	for i := from; i < to; i++ {
		list = append(list, out(&items[i]))
	}
	res := map[string]any{key: list}
	if to < len(items) {
		res["NextToken"] = strconv.Itoa(to)
	}
	return res, nil
}

func eventsListEventBuses(rq *request, in *listInput) (any, error) {
	return eventsPage(rq.h.rn.Events.ListEventBuses(in.NamePrefix), in, "EventBuses", func(b *eventbus.EventBus) any { return busOut(b) })
}
