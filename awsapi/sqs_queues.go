package awsapi

// SQS: queues (JSON protocol, X-Amz-Target "AmazonSQS.<Op>", and the
// query protocol, Action=<Op>) over package queue. Queue URLs point at the
// endpoint the client used (<scheme>://<Host>/<account>/<name>). Tags and
// permissions are in sqs_tags.go; no KMS.

import (
	"encoding/base64"
	"sort"
	"strings"

	"github.com/runnel-dev/runnel/awserr"
)

type createQueueInput struct {
	QueueName  string
	Attributes map[string]string
	Tags       map[string]string `json:"tags"`
}

func (in *createQueueInput) readForm(f *qform) {
	in.QueueName, in.Attributes, in.Tags = f.get("QueueName"), f.attrs("Attribute"), f.tags("Tag")
}

// sqsCreateQueue creates a queue with its attributes and tags (tags
// only when the queue is new; API_CreateQueue).
func sqsCreateQueue(rq *request, in *createQueueInput) (any, error) {
	if in.QueueName == "" {
		return nil, awserr.New(awserr.ErrMissingParameter, "The request must contain the parameter QueueName.")
	}
	return rq.urlResult(rq.h.rn.Queues.CreateQueueWithTags(rq.ctx, in.QueueName, in.Attributes, in.Tags))
}

// urlResult answers CreateQueue and GetQueueUrl: the queue's URL as the
// client reaches it.
func (rq *request) urlResult(u string, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return struct{ QueueUrl string }{rq.queueURL(u)}, nil
}

type getQueueURLInput struct{ QueueName string }

func (in *getQueueURLInput) readForm(f *qform) { in.QueueName = f.get("QueueName") }

func sqsGetQueueURL(rq *request, in *getQueueURLInput) (any, error) {
	return rq.urlResult(rq.h.rn.Queues.GetQueueURL(rq.ctx, in.QueueName))
}

type listQueuesInput struct {
	QueueNamePrefix string
	queuePage
}

func (in *listQueuesInput) readForm(f *qform) {
	in.QueueNamePrefix = f.get("QueueNamePrefix")
	in.queuePage.readForm(f)
}

func sqsListQueues(rq *request, in *listQueuesInput) (any, error) {
	urls, next, err := rq.urlPage(in.queuePage)(rq.h.rn.Queues.ListQueues(rq.ctx, in.QueueNamePrefix))
	return struct {
		QueueUrls []string `json:",omitempty" xml:"QueueUrl"`
		NextToken string   `json:",omitempty" xml:",omitempty"`
	}{urls, next}, err
}

// queuePage is the page asked of a listing of queues (urlPage):
// NextToken, and MaxResults (1..1000) when given.
type queuePage struct {
	NextToken  string
	MaxResults *int
}

func (in *queuePage) readForm(f *qform) {
	in.NextToken, in.MaxResults = f.get("NextToken"), f.intp("MaxResults")
}

// urlPage pages a listing of queues: urlPage(p)(call(...)) is, of the
// call's urls (queue URLs or names, sorted by name), those after the queue
// named by p.NextToken (base64 of its name), at most p.MaxResults of
// them, with the URLs the client reaches them by, and the token of the
// next page ("" at the end); or the call's error.
func (rq *request) urlPage(p queuePage) func(urls []string, err error) (page []string, next string, _ error) {
	return func(urls []string, err error) ([]string, string, error) {
		if err != nil {
			return nil, "", err
		}
		return rq.urlsAfter(urls, p.NextToken, p.MaxResults)
	}
}

func (rq *request) urlsAfter(urls []string, token string, max *int) (page []string, next string, err error) {
	nameAt := func(i int) string { return urls[i][strings.LastIndexByte(urls[i], '/')+1:] }
	if token != "" {
		b, err := base64.RawURLEncoding.DecodeString(token)
		if err != nil {
			return nil, "", awserr.New(awserr.ErrSQSInvalidParameterValue, "Invalid NextToken value.")
		}
		urls = urls[sort.Search(len(urls), func(i int) bool { return nameAt(i) > string(b) }):]
	}
	if max == nil && len(urls) > 1000 {
		urls = urls[:1000] // "up to 1,000 results", no NextToken, without MaxResults (API_ListQueues)
	}
	if max != nil {
		if *max < 1 || *max > 1000 {
			return nil, "", awserr.New(awserr.ErrSQSInvalidParameterValue, "Value %d for parameter MaxResults is invalid. Reason: MaxResults must be an integer between 1 and 1000.", *max)
		}
		if len(urls) > *max {
			urls = urls[:*max]
			next = base64.RawURLEncoding.EncodeToString([]byte(nameAt(len(urls) - 1)))
		}
	}
	page = make([]string, len(urls))
	for i, u := range urls {
		page[i] = rq.queueURL(u)
	}
	return page, next, nil
}

// queueInput is the input of the calls that take only a queue.
type queueInput struct{ QueueUrl string }

func (in *queueInput) readForm(f *qform) { in.QueueUrl = f.get("QueueUrl") }

// check requires the QueueUrl, for every input that embeds queueInput.
func (in *queueInput) check() error { return requireURL(in.QueueUrl) }

func sqsDeleteQueue(rq *request, in *queueInput) (any, error) {
	return nil, rq.h.rn.Queues.DeleteQueue(rq.ctx, in.QueueUrl)
}

func sqsPurgeQueue(rq *request, in *queueInput) (any, error) {
	return nil, rq.h.rn.Queues.PurgeQueue(rq.ctx, in.QueueUrl)
}

type getQueueAttributesInput struct {
	queueInput
	AttributeNames []string
}

func (in *getQueueAttributesInput) readForm(f *qform) {
	in.QueueUrl, in.AttributeNames = f.get("QueueUrl"), f.list("AttributeName")
}

func sqsGetQueueAttributes(rq *request, in *getQueueAttributesInput) (any, error) {
	attrs, err := rq.h.rn.Queues.GetQueueAttributes(rq.ctx, in.QueueUrl, in.AttributeNames)
	if err != nil {
		return nil, err
	}
	return struct {
		Attributes xmlMap[string] `json:",omitempty" xml:"Attribute,omitempty"`
	}{attrs}, nil
}

type setQueueAttributesInput struct {
	queueInput
	Attributes map[string]string
}

func (in *setQueueAttributesInput) readForm(f *qform) {
	in.QueueUrl, in.Attributes = f.get("QueueUrl"), f.attrs("Attribute")
}

func sqsSetQueueAttributes(rq *request, in *setQueueAttributesInput) (any, error) {
	return nil, rq.h.rn.Queues.SetQueueAttributes(rq.ctx, in.QueueUrl, in.Attributes)
}
