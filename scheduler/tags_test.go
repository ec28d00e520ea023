package scheduler_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/scheduler"
)

// TestAScheduleGroupKeepsItsTagsAcrossARestart: Scheduler tags schedule
// groups, never schedules (API_TagResource.html: "You can only assign
// tags to schedule groups"); CreateScheduleGroup takes Tags, TagResource
// adds or replaces, UntagResource removes by key, ListTagsForResource
// lists them. Tags are kept with the group, so a restart keeps them. Old
// behaviour: CreateScheduleGroup's Tags were dropped and the three
// operations did not exist.
func TestAScheduleGroupKeepsItsTagsAcrossARestart(t *testing.T) {
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(t0)
	rn := start(t, dir, clock)
	ctx := context.Background()
	arn, err := rn.Schedules.CreateScheduleGroup(ctx, "team", scheduler.Tag{Key: "env", Value: "prod"}, scheduler.Tag{Key: "owner", Value: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if err := rn.Schedules.TagResource(ctx, arn, []scheduler.Tag{{Key: "owner", Value: "b"}, {Key: "cost", Value: "42"}}); err != nil {
		t.Fatal(err)
	}
	if err := rn.Schedules.UntagResource(ctx, arn, []string{"env", "absent"}); err != nil {
		t.Fatal(err)
	}
	want := []scheduler.Tag{{Key: "cost", Value: "42"}, {Key: "owner", Value: "b"}}
	if got, err := rn.Schedules.ListTagsForResource(ctx, arn); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ListTagsForResource: %v %v, want %v", got, err, want)
	}
	rn.Close()
	rn = start(t, dir, clock)
	if got, err := rn.Schedules.ListTagsForResource(ctx, arn); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("after a restart: %v %v, want %v", got, err, want)
	}
	def := strings.Replace(arn, "/team", "/default", 1)
	if got, err := rn.Schedules.ListTagsForResource(ctx, def); err != nil || got == nil || len(got) != 0 {
		t.Errorf("default group's tags: %#v %v, want an empty list", got, err)
	}
}

// TestScheduleGroupTagsAreBoundedAndOnlyGroupsHaveThem: a tag's Key is
// 1..128 characters and its Value 1..256 (API_Tag.html, Scheduler's: a
// Value's minimum is 1), a group holds at most 50 tags (AWS's tagging
// limit), and ResourceArn must be a schedule group's ARN
// (API_TagResource.html's pattern, ValidationException), of a group that
// exists (ResourceNotFoundException). Each error names the field and its
// range. Old behaviour: no tag operation existed.
func TestScheduleGroupTagsAreBoundedAndOnlyGroupsHaveThem(t *testing.T) {
	rn := start(t, t.TempDir(), clockwork.NewFakeClockAt(t0))
	ctx := context.Background()
	arn, err := rn.Schedules.CreateScheduleGroup(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	many := make([]scheduler.Tag, 51)
	for i := range many {
		many[i] = scheduler.Tag{Key: strings.Repeat("k", i+1), Value: "v"}
	}
	for _, tt := range []struct {
		name, arn string
		tags      []scheduler.Tag
		want      *awserr.Error
		field     string
	}{
		{"empty key", arn, []scheduler.Tag{{Key: "", Value: "v"}}, awserr.ErrValidation, "Tags.1.Key: length 0 is out of the range 1..128"},
		{"long key", arn, []scheduler.Tag{{Key: "a", Value: "v"}, {Key: strings.Repeat("k", 129), Value: "v"}}, awserr.ErrValidation, "Tags.2.Key: length 129"},
		{"empty value", arn, []scheduler.Tag{{Key: "k", Value: ""}}, awserr.ErrValidation, "Tags.1.Value: length 0 is out of the range 1..256"},
		{"long value", arn, []scheduler.Tag{{Key: "k", Value: strings.Repeat("v", 257)}}, awserr.ErrValidation, "Tags.1.Value: length 257"},
		{"51 tags", arn, many, awserr.ErrValidation, "at most 50 tags"},
		{"a schedule's ARN", rn.Schedules.ARNOf("g", "s"), []scheduler.Tag{{Key: "k", Value: "v"}}, awserr.ErrValidation, "ResourceArn"},
		{"no such group", strings.Replace(arn, "/g", "/nope", 1), []scheduler.Tag{{Key: "k", Value: "v"}}, awserr.ErrResourceNotFound, "nope does not exist"},
		{"another account", strings.Replace(arn, rn.Engine.AccountID(), "123456789012", 1), []scheduler.Tag{{Key: "k", Value: "v"}}, awserr.ErrResourceNotFound, "does not exist"},
	} {
		err := rn.Schedules.TagResource(ctx, tt.arn, tt.tags)
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("%s: %v, want %v naming %q", tt.name, err, tt.want.Code, tt.field)
		}
	}
	if _, err := rn.Schedules.CreateScheduleGroup(ctx, "h", many...); !errors.Is(err, awserr.ErrValidation) {
		t.Errorf("CreateScheduleGroup with 51 tags: %v, want ValidationException", err)
	}
	if err := rn.Schedules.TagResource(ctx, arn, many[:50]); err != nil {
		t.Fatalf("50 tags: %v", err)
	}
	if err := rn.Schedules.TagResource(ctx, arn, many[50:]); !errors.Is(err, awserr.ErrValidation) {
		t.Errorf("a 51st tag: %v, want ValidationException", err)
	}
	if err := rn.Schedules.UntagResource(ctx, arn, []string{""}); !errors.Is(err, awserr.ErrValidation) || !strings.Contains(err.Error(), "TagKeys.1") {
		t.Errorf("UntagResource of an empty key: %v", err)
	}
	if _, err := rn.Schedules.ListTagsForResource(ctx, rn.Schedules.ARNOf("g", "s")); !errors.Is(err, awserr.ErrValidation) {
		t.Errorf("ListTagsForResource of a schedule: %v, want ValidationException", err)
	}
	if err := rn.Schedules.DeleteScheduleGroup(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Schedules.ListTagsForResource(ctx, arn); !errors.Is(err, awserr.ErrResourceNotFound) {
		t.Errorf("tags of a deleted group: %v, want ResourceNotFoundException", err)
	}
}
