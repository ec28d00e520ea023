package awsapi

// SNS (query protocol, XML): Publish and PublishBatch to a topic
// (TopicArn or TargetArn naming a topic); SMS to a PhoneNumber and
// platform endpoints as TargetArn are refused.

import (
	"encoding/base64"
	"strconv"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/sns"
)

// snsPublishFields reads one message's fields under prefix ("" for
// Publish, "PublishBatchRequestEntries.member.N." for a batch entry).
func snsPublishFields(f *qform, prefix string) sns.PublishInput {
	in := sns.PublishInput{Message: f.get(prefix + "Message"), Subject: f.get(prefix + "Subject"),
		MessageStructure: f.get(prefix + "MessageStructure"), MessageGroupId: f.get(prefix + "MessageGroupId"),
		MessageDeduplicationId: f.get(prefix + "MessageDeduplicationId")}
	p, ns := f.indexes(prefix + "MessageAttributes.entry")
	for _, n := range ns {
		k := p + "." + strconv.Itoa(n)
		a := sns.Attribute{DataType: f.get(k + ".Value.DataType"), StringValue: f.get(k + ".Value.StringValue")}
		if f.has(k + ".Value.BinaryValue") {
			b, err := base64.StdEncoding.DecodeString(f.get(k + ".Value.BinaryValue"))
			if err != nil && f.err == nil {
				f.err = awserr.New(awserr.ErrSNSParameterValueInvalid, "The message attribute '%s' has an invalid binary value: not base64", f.get(k+".Name"))
			}
			a.BinaryValue = b
		}
		if in.MessageAttributes == nil {
			in.MessageAttributes = map[string]sns.Attribute{}
		}
		in.MessageAttributes[f.get(k+".Name")] = a
	}
	return in
}

type snsPublishInput struct {
	sns.PublishInput
	TargetArn, PhoneNumber string
}

func (in *snsPublishInput) readForm(f *qform) {
	in.PublishInput = snsPublishFields(f, "")
	in.TopicArn, in.TargetArn, in.PhoneNumber = f.get("TopicArn"), f.get("TargetArn"), f.get("PhoneNumber")
}

func (in *snsPublishInput) check() error {
	if in.PhoneNumber != "" {
		return awserr.New(awserr.ErrSNSInvalidParameter, "Invalid parameter: PhoneNumber Reason: runnel does not send SMS")
	}
	if in.TopicArn == "" {
		in.TopicArn = in.TargetArn
	}
	if in.TopicArn == "" {
		return awserr.New(awserr.ErrSNSInvalidParameter, "Invalid parameter: TopicArn or TargetArn Reason: no value for required parameter")
	}
	return nil
}

func snsPublish(rq *request, in *snsPublishInput) (any, error) {
	return rq.h.rn.SNS.Publish(rq.ctx, in.PublishInput)
}

type snsPublishBatchInput struct {
	TopicArn                   string
	PublishBatchRequestEntries []sns.PublishBatchEntry
}

func (in *snsPublishBatchInput) readForm(f *qform) {
	in.TopicArn = f.get("TopicArn")
	p, ns := f.indexes("PublishBatchRequestEntries.member")
	for _, n := range ns {
		k := p + "." + strconv.Itoa(n) + "."
		in.PublishBatchRequestEntries = append(in.PublishBatchRequestEntries, sns.PublishBatchEntry{Id: f.get(k + "Id"), PublishInput: snsPublishFields(f, k)})
	}
}

type snsBatchFailure struct {
	Id, Code    string
	Message     string `xml:",omitempty" json:",omitempty"`
	SenderFault bool
}

type snsPublishBatchResult struct {
	Successful []sns.BatchResultEntry `xml:"Successful>member"`
	Failed     []snsBatchFailure      `xml:"Failed>member"`
}

func snsPublishBatch(rq *request, in *snsPublishBatchInput) (any, error) {
	out, err := rq.h.rn.SNS.PublishBatch(rq.ctx, in.TopicArn, in.PublishBatchRequestEntries)
	if err != nil {
		return nil, err
	}
	res := snsPublishBatchResult{Successful: out.Successful}
	for _, f := range out.Failed {
		res.Failed = append(res.Failed, snsBatchFailure(f))
	}
	return res, nil
}
