package awsapi_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	stypes "github.com/aws/aws-sdk-go-v2/service/scheduler/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/internal/testenv"
)

// EventBridge Scheduler through aws-sdk-go-v2 unchanged: groups, a cron
// schedule in a time zone that fires on the engine's (fake) clock into an
// SQS queue, and AWS's errors.
func TestSchedulerThroughTheSDK(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(t0)
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	e := startAll(t, rn)
	ctx := context.Background()
	sc, qc := scheduler.NewFromConfig(e.config("AKID", "secret")), e.sqs()
	q := must(qc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("fired")}))
	g := must(sc.CreateScheduleGroup(ctx, &scheduler.CreateScheduleGroupInput{Name: aws.String("team")}))
	if !strings.HasSuffix(aws.ToString(g.ScheduleGroupArn), ":schedule-group/team") {
		t.Errorf("ScheduleGroupArn %v", aws.ToString(g.ScheduleGroupArn))
	}
	_, err := sc.CreateScheduleGroup(ctx, &scheduler.CreateScheduleGroupInput{Name: aws.String("team")})
	var conflict *stypes.ConflictException
	if !errors.As(err, &conflict) {
		t.Errorf("second group team: %v, want ConflictException", err)
	}
	in := &scheduler.CreateScheduleInput{Name: aws.String("morning"), GroupName: aws.String("team"),
		ScheduleExpression: aws.String("cron(30 8 * * ? *)"), ScheduleExpressionTimezone: aws.String("Asia/Tokyo"),
		FlexibleTimeWindow: &stypes.FlexibleTimeWindow{Mode: stypes.FlexibleTimeWindowModeOff},
		StartDate:          aws.Time(t0),
		Target: &stypes.Target{Arn: aws.String(rn.Queues.ARN("fired")), RoleArn: aws.String("arn:aws:iam::000000000000:role/s"),
			Input:       aws.String(`{"when":"<aws.scheduler.scheduled-time>"}`),
			RetryPolicy: &stypes.RetryPolicy{MaximumRetryAttempts: aws.Int32(3), MaximumEventAgeInSeconds: aws.Int32(300)}}}
	cs := must(sc.CreateSchedule(ctx, in))
	if !strings.HasSuffix(aws.ToString(cs.ScheduleArn), ":schedule/team/morning") {
		t.Errorf("ScheduleArn %v", aws.ToString(cs.ScheduleArn))
	}
	// The SDK filled in.ClientToken: the same call again is a retry of
	// the first and answers its ARN (API_CreateSchedule's ClientToken);
	// with another token it is a second schedule of that name.
	if in.ClientToken == nil {
		t.Fatal("the SDK sent no ClientToken")
	}
	if again, err := sc.CreateSchedule(ctx, in); err != nil || aws.ToString(again.ScheduleArn) != aws.ToString(cs.ScheduleArn) {
		t.Errorf("the same CreateSchedule with its ClientToken: %v %v, want %v", again, err, aws.ToString(cs.ScheduleArn))
	}
	second := *in
	second.ClientToken = aws.String("another-token")
	_, err = sc.CreateSchedule(ctx, &second)
	if !errors.As(err, &conflict) {
		t.Errorf("second schedule: %v, want ConflictException", err)
	}
	bad := *in
	bad.Name, bad.ScheduleExpression = aws.String("bad"), aws.String("rate(1 minutes)")
	_, err = sc.CreateSchedule(ctx, &bad)
	var invalid *stypes.ValidationException
	if !errors.As(err, &invalid) {
		t.Errorf("rate(1 minutes): %v, want ValidationException", err)
	}
	_, err = sc.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String("morning")}) // not in default
	var missing *stypes.ResourceNotFoundException
	if !errors.As(err, &missing) {
		t.Errorf("GetSchedule in default: %v, want ResourceNotFoundException", err)
	}
	got := must(sc.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String("morning"), GroupName: aws.String("team")}))
	if aws.ToString(got.ScheduleExpressionTimezone) != "Asia/Tokyo" || !aws.ToTime(got.StartDate).Equal(t0) || got.State != stypes.ScheduleStateEnabled ||
		aws.ToInt32(got.Target.RetryPolicy.MaximumRetryAttempts) != 3 || got.ActionAfterCompletion != stypes.ActionAfterCompletionNone {
		t.Errorf("GetSchedule: %+v", got)
	}
	ls := must(sc.ListSchedules(ctx, &scheduler.ListSchedulesInput{GroupName: aws.String("team")}))
	if len(ls.Schedules) != 1 || aws.ToString(ls.Schedules[0].Name) != "morning" {
		t.Errorf("ListSchedules: %+v", ls.Schedules)
	}
	// 08:30 in Tokyo is 23:30 UTC the day before: the first occurrence
	// after 1 January 00:00 UTC is 1 January 23:30 UTC.
	clock.Advance(23*time.Hour + 29*time.Minute)
	clock.Advance(time.Minute)
	bodies := receiveAll(t, qc, *q.QueueUrl, 1)
	if bodies[0] != `{"when":"2026-01-01T23:30:00Z"}` {
		t.Errorf("fired %q", bodies[0])
	}
	must(sc.DeleteSchedule(ctx, &scheduler.DeleteScheduleInput{Name: aws.String("morning"), GroupName: aws.String("team")}))
	must(sc.DeleteScheduleGroup(ctx, &scheduler.DeleteScheduleGroupInput{Name: aws.String("team")}))
	lg := must(sc.ListScheduleGroups(ctx, &scheduler.ListScheduleGroupsInput{}))
	if len(lg.ScheduleGroups) != 1 || aws.ToString(lg.ScheduleGroups[0].Name) != "default" {
		t.Errorf("ListScheduleGroups: %+v", lg.ScheduleGroups)
	}
}

// TestSchedulerTagsThroughTheSDK: TagResource (POST /tags/{ResourceArn}),
// UntagResource (DELETE /tags/{ResourceArn}?TagKeys=...) and
// ListTagsForResource (GET /tags/{ResourceArn} → {"Tags":[...]}) of a
// schedule group, and CreateScheduleGroup's Tags, through aws-sdk-go-v2
// (API_TagResource.html, API_UntagResource.html,
// API_ListTagsForResource.html); a schedule's ARN is a
// ValidationException (only groups have tags), a missing group's a
// ResourceNotFoundException. Old behaviour: the three were HTTP 404
// UnknownOperationException and CreateScheduleGroup dropped its Tags.
func TestSchedulerTagsThroughTheSDK(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	e := startAll(t, rn)
	ctx := context.Background()
	sc := scheduler.NewFromConfig(e.config("AKID", "secret"))
	g := must(sc.CreateScheduleGroup(ctx, &scheduler.CreateScheduleGroupInput{Name: aws.String("team"),
		Tags: []stypes.Tag{{Key: aws.String("env"), Value: aws.String("prod")}}}))
	arn := g.ScheduleGroupArn
	got := must(sc.ListTagsForResource(ctx, &scheduler.ListTagsForResourceInput{ResourceArn: arn}))
	if len(got.Tags) != 1 || aws.ToString(got.Tags[0].Key) != "env" || aws.ToString(got.Tags[0].Value) != "prod" {
		t.Errorf("CreateScheduleGroup's Tags: %+v, want env=prod", got.Tags)
	}
	must(sc.TagResource(ctx, &scheduler.TagResourceInput{ResourceArn: arn, Tags: []stypes.Tag{
		{Key: aws.String("owner"), Value: aws.String("ops")}, {Key: aws.String("cost"), Value: aws.String("7")}}}))
	must(sc.UntagResource(ctx, &scheduler.UntagResourceInput{ResourceArn: arn, TagKeys: []string{"env", "cost"}}))
	got = must(sc.ListTagsForResource(ctx, &scheduler.ListTagsForResourceInput{ResourceArn: arn}))
	if len(got.Tags) != 1 || aws.ToString(got.Tags[0].Key) != "owner" || aws.ToString(got.Tags[0].Value) != "ops" {
		t.Errorf("ListTagsForResource: %+v, want owner=ops", got.Tags)
	}
	_, err := sc.TagResource(ctx, &scheduler.TagResourceInput{ResourceArn: aws.String(rn.Schedules.ARNOf("team", "s")),
		Tags: []stypes.Tag{{Key: aws.String("k"), Value: aws.String("v")}}})
	var invalid *stypes.ValidationException
	if !errors.As(err, &invalid) || !strings.Contains(err.Error(), "ResourceArn") {
		t.Errorf("TagResource of a schedule: %v, want ValidationException naming ResourceArn", err)
	}
	_, err = sc.TagResource(ctx, &scheduler.TagResourceInput{ResourceArn: arn, Tags: []stypes.Tag{{Key: aws.String("k"), Value: aws.String(strings.Repeat("v", 257))}}})
	if !errors.As(err, &invalid) || !strings.Contains(err.Error(), "Tags.1.Value") {
		t.Errorf("a 257-character value: %v, want ValidationException naming Tags.1.Value", err)
	}
	_, err = sc.ListTagsForResource(ctx, &scheduler.ListTagsForResourceInput{ResourceArn: aws.String(strings.Replace(aws.ToString(arn), "/team", "/nope", 1))})
	var missing *stypes.ResourceNotFoundException
	if !errors.As(err, &missing) {
		t.Errorf("ListTagsForResource of a missing group: %v, want ResourceNotFoundException", err)
	}
}
