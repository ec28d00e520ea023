package awsapi

// EventBridge's tags, of rules and event buses (JSON 1.1, X-Amz-Target
// AWSEvents.*): TagResource ({"ResourceARN","Tags":[{"Key","Value"}]}, an
// empty answer), UntagResource ({"ResourceARN","TagKeys":[...]}),
// ListTagsForResource ({"ResourceARN"} → {"Tags":[{"Key","Value"}]}, in
// key order), and CreateEventBus with its Tags. Rules, limits and
// storage: eventbus/tags.go.
// https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_TagResource.html

import "github.com/runnel-dev/runnel/eventbus"

type eventsTagsInput struct {
	ResourceARN string
	Tags        []eventbus.Tag
	TagKeys     []string
}

func eventsTagResource(rq *request, in *eventsTagsInput) (any, error) {
	return nil, rq.h.rn.Events.TagResource(rq.ctx, in.ResourceARN, in.Tags)
}

func eventsUntagResource(rq *request, in *eventsTagsInput) (any, error) {
	return nil, rq.h.rn.Events.UntagResource(rq.ctx, in.ResourceARN, in.TagKeys)
}

func eventsListTagsForResource(rq *request, in *eventsTagsInput) (any, error) {
	return keyed("Tags")(rq.h.rn.Events.ListTagsForResource(rq.ctx, in.ResourceARN))
}

// createEventBusInput is CreateEventBus's request with its Tags.
type createEventBusInput struct {
	Name        string
	Description string
	Tags        []eventbus.Tag
}

func eventsCreateEventBusTagged(rq *request, in *createEventBusInput) (any, error) {
	b, err := rq.h.rn.Events.CreateEventBusTagged(rq.ctx, in.Name, in.Description, in.Tags)
	if err != nil {
		return nil, err
	}
	return map[string]any{"EventBusArn": b.Arn, "Description": b.Description}, nil
}
