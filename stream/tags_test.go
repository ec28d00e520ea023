package stream_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/stream"
)

func TestStreamTags(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	ctx := t.Context()
	if _, err := rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "tagged", Tags: map[string]string{"team": "data", "env": "dev"}}); err != nil {
		t.Fatal(err)
	}
	list := func(start string, limit int) (string, bool) {
		t.Helper()
		tags, more, err := rn.Streams.ListTagsForStream(ctx, "tagged", start, limit)
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, tg := range tags {
			s = append(s, tg.Key+"="+tg.Value)
		}
		return strings.Join(s, ","), more
	}
	if got, more := list("", 0); got != "env=dev,team=data" || more {
		t.Errorf("tags at CreateStream: %s %v", got, more)
	}
	if err := rn.Streams.AddTagsToStream(ctx, "tagged", map[string]string{"env": "prod", "cost center": "4/2:a@b+c=d-e_f.g%"}); err != nil {
		t.Fatal(err)
	}
	if got, more := list("", 2); got != "cost center=4/2:a@b+c=d-e_f.g%,env=prod" || !more {
		t.Errorf("page 1: %s %v", got, more)
	}
	if got, more := list("env", 2); got != "team=data" || more {
		t.Errorf("page 2: %s %v", got, more)
	}
	if err := rn.Streams.RemoveTagsFromStream(ctx, "tagged", []string{"env", "absent"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := list("", 0); got != "cost center=4/2:a@b+c=d-e_f.g%,team=data" {
		t.Errorf("after remove: %s", got)
	}
	// Limits and bad input.
	many := map[string]string{}
	for i := range 49 {
		many[fmt.Sprintf("k%02d", i)] = "v"
	}
	err := rn.Streams.AddTagsToStream(ctx, "tagged", many)
	wantErr(t, err, awserr.ErrInvalidArgument, "cannot have more than 50 tags")
	delete(many, "k00")
	if err := rn.Streams.AddTagsToStream(ctx, "tagged", many); err != nil {
		t.Fatalf("50 tags: %v", err)
	}
	wantErr(t, rn.Streams.AddTagsToStream(ctx, "tagged", map[string]string{"": "x"}), awserr.ErrInvalidArgument, "Tags", "1..128")
	wantErr(t, rn.Streams.AddTagsToStream(ctx, "tagged", map[string]string{"k": strings.Repeat("v", 257)}), awserr.ErrInvalidArgument, "0..256")
	wantErr(t, rn.Streams.AddTagsToStream(ctx, "tagged", map[string]string{"k!": "x"}), awserr.ErrInvalidArgument, "invalid characters")
	wantErr(t, rn.Streams.AddTagsToStream(ctx, "tagged", nil), awserr.ErrInvalidArgument, "Tags")
	wantErr(t, rn.Streams.RemoveTagsFromStream(ctx, "tagged", nil), awserr.ErrInvalidArgument, "TagKeys")
	_, _, err = rn.Streams.ListTagsForStream(ctx, "tagged", "", 51)
	wantErr(t, err, awserr.ErrInvalidArgument, "Limit", "between 1 and 50")
	wantErr(t, rn.Streams.AddTagsToStream(ctx, "nope", map[string]string{"a": "b"}), awserr.ErrResourceNotFound, "nope")
	_, err = rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "bad-tags", Tags: map[string]string{"a": "b\x00"}})
	wantErr(t, err, awserr.ErrInvalidArgument, "Tags", "invalid characters")
	// Tags survive a reshard (the description is rewritten).
	if _, err := rn.Streams.UpdateShardCount(ctx, "tagged", 2, stream.UniformScaling); err != nil {
		t.Fatal(err)
	}
	if tags, _, _ := rn.Streams.ListTagsForStream(ctx, "tagged", "", 50); len(tags) != 50 {
		t.Errorf("%d tags after a reshard", len(tags))
	}
}
