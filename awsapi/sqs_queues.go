package awsapi

// SQS: queues (JSON protocol, X-Amz-Target "AmazonSQS.<Op>", and the
// query protocol, Action=<Op>) over package queue. Queue URLs point at the
// endpoint the client used (<scheme>://<Host>/<account>/<name>). No
// tags, no permissions (AddPermission), no KMS.

import (
	"encoding/base64"
	"sort"
	"strings"

	"github.com/runnel-dev/runnel/awserr"
)

type createQueueInput struct {
	QueueName  string
	Attributes map[string]string
}

func (in *createQueueInput) readForm(f *qform) {
	in.QueueName, in.Attributes = f.get("QueueName"), f.attrs("Attribute")
}

func sqsCreateQueue(rq *request, in *createQueueInput) (any, error) {
	if in.QueueName == "" {
		return nil, awserr.New(awserr.ErrMissingParameter, "The request must contain the parameter QueueName.")
	}
	return rq.urlResult(rq.h.rn.Queues.CreateQueue(rq.ctx, in.QueueName, in.Attributes))
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
	NextToken       string
	MaxResults      *int
}

func (in *listQueuesInput) readForm(f *qform) {
	in.QueueNamePrefix, in.NextToken, in.MaxResults = f.get("QueueNamePrefix"), f.get("NextToken"), f.intp("MaxResults")
}

func sqsListQueues(rq *request, in *listQueuesInput) (any, error) {
	urls, err := rq.h.rn.Queues.ListQueues(rq.ctx, in.QueueNamePrefix)
	if err != nil {
		return nil, err
	}
	if in.NextToken != "" {
		b, err := base64.RawURLEncoding.DecodeString(in.NextToken)
		if err != nil {
			return nil, awserr.New(awserr.ErrSQSInvalidParameterValue, "Invalid NextToken value.")
		}
		i := sort.Search(len(urls), func(i int) bool { return urls[i][strings.LastIndexByte(urls[i], '/')+1:] > string(b) })
		urls = urls[i:]
	}
	var next string
	if in.MaxResults != nil {
		if *in.MaxResults < 1 || *in.MaxResults > 1000 {
			return nil, awserr.New(awserr.ErrSQSInvalidParameterValue, "Value %d for parameter MaxResults is invalid. Reason: MaxResults must be an integer between 1 and 1000.", *in.MaxResults)
		}
		if len(urls) > *in.MaxResults {
			urls = urls[:*in.MaxResults]
			last := urls[len(urls)-1]
			next = base64.RawURLEncoding.EncodeToString([]byte(last[strings.LastIndexByte(last, '/')+1:]))
		}
	}
	for i := range urls {
		urls[i] = rq.queueURL(urls[i])
	}
	return struct {
		QueueUrls []string `json:",omitempty" xml:"QueueUrl"`
		NextToken string   `json:",omitempty" xml:",omitempty"`
	}{urls, next}, nil
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
