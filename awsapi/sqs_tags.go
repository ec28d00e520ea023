package awsapi

// SQS: queue tags (TagQueue, UntagQueue, ListQueueTags; CreateQueue takes
// them too), permissions (AddPermission, RemovePermission: statements of
// the queue's Policy attribute, stored and returned, never enforced) and
// ListDeadLetterSourceQueues, over package queue (tags.go, permission.go).
//
// AWS: https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_TagQueue.html,
// API_UntagQueue.html, API_ListQueueTags.html, API_AddPermission.html,
// API_RemovePermission.html, API_ListDeadLetterSourceQueues.html.

import "github.com/runnel-dev/runnel/queue"

// tagQueueInput is TagQueue's {QueueUrl, Tags: {key: value}} (at most 50
// on the queue; keys 1..128 characters, values 0..256); the query
// protocol's Tag.N.Key and Tag.N.Value.
type tagQueueInput struct {
	queueInput
	Tags map[string]string
}

func (in *tagQueueInput) readForm(f *qform) { in.QueueUrl, in.Tags = f.get("QueueUrl"), f.tags("Tag") }

func sqsTagQueue(rq *request, in *tagQueueInput) (any, error) {
	return nil, rq.h.rn.Queues.TagQueue(rq.ctx, in.QueueUrl, in.Tags)
}

// untagQueueInput is UntagQueue's {QueueUrl, TagKeys: [key]}; the query
// protocol's TagKey.N.
type untagQueueInput struct {
	queueInput
	TagKeys []string
}

func (in *untagQueueInput) readForm(f *qform) {
	in.QueueUrl, in.TagKeys = f.get("QueueUrl"), f.list("TagKey")
}

func sqsUntagQueue(rq *request, in *untagQueueInput) (any, error) {
	return nil, rq.h.rn.Queues.UntagQueue(rq.ctx, in.QueueUrl, in.TagKeys)
}

// sqsListQueueTags answers {Tags: {key: value}} (omitted when none); the
// query protocol's <Tag><Key/><Value/></Tag>.
func sqsListQueueTags(rq *request, in *queueInput) (any, error) {
	tags, err := rq.h.rn.Queues.ListQueueTags(rq.ctx, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	return struct {
		Tags xmlTags `json:",omitempty" xml:"Tag,omitempty"`
	}{tags}, nil
}

// addPermissionInput is AddPermission's {QueueUrl, Label, AWSAccountIds,
// Actions}; the query protocol's AWSAccountId.N and ActionName.N.
type addPermissionInput struct {
	queueInput
	Label         string
	AWSAccountIds []string
	Actions       []string
}

func (in *addPermissionInput) readForm(f *qform) {
	in.QueueUrl, in.Label, in.AWSAccountIds, in.Actions = f.get("QueueUrl"), f.get("Label"), f.list("AWSAccountId"), f.list("ActionName")
}

// sqsAddPermission adds a statement to the queue's Policy (see
// queue.Permission: Label 1..80 of [a-zA-Z0-9_-], 12-digit accounts, 1..7
// actions of queue.PermissionActions; OverLimit past 7).
func sqsAddPermission(rq *request, in *addPermissionInput) (any, error) {
	return nil, rq.h.rn.Queues.AddPermission(rq.ctx, in.QueueUrl, queue.Permission{Label: in.Label, AWSAccountIds: in.AWSAccountIds, Actions: in.Actions})
}

// removePermissionInput is RemovePermission's {QueueUrl, Label}.
type removePermissionInput struct {
	queueInput
	Label string
}

func (in *removePermissionInput) readForm(f *qform) {
	in.QueueUrl, in.Label = f.get("QueueUrl"), f.get("Label")
}

func sqsRemovePermission(rq *request, in *removePermissionInput) (any, error) {
	return nil, rq.h.rn.Queues.RemovePermission(rq.ctx, in.QueueUrl, in.Label)
}

// listDeadLetterSourceQueuesInput is {QueueUrl, MaxResults (1..1000),
// NextToken}: without MaxResults every source comes in one page (AWS:
// at most 1000) and no NextToken.
type listDeadLetterSourceQueuesInput struct {
	queueInput
	queuePage
}

func (in *listDeadLetterSourceQueuesInput) readForm(f *qform) {
	in.QueueUrl = f.get("QueueUrl")
	in.queuePage.readForm(f)
}

// sqsListDeadLetterSourceQueues answers {queueUrls (lower case, as the
// model names it; always present), NextToken}: the queues whose
// RedrivePolicy targets this one, in name order.
func sqsListDeadLetterSourceQueues(rq *request, in *listDeadLetterSourceQueuesInput) (any, error) {
	urls, next, err := rq.urlPage(in.queuePage)(rq.h.rn.Queues.ListDeadLetterSourceQueues(rq.ctx, in.QueueUrl))
	return struct {
		QueueUrls []string `json:"queueUrls" xml:"QueueUrl"`
		NextToken string   `json:",omitempty" xml:",omitempty"`
	}{urls, next}, err
}
