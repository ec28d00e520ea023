package queue_test

import (
	"context"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/queue"
)

// Tags and permissions written through a process that does not hold the
// queues are forwarded to the one that does, so its loaded metadata has
// them: a SetQueueAttributes through the holder afterwards keeps them
// (a write to the bucket alone would be overwritten by the holder's
// older copy).
func TestTagsAndPermissionsThroughAnotherProcess(t *testing.T) {
	serve, cli := twoProcesses(t)
	ctx := context.Background()
	url, err := serve.Queues.CreateQueueWithTags(ctx, "jobs", nil, map[string]string{"team": "data"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := serve.Queues.GetQueueAttributes(ctx, url, nil); err != nil { // loaded by the holder
		t.Fatal(err)
	}
	if err := cli.Queues.TagQueue(ctx, url, map[string]string{"env": "prod"}); err != nil {
		t.Fatal(err)
	}
	if err := cli.Queues.AddPermission(ctx, url, queue.Permission{Label: "send", AWSAccountIds: []string{"111122223333"}, Actions: []string{"SendMessage"}}); err != nil {
		t.Fatal(err)
	}
	if err := serve.Queues.SetQueueAttributes(ctx, url, map[string]string{queue.AttrVisibilityTimeout: "60"}); err != nil {
		t.Fatal(err)
	}
	tags, err := cli.Queues.ListQueueTags(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if len(tags) != 2 || tags["team"] != "data" || tags["env"] != "prod" {
		t.Errorf("tags after SetQueueAttributes through the holder: %v", tags)
	}
	attrs, err := cli.Queues.GetQueueAttributes(ctx, url, []string{queue.AttrPolicy, queue.AttrVisibilityTimeout})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(attrs[queue.AttrPolicy], `"Sid":"send"`) || attrs[queue.AttrVisibilityTimeout] != "60" {
		t.Errorf("attributes: %v", attrs)
	}
	if err := cli.Queues.UntagQueue(ctx, url, []string{"team", "env"}); err != nil {
		t.Fatal(err)
	}
	if err := cli.Queues.RemovePermission(ctx, url, "send"); err != nil {
		t.Fatal(err)
	}
	tags, _ = serve.Queues.ListQueueTags(ctx, url)
	attrs, _ = serve.Queues.GetQueueAttributes(ctx, url, []string{queue.AttrAll})
	if len(tags) != 0 || attrs[queue.AttrPolicy] != "" {
		t.Errorf("after UntagQueue and RemovePermission: tags %v, policy %q", tags, attrs[queue.AttrPolicy])
	}
}

// ListDeadLetterSourceQueues finds the sources by their RedrivePolicy,
// also after one's policy is removed.
func TestListDeadLetterSourceQueues(t *testing.T) {
	serve, _ := twoProcesses(t)
	ctx := context.Background()
	dlq, err := serve.Queues.CreateQueue(ctx, "dlq", nil)
	if err != nil {
		t.Fatal(err)
	}
	policy := map[string]string{queue.AttrRedrivePolicy: `{"deadLetterTargetArn":"` + serve.Queues.ARN("dlq") + `","maxReceiveCount":2}`}
	for _, n := range []string{"b", "a"} {
		if _, err := serve.Queues.CreateQueue(ctx, n, policy); err != nil {
			t.Fatal(err)
		}
	}
	got, err := serve.Queues.ListDeadLetterSourceQueues(ctx, dlq)
	if err != nil || strings.Join(got, ",") != "a,b" {
		t.Fatalf("sources: %v %v", got, err)
	}
	if err := serve.Queues.SetQueueAttributes(ctx, "a", map[string]string{queue.AttrRedrivePolicy: ""}); err != nil {
		t.Fatal(err)
	}
	if got, _ = serve.Queues.ListDeadLetterSourceQueues(ctx, dlq); strings.Join(got, ",") != "b" {
		t.Fatalf("sources after a's policy is removed: %v", got)
	}
}
