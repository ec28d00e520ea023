package awsapi

// EventBridge Scheduler (REST, JSON bodies; paths /schedules and
// /schedule-groups): CreateSchedule, GetSchedule, UpdateSchedule,
// DeleteSchedule, ListSchedules, and the schedule groups (their tags:
// scheduler_tags.go). CreateSchedule's ClientToken makes a repeated
// request answer the first one's ScheduleArn (scheduler.CreateSchedule);
// UpdateSchedule's is not used (an update is idempotent); KmsKeyArn is
// not kept; targets are Lambda, SQS and Kinesis.
// https://docs.aws.amazon.com/scheduler/latest/APIReference/API_CreateSchedule.html

import (
	"strconv"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/scheduler"
)

// scheduleInput is the body of CreateSchedule and UpdateSchedule (dates
// as epoch seconds).
type scheduleInput struct {
	GroupName                  string
	ScheduleExpression         string
	ScheduleExpressionTimezone string
	FlexibleTimeWindow         scheduler.FlexibleTimeWindow
	StartDate, EndDate         *epoch
	State                      string
	ActionAfterCompletion      string
	Description                string
	Target                     scheduler.Target
	ClientToken                string
	KmsKeyArn                  string
}

func (in *scheduleInput) schedule(name string) scheduler.Schedule {
	sc := scheduler.Schedule{Name: name, GroupName: in.GroupName, ScheduleExpression: in.ScheduleExpression,
		ScheduleExpressionTimezone: in.ScheduleExpressionTimezone, FlexibleTimeWindow: in.FlexibleTimeWindow,
		State: in.State, ActionAfterCompletion: in.ActionAfterCompletion, Description: in.Description, Target: in.Target,
		ClientToken: in.ClientToken}
	for _, d := range []struct {
		in  *epoch
		out **time.Time
	}{{in.StartDate, &sc.StartDate}, {in.EndDate, &sc.EndDate}} {
		if d.in != nil {
			t := time.Time(*d.in)
			*d.out = &t
		}
	}
	return sc
}

func schedulerCreateSchedule(rq *request, in *scheduleInput) (any, error) {
	return keyed("ScheduleArn")(rq.h.rn.Schedules.CreateSchedule(rq.ctx, in.schedule(rq.r.PathValue("name"))))
}

func schedulerUpdateSchedule(rq *request, in *scheduleInput) (any, error) {
	return keyed("ScheduleArn")(rq.h.rn.Schedules.UpdateSchedule(rq.ctx, in.schedule(rq.r.PathValue("name"))))
}

func schedulerGetSchedule(rq *request, _ *noInput) (any, error) {
	sc, err := rq.h.rn.Schedules.GetSchedule(rq.r.URL.Query().Get("groupName"), rq.r.PathValue("name"))
	if err != nil {
		return nil, err
	}
	out := map[string]any{"Arn": sc.Arn, "Name": sc.Name, "GroupName": sc.GroupName, "ScheduleExpression": sc.ScheduleExpression,
		"FlexibleTimeWindow": sc.FlexibleTimeWindow, "State": sc.State, "ActionAfterCompletion": sc.ActionAfterCompletion,
		"Target": sc.Target, "CreationDate": epoch(sc.CreationDate), "LastModificationDate": epoch(sc.LastModificationDate)}
	if sc.ScheduleExpressionTimezone != "" {
		out["ScheduleExpressionTimezone"] = sc.ScheduleExpressionTimezone
	}
	if sc.Description != "" {
		out["Description"] = sc.Description
	}
	if sc.StartDate != nil {
		out["StartDate"] = epoch(*sc.StartDate)
	}
	if sc.EndDate != nil {
		out["EndDate"] = epoch(*sc.EndDate)
	}
	return out, nil
}

func schedulerDeleteSchedule(rq *request, _ *noInput) (any, error) {
	return nil, rq.h.rn.Schedules.DeleteSchedule(rq.ctx, rq.r.URL.Query().Get("groupName"), rq.r.PathValue("name"))
}

// schedulerPage answers a Scheduler list: MaxResults (1..100) and
// NextToken (an index) from the query.
func schedulerPage[T any](rq *request, items []T, key string, out func(*T) any) (any, error) {
	q := rq.r.URL.Query()
	in := listInput{NextToken: q.Get("NextToken")}
	if m := q.Get("MaxResults"); m != "" {
		n, err := strconv.Atoi(m)
		if err != nil || n < 1 {
			return nil, awserr.New(awserr.ErrValidation, "MaxResults: %q is not in the range 1..100", m)
		}
		in.Limit = n
	}
	return eventsPage(items, &in, key, out)
}

func schedulerListSchedules(rq *request, _ *noInput) (any, error) {
	q := rq.r.URL.Query()
	list := rq.h.rn.Schedules.ListSchedules(q.Get("ScheduleGroup"), q.Get("NamePrefix"), q.Get("State"))
	return schedulerPage(rq, list, "Schedules", func(sc *scheduler.Schedule) any {
		return map[string]any{"Arn": sc.Arn, "Name": sc.Name, "GroupName": sc.GroupName, "State": sc.State,
			"CreationDate": epoch(sc.CreationDate), "LastModificationDate": epoch(sc.LastModificationDate),
			"Target": map[string]string{"Arn": sc.Target.Arn}}
	})
}

// schedulerCreateScheduleGroup creates a group with its Tags (kept:
// ListTagsForResource answers them).
func schedulerCreateScheduleGroup(rq *request, in *schedulerTagsInput) (any, error) {
	return keyed("ScheduleGroupArn")(rq.h.rn.Schedules.CreateScheduleGroup(rq.ctx, rq.r.PathValue("name"), in.Tags...))
}

func groupOut(g *scheduler.ScheduleGroup) any {
	return map[string]any{"Arn": g.Arn, "Name": g.Name, "State": g.State, "CreationDate": epoch(g.CreationDate),
		"LastModificationDate": epoch(g.LastModificationDate)}
}

func schedulerGetScheduleGroup(rq *request, _ *noInput) (any, error) {
	return answer(groupOut)(rq.h.rn.Schedules.GetScheduleGroup(rq.ctx, rq.r.PathValue("name")))
}

func schedulerDeleteScheduleGroup(rq *request, _ *noInput) (any, error) {
	return nil, rq.h.rn.Schedules.DeleteScheduleGroup(rq.ctx, rq.r.PathValue("name"))
}

func schedulerListScheduleGroups(rq *request, _ *noInput) (any, error) {
	gs, err := rq.h.rn.Schedules.ListScheduleGroups(rq.ctx, rq.r.URL.Query().Get("NamePrefix"))
	if err != nil {
		return nil, err
	}
	return schedulerPage(rq, gs, "ScheduleGroups", func(g *scheduler.ScheduleGroup) any { return groupOut(g) })
}
