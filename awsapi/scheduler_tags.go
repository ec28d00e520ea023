package awsapi

// EventBridge Scheduler's tags, of schedule groups only (REST, JSON):
// TagResource (POST /tags/{ResourceArn} {"Tags":[{"Key","Value"}]}, 200
// and no body), UntagResource (DELETE /tags/{ResourceArn}?TagKeys=k1&
// TagKeys=k2, 200), ListTagsForResource (GET /tags/{ResourceArn} →
// {"Tags":[{"Key","Value"}]}, in key order). The ARN comes URL-escaped
// as one path segment. Rules and limits: scheduler/tags.go.
// https://docs.aws.amazon.com/scheduler/latest/APIReference/API_TagResource.html

import "github.com/runnel-dev/runnel/scheduler"

// schedulerTagsInput is TagResource's body, and CreateScheduleGroup's
// (with its ClientToken, accepted and not used).
type schedulerTagsInput struct {
	Tags        []scheduler.Tag
	ClientToken string
}

func schedulerTagResource(rq *request, in *schedulerTagsInput) (any, error) {
	return nil, rq.h.rn.Schedules.TagResource(rq.ctx, rq.r.PathValue("arn"), in.Tags)
}

func schedulerUntagResource(rq *request, _ *noInput) (any, error) {
	return nil, rq.h.rn.Schedules.UntagResource(rq.ctx, rq.r.PathValue("arn"), rq.r.URL.Query()["TagKeys"])
}

func schedulerListTagsForResource(rq *request, _ *noInput) (any, error) {
	return keyed("Tags")(rq.h.rn.Schedules.ListTagsForResource(rq.ctx, rq.r.PathValue("arn")))
}
