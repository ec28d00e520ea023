package sns

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/queue"
)

// Publish limits (API_Publish, API_PublishBatch).
const (
	// MaxMessageSize is the largest message, with its attributes' names,
	// types and values: 262,144 bytes.
	MaxMessageSize = 256 * 1024
	// MaxBatchEntries is the most entries of a PublishBatch.
	MaxBatchEntries = 10
	// MaxSubjectLength: Subject is 1..99 characters.
	MaxSubjectLength = 99
)

// Attribute is a message attribute (API_MessageAttributeValue): DataType
// String, String.Array (a JSON array in StringValue), Number (in
// StringValue) or Binary, each optionally with a custom label
// ("Number.float").
type Attribute struct {
	DataType    string
	StringValue string `json:",omitempty"`
	BinaryValue []byte `json:",omitempty"`
}

// PublishInput is the input of Publish (API_Publish).
type PublishInput struct {
	// TopicArn (or TargetArn, the same here) names the topic. Required.
	TopicArn string
	// Message: 1 byte up to MaxMessageSize with the attributes. With
	// MessageStructure "json", a JSON object whose "default" string is
	// sent to protocols without their own key ("sqs", "lambda", "http",
	// "https").
	Message          string
	Subject          string
	MessageStructure string
	// MessageAttributes: names 1..256 of [A-Za-z0-9_.-] (no leading,
	// trailing or double '.', no "AWS." or "Amazon." prefix).
	MessageAttributes map[string]Attribute
	// MessageGroupId (1..128 characters): required on FIFO topics, where
	// it orders delivery; on standard topics it is forwarded to SQS
	// subscriptions only.
	MessageGroupId string
	// MessageDeduplicationId (FIFO only, 1..128 characters): a publish
	// with an id seen within 5 minutes is accepted and not delivered.
	// Required unless the topic has ContentBasedDeduplication (SHA-256 of
	// Message).
	MessageDeduplicationId string
}

// PublishOutput is the result of Publish: the MessageId, and on FIFO
// topics the SequenceNumber.
type PublishOutput struct {
	MessageId      string
	SequenceNumber string `json:",omitempty" xml:",omitempty"`
}

// PublishBatchEntry is one entry of PublishBatch; Id (1..80 of
// [A-Za-z0-9_-], distinct) names it in the result.
type PublishBatchEntry struct {
	Id string
	PublishInput
}

// BatchResultEntry is a published entry of PublishBatch.
type BatchResultEntry struct {
	Id, MessageId  string
	SequenceNumber string `json:",omitempty" xml:",omitempty"`
}

// BatchResultErrorEntry is a failed entry of PublishBatch.
type BatchResultErrorEntry struct {
	Id, Code, Message string
	SenderFault       bool
}

// PublishBatchOutput lists the published and the failed entries.
type PublishBatchOutput struct {
	Successful []BatchResultEntry
	Failed     []BatchResultErrorEntry
}

// record is a published message as the internal queue stores it.
type record struct {
	MessageId        string               `json:"-"` // the internal queue's MessageId
	Message          string               `json:"m"`
	Subject          string               `json:"s,omitempty"`
	MessageStructure string               `json:"ms,omitempty"`
	Attributes       map[string]Attribute `json:"a,omitempty"`
	Timestamp        int64                `json:"t"` // Unix ms, engine clock
	GroupId          string               `json:"g,omitempty"`
	DedupId          string               `json:"d,omitempty"`
	SequenceNumber   string               `json:"-"` // FIFO: the internal queue's
	entryID          string               // the PublishBatch entry's Id (standard topics)
	// sigs caches the envelope's signature fields (version, signature,
	// certificate URL) by signature version and message text.
	sigs map[string][3]string
}

// Publish stores a message for delivery to the topic's subscriptions and
// returns its MessageId once it is durable (API_Publish). Errors:
// InvalidParameter (empty or too long message, Subject, MessageStructure,
// FIFO group and deduplication ids), ParameterValueInvalid (attributes),
// NotFound (topic).
func (s *Service) Publish(ctx context.Context, in PublishInput) (*PublishOutput, error) {
	t, err := s.topicByARN(in.TopicArn)
	if err != nil {
		return nil, err
	}
	out, err := s.store(ctx, t, []PublishBatchEntry{{Id: "0", PublishInput: in}})
	if err != nil {
		return nil, err
	}
	for _, f := range out.Failed {
		return nil, &awserr.Error{Code: f.Code, Message: f.Message}
	}
	return &PublishOutput{MessageId: out.Successful[0].MessageId, SequenceNumber: out.Successful[0].SequenceNumber}, nil
}

var batchIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)

// PublishBatch publishes up to 10 messages to one topic in one write
// (API_PublishBatch). The request fails as a whole with
// EmptyBatchRequest, TooManyEntriesInBatchRequest,
// BatchEntryIdsNotDistinct, InvalidBatchEntryId or BatchRequestTooLong
// (more than 262,144 bytes in all); otherwise each entry succeeds or
// fails on its own. On FIFO topics duplicates are found within the batch
// and across batches.
func (s *Service) PublishBatch(ctx context.Context, topicArn string, entries []PublishBatchEntry) (*PublishBatchOutput, error) {
	t, err := s.topicByARN(topicArn)
	if err != nil {
		return nil, err
	}
	switch {
	case len(entries) == 0:
		return nil, awserr.New(awserr.ErrSNSEmptyBatchRequest, "The batch request doesn't contain any entries.")
	case len(entries) > MaxBatchEntries:
		return nil, awserr.New(awserr.ErrSNSTooManyEntriesInBatchRequest, "The batch request contains more entries than permissible (%d, at most %d).", len(entries), MaxBatchEntries)
	}
	seen, total := map[string]bool{}, 0
	for _, e := range entries {
		if !batchIDRE.MatchString(e.Id) {
			return nil, awserr.New(awserr.ErrSNSInvalidBatchEntryId, "The Id of a batch entry in a batch request doesn't abide by the specification (1..80 of [A-Za-z0-9_-]): %q", e.Id)
		}
		if seen[e.Id] {
			return nil, awserr.New(awserr.ErrSNSBatchEntryIdsNotDistinct, "Two or more batch entries in the request have the same Id: %s", e.Id)
		}
		seen[e.Id] = true
		total += messageSize(&e.PublishInput)
	}
	if total > MaxMessageSize {
		return nil, awserr.New(awserr.ErrSNSBatchRequestTooLong, "The length of all the messages put together is more than the limit (%d bytes, at most %d).", total, MaxMessageSize)
	}
	return s.store(ctx, t, entries)
}

// store checks each entry and stores the valid ones in t's internal
// queue, in one write.
func (s *Service) store(ctx context.Context, t *topic, entries []PublishBatchEntry) (*PublishBatchOutput, error) {
	s.mu.Lock()
	meta := *t.meta()
	s.mu.Unlock()
	out := &PublishBatchOutput{}
	now := s.eng.Clock.Now().UnixMilli()
	direct := !meta.FIFO && !s.opts.Passive // a passive process delivers nothing
	var send []queue.SendMessageBatchRequestEntry
	var recs []*record
	for _, e := range entries {
		r, qe, err := check(&meta, &e.PublishInput, now)
		if err != nil {
			out.Failed = append(out.Failed, failure(e.Id, err))
			continue
		}
		if !direct { // deliverDirect writes the bodies of what it leaves
			qe.MessageBody = r.body()
		}
		qe.Id = e.Id
		send, recs = append(send, qe), append(recs, r)
	}
	if len(send) == 0 {
		return out, nil
	}
	if direct {
		if send = s.deliverDirect(ctx, &meta, send, recs); len(send) == 0 {
			for i := range recs {
				out.Successful = append(out.Successful, BatchResultEntry{Id: recs[i].entryID, MessageId: recs[i].MessageId})
			}
			t.c.published.Add(int64(len(recs)))
			return out, nil
		}
	}
	res, err := s.queues.SendMessageBatch(ctx, meta.queueName(), send)
	if err != nil {
		return nil, awserr.New(awserr.ErrInternal, "store the messages of topic %s: %v", meta.Name, err)
	}
	published := 0
	failed := map[string]bool{}
	for _, f := range res.Failed {
		s.log.Warn("sns: a message could not be stored; the publisher is told (InternalError)", "topic", meta.Name, "id", f.Id, "err", f.Message)
		out.Failed = append(out.Failed, BatchResultErrorEntry{Id: f.Id, Code: awserr.ErrInternal.Code, Message: f.Message})
		failed[f.Id] = true
	}
	if !direct {
		for _, r := range res.Successful {
			out.Successful = append(out.Successful, BatchResultEntry{Id: r.Id, MessageId: r.MessageId, SequenceNumber: r.SequenceNumber})
		}
		published = len(res.Successful)
	} else {
		// A standard topic's message keeps the id deliverDirect gave it
		// (the internal message carries it in an attribute).
		for _, r := range recs {
			if !failed[r.entryID] {
				out.Successful = append(out.Successful, BatchResultEntry{Id: r.entryID, MessageId: r.MessageId})
				published++
			}
		}
	}
	t.c.published.Add(int64(published))
	return out, nil
}

func failure(id string, err error) BatchResultErrorEntry {
	var ae *awserr.Error
	if errors.As(err, &ae) {
		return BatchResultErrorEntry{Id: id, Code: ae.Code, Message: ae.Message, SenderFault: true}
	}
	return BatchResultErrorEntry{Id: id, Code: awserr.ErrInternal.Code, Message: err.Error()}
}

// messageSize is the size SNS counts: the message and each attribute's
// name, type and value.
func messageSize(in *PublishInput) int {
	n := len(in.Message)
	for k, a := range in.MessageAttributes {
		n += len(k) + len(a.DataType) + len(a.StringValue) + len(a.BinaryValue)
	}
	return n
}

// check applies Publish's rules to one message and returns its record
// and its internal queue entry (FIFO group and deduplication ids; no
// body yet).
func check(t *topicMeta, in *PublishInput, now int64) (*record, queue.SendMessageBatchRequestEntry, error) {
	var qe queue.SendMessageBatchRequestEntry
	if in.Message == "" {
		return nil, qe, invalid("Empty message")
	}
	if messageSize(in) > MaxMessageSize {
		return nil, qe, invalid("Message too long")
	}
	if in.Subject != "" {
		if len([]rune(in.Subject)) > MaxSubjectLength || strings.IndexFunc(in.Subject, unicode.IsControl) >= 0 || strings.TrimSpace(in.Subject) == "" {
			return nil, qe, invalid("Subject")
		}
	}
	switch in.MessageStructure {
	case "":
	case "json":
		var m map[string]any
		if json.Unmarshal([]byte(in.Message), &m) != nil {
			return nil, qe, invalid("Message Structure - JSON message body failed to parse")
		}
		if _, ok := m["default"].(string); !ok {
			return nil, qe, invalid("Message Structure - No default entry in JSON message body")
		}
	default:
		return nil, qe, invalid("MessageStructure")
	}
	if err := checkAttributes(in.MessageAttributes); err != nil {
		return nil, qe, err
	}
	r := record{Message: in.Message, Subject: in.Subject, MessageStructure: in.MessageStructure,
		Attributes: in.MessageAttributes, Timestamp: now, GroupId: in.MessageGroupId}
	if in.MessageGroupId != "" && !idRE.MatchString(in.MessageGroupId) {
		return nil, qe, invalid("MessageGroupId Reason: 1..128 alphanumeric or punctuation characters")
	}
	if t.FIFO {
		if in.MessageGroupId == "" {
			return nil, qe, invalid("The MessageGroupId parameter is required for FIFO topics")
		}
		r.DedupId = in.MessageDeduplicationId
		switch {
		case r.DedupId != "" && !idRE.MatchString(r.DedupId):
			return nil, qe, invalid("MessageDeduplicationId Reason: 1..128 alphanumeric or punctuation characters")
		case r.DedupId == "" && !t.contentDedup():
			return nil, qe, invalid("The topic should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly")
		case r.DedupId == "":
			sum := sha256.Sum256([]byte(in.Message))
			r.DedupId = hex.EncodeToString(sum[:])
		}
		qe.MessageGroupId, qe.MessageDeduplicationId = r.GroupId, r.DedupId
	} else if in.MessageDeduplicationId != "" {
		return nil, qe, invalid("MessageDeduplicationId Reason: The request includes MessageDeduplicationId parameter that is not valid for this topic type")
	}
	return &r, qe, nil
}

var (
	idRE       = regexp.MustCompile(`^[\x21-\x7e]{1,128}$`)
	attrNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,256}$`)
)

// checkAttributes applies SNS's rules on message attributes
// (ParameterValueInvalid, in AWS's words).
func checkAttributes(attrs map[string]Attribute) error {
	for name, a := range attrs {
		lower := strings.ToLower(name)
		if !attrNameRE.MatchString(name) || strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") ||
			strings.Contains(name, "..") || strings.HasPrefix(lower, "aws.") || strings.HasPrefix(lower, "amazon.") {
			return awserr.New(awserr.ErrSNSParameterValueInvalid, "The message attribute name '%s' is invalid: 1..256 of [A-Za-z0-9_.-], no leading, trailing or double '.', no AWS. or Amazon. prefix.", name)
		}
		switch baseType(a.DataType) {
		case "String":
			if a.StringValue == "" {
				return awserr.New(awserr.ErrSNSParameterValueInvalid, "The message attribute '%s' must contain non-empty message attribute value for message attribute type '%s'.", name, a.DataType)
			}
			if strings.HasPrefix(a.DataType, "String.Array") {
				var arr []any
				if json.Unmarshal([]byte(a.StringValue), &arr) != nil {
					return awserr.New(awserr.ErrSNSParameterValueInvalid, "The message attribute '%s' with type 'String.Array' has to be a valid json array.", name)
				}
			}
		case "Number":
			// A decimal number of up to 38 significant digits, 0 or from
			// 10^-128 to 10^+126 (sns-message-attributes: "A number can
			// have up to 38 digits of precision, and it can be between
			// 10^-128 and 10^+126"), SQS's rule: an attribute SNS takes is
			// one a subscribed queue takes. NaN, Inf and hexadecimal are
			// no numbers.
			if !queue.ValidNumber(a.StringValue) {
				return awserr.New(awserr.ErrSNSParameterValueInvalid, "Could not cast message attribute '%s' value to number.", name)
			}
		case "Binary":
			if len(a.BinaryValue) == 0 {
				return awserr.New(awserr.ErrSNSParameterValueInvalid, "The message attribute '%s' must contain non-empty message attribute value for message attribute type 'Binary'.", name)
			}
		default:
			return awserr.New(awserr.ErrSNSParameterValueInvalid, "The message attribute '%s' has an invalid message attribute type, the set of supported type prefixes is Binary, Number, and String.", name)
		}
	}
	return nil
}

// messageFor is what a protocol receives of r: with MessageStructure
// "json", the protocol's key or "default".
func (r *record) messageFor(protocol string) string {
	if r.MessageStructure != "json" {
		return r.Message
	}
	var m map[string]any
	json.Unmarshal([]byte(r.Message), &m)
	if v, ok := m[protocol].(string); ok {
		return v
	}
	v, _ := m["default"].(string)
	return v
}

// timestamp is r's time in the envelope's form (ms, UTC).
func (r *record) timestamp() string {
	return time.UnixMilli(r.Timestamp).UTC().Format("2006-01-02T15:04:05.000Z")
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
