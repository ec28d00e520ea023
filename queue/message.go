package queue

import (
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/runnel-dev/runnel/awserr"
)

// Message is a received message (API_Message).
type Message struct {
	// MessageId is the id SendMessage returned (a UUID). It is kept when
	// the message moves to a dead-letter queue and back.
	MessageId string
	// ReceiptHandle identifies this receive of the message; DeleteMessage
	// and ChangeMessageVisibility take it. Each receive gives a new one.
	ReceiptHandle string
	// MD5OfBody is the hex MD5 digest of Body.
	MD5OfBody string
	Body      string
	// Attributes are the system attributes asked for with AttributeNames
	// or MessageSystemAttributeNames (the Attr* names of this package),
	// all as strings; timestamps are Unix epoch milliseconds.
	Attributes map[string]string
	// MessageAttributes are the message attributes asked for with
	// MessageAttributeNames.
	MessageAttributes map[string]MessageAttributeValue
	// MD5OfMessageAttributes is the SQS digest of all the message's
	// attributes (see MD5OfMessageAttributes); empty without attributes.
	MD5OfMessageAttributes string
}

// MessageAttributeValue is a message attribute (API_MessageAttributeValue).
type MessageAttributeValue struct {
	// DataType is String, Number or Binary, optionally followed by a
	// custom label ("Number.float", "Binary.jpeg"). Required.
	DataType string
	// StringValue holds the value of String and Number attributes. A
	// Number is decimal, up to 38 significant digits, 0 or 10^-128 to
	// 10^+126 in magnitude (ValidNumber); else the send is
	// awserr.ErrSQSInvalidParameterValue.
	StringValue *string
	// BinaryValue holds the value of Binary attributes.
	BinaryValue []byte
	// StringListValues and BinaryListValues are reserved by SQS ("not
	// implemented"); runnel refuses them as SQS does.
	StringListValues []string `json:",omitempty"`
	BinaryListValues [][]byte `json:",omitempty"`
}

// System attribute names of a received message
// (API_ReceiveMessage MessageSystemAttributeNames).
const (
	MsgAttrApproximateFirstReceiveTimestamp = "ApproximateFirstReceiveTimestamp"
	MsgAttrApproximateReceiveCount          = "ApproximateReceiveCount"
	MsgAttrAWSTraceHeader                   = "AWSTraceHeader"
	MsgAttrSenderId                         = "SenderId"
	MsgAttrSentTimestamp                    = "SentTimestamp"
	MsgAttrSqsManagedSseEnabled             = "SqsManagedSseEnabled"
	MsgAttrMessageDeduplicationId           = "MessageDeduplicationId"
	MsgAttrMessageGroupId                   = "MessageGroupId"
	MsgAttrSequenceNumber                   = "SequenceNumber"
	MsgAttrDeadLetterQueueSourceArn         = "DeadLetterQueueSourceArn"
)

var systemAttrNames = map[string]bool{
	MsgAttrApproximateFirstReceiveTimestamp: true, MsgAttrApproximateReceiveCount: true,
	MsgAttrAWSTraceHeader: true, MsgAttrSenderId: true, MsgAttrSentTimestamp: true,
	MsgAttrSqsManagedSseEnabled: true, MsgAttrMessageDeduplicationId: true,
	MsgAttrMessageGroupId: true, MsgAttrSequenceNumber: true, MsgAttrDeadLetterQueueSourceArn: true,
}

// MD5OfBody returns the hex MD5 of a message body, as SQS reports it.
func MD5OfBody(body string) string {
	sum := md5.Sum([]byte(body))
	return hex.EncodeToString(sum[:])
}

// MD5OfMessageAttributes returns the digest SQS reports as
// MD5OfMessageAttributes (SQSDeveloperGuide/sqs-message-metadata.html,
// "Calculating the MD5 message digest for message attributes"): the
// attributes sorted by name, each encoded as the name, the data type
// (each a 4-byte big-endian length and UTF-8 bytes), a transport byte (1
// for String and Number, 2 for Binary) and the value (4-byte length and
// bytes); the hex MD5 of it all. Empty when there are no attributes.
func MD5OfMessageAttributes(attrs map[string]MessageAttributeValue) string {
	if len(attrs) == 0 {
		return ""
	}
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	h := md5.New()
	var buf []byte
	put := func(b []byte) {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(b)))
		buf = append(buf, b...)
	}
	for _, n := range names {
		v := attrs[n]
		buf = buf[:0]
		put([]byte(n))
		put([]byte(v.DataType))
		if v.BinaryValue != nil || strings.HasPrefix(v.DataType, "Binary") {
			buf = append(buf, 2)
			put(v.BinaryValue)
		} else {
			buf = append(buf, 1)
			s := ""
			if v.StringValue != nil {
				s = *v.StringValue
			}
			put([]byte(s))
		}
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// validChars reports whether s holds only the characters SQS allows in a
// body or string attribute: #x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD
// | #x10000-#x10FFFF.
func validChars(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x80 {
			i++
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && w <= 1 {
			return false
		}
		switch {
		case r == 0x9 || r == 0xA || r == 0xD:
		case r >= 0x20 && r <= 0xD7FF:
		case r >= 0xE000 && r <= 0xFFFD:
		case r >= 0x10000 && r <= 0x10FFFF:
		default:
			return false
		}
		i += w
	}
	return true
}

var (
	attrNameRE = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,256}$`)
	dataTypeRE = regexp.MustCompile(`^(String|Number|Binary)(\.[^\s]{1,256})?$`)
	// group and deduplication ids: 1..128 alphanumerics and punctuation.
	fifoIDRE = regexp.MustCompile("^[a-zA-Z0-9!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~]{1,128}$")
)

// MaxMessageAttributes is the most message attributes one message takes.
const MaxMessageAttributes = 10

// validateMessageAttributes checks a message's attributes and returns the
// bytes they count towards the message size (names, data types, values).
func validateMessageAttributes(attrs map[string]MessageAttributeValue) (int, error) {
	if len(attrs) > MaxMessageAttributes {
		return 0, awserr.New(awserr.ErrSQSInvalidParameterValue, "Number of message attributes [%d] exceeds the allowed maximum [%d].", len(attrs), MaxMessageAttributes)
	}
	size := 0
	for name, v := range attrs {
		lower := strings.ToLower(name)
		if !attrNameRE.MatchString(name) || strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") ||
			strings.Contains(name, "..") || strings.HasPrefix(lower, "aws.") || strings.HasPrefix(lower, "amazon.") {
			return 0, awserr.New(awserr.ErrSQSInvalidParameterValue, "Message attribute name '%s' is invalid: 1..256 characters of [a-zA-Z0-9_.-], no leading, trailing or doubled '.', no 'AWS.' or 'Amazon.' prefix.", name)
		}
		if !dataTypeRE.MatchString(v.DataType) {
			return 0, awserr.New(awserr.ErrSQSInvalidParameterValue, "The message attribute '%s' has an invalid message attribute type '%s': String, Number or Binary, optionally with a '.label' suffix.", name, v.DataType)
		}
		if len(v.StringListValues) > 0 || len(v.BinaryListValues) > 0 {
			return 0, awserr.New(awserr.ErrSQSInvalidParameterValue, "Message attribute '%s': StringListValues and BinaryListValues are not implemented.", name)
		}
		size += len(name) + len(v.DataType)
		if strings.HasPrefix(v.DataType, "Binary") {
			if len(v.BinaryValue) == 0 {
				return 0, awserr.New(awserr.ErrSQSInvalidParameterValue, "The message attribute '%s' with type 'Binary' must use field 'BinaryValue'.", name)
			}
			size += len(v.BinaryValue)
			continue
		}
		if v.StringValue == nil || *v.StringValue == "" {
			return 0, awserr.New(awserr.ErrSQSInvalidParameterValue, "The message attribute '%s' must contain a non-empty value of message attribute type '%s'.", name, v.DataType)
		}
		s := *v.StringValue
		if strings.HasPrefix(v.DataType, "Number") {
			if !ValidNumber(s) {
				return 0, awserr.New(awserr.ErrSQSInvalidParameterValue, "Could not cast message attribute '%s' value to number: a Number is decimal (no NaN, Infinity or hexadecimal), of up to %d significant digits, 0 or between 10^%d and 10^+%d in magnitude.", name, MaxNumberDigits, MinNumberExponent, MaxNumberExponent)
			}
		} else if !validChars(s) {
			return 0, awserr.New(awserr.ErrInvalidMessageContents, "Message attribute '%s' contains characters outside the allowed set.", name)
		}
		size += len(s)
	}
	return size, nil
}

// attributesSize is what message attributes count towards a message's
// size: names, data types and values.
func attributesSize(attrs map[string]MessageAttributeValue) int {
	n := 0
	for k, v := range attrs {
		n += len(k) + len(v.DataType) + len(v.BinaryValue)
		if v.StringValue != nil {
			n += len(*v.StringValue)
		}
	}
	return n
}

// selectAttributes returns the message attributes whose names match the
// MessageAttributeNames of a receive: "All" or ".*" for all, "prefix.*" for
// a prefix, or exact names.
func selectAttributes(attrs map[string]MessageAttributeValue, names []string) map[string]MessageAttributeValue {
	if len(attrs) == 0 || len(names) == 0 {
		return nil
	}
	out := map[string]MessageAttributeValue{}
	for _, n := range names {
		switch {
		case n == "All" || n == ".*":
			for k, v := range attrs {
				out[k] = v
			}
		case strings.HasSuffix(n, ".*"):
			p := strings.TrimSuffix(n, "*")
			for k, v := range attrs {
				if strings.HasPrefix(k, p) {
					out[k] = v
				}
			}
		default:
			if v, ok := attrs[n]; ok {
				out[n] = v
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
