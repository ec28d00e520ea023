package awsapi

// SNS (query protocol, XML; and the JSON 1.0 protocol, X-Amz-Target
// SNS_20100331.*): topics and their tags. runnel serves
// standard and FIFO topics (package sns); the topic's Policy is stored,
// not enforced, and KMS encryption, tracing, archive and data protection
// policies are stored only. Maps are written as SNS writes them:
// <entry><key/><value/></entry>.

import (
	"encoding/base64"
	"encoding/xml"
	"sort"
	"strconv"
	"strings"

	"github.com/runnel-dev/runnel/awserr"
)

// snsPageSize is how many topics or subscriptions a List call returns
// (AWS: 100).
const snsPageSize = 100

// snsAttrs is a map the SNS query protocol writes as
// <entry><key/><value/></entry> elements, sorted by key.
type snsAttrs map[string]string

func (m snsAttrs) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	if err := e.EncodeToken(start); err != nil {
		return err
	}
	for _, k := range sortedKeys(m) {
		if err := e.EncodeElement(struct {
			Key   string `xml:"key"`
			Value string `xml:"value"`
		}{k, m[k]}, xml.StartElement{Name: xml.Name{Local: "entry"}}); err != nil {
			return err
		}
	}
	return e.EncodeToken(start.End())
}

// snsEntries reads the form's prefix.entry.N.<key>/<value> map.
func snsEntries(f *qform, prefix, key, value string) map[string]string {
	p, ns := f.indexes(prefix + ".entry")
	if len(ns) == 0 {
		return nil
	}
	out := make(map[string]string, len(ns))
	for _, n := range ns {
		k := p + "." + strconv.Itoa(n)
		out[f.get(k+"."+key)] = f.get(k + "." + value)
	}
	return out
}

// snsTags reads the form's Tags.member.N.Key/Value list.
func snsTags(f *qform) []snsTag {
	p, ns := f.indexes("Tags.member")
	var out []snsTag
	for _, n := range ns {
		k := p + "." + strconv.Itoa(n)
		out = append(out, snsTag{f.get(k + ".Key"), f.get(k + ".Value")})
	}
	return out
}

// tagMap is a tag list as a map (nil for none).
func tagMap(tags []snsTag) map[string]string {
	var m map[string]string
	for _, t := range tags {
		if m == nil {
			m = map[string]string{}
		}
		m[t.Key] = t.Value
	}
	return m
}

// snsPage returns the page of items after token and the next token
// ("" after the last page). items are sorted by key, which is unique; a
// token is the key of the last item of its page (base64, with kind:
// "topics" or "subscriptions"), so that the next page starts after it
// even when items before it were deleted meanwhile: a loop that pages
// and unsubscribes each subscription reaches them all (with an offset
// for a token, it skipped as many as it had deleted). A token that is
// not one of kind's is InvalidParameter naming NextToken, not the first
// page again.
func snsPage[T any](items []T, token, kind string, key func(T) string) ([]T, string, error) {
	if token != "" {
		b, err := base64.RawURLEncoding.DecodeString(token)
		after, ok := strings.CutPrefix(string(b), kind+"\x00")
		if err != nil || !ok {
			return nil, "", awserr.New(awserr.ErrSNSInvalidParameter, "Invalid parameter: NextToken: %q is not a token of a previous %s page", token, kind)
		}
		items = items[sort.Search(len(items), func(i int) bool { return key(items[i]) > after }):]
	}
	next := ""
	if len(items) > snsPageSize {
		items = items[:snsPageSize]
		next = base64.RawURLEncoding.EncodeToString([]byte(kind + "\x00" + key(items[len(items)-1])))
	}
	return items, next, nil
}

// The inputs read the query form (readForm) and, with their AWS names,
// the JSON protocol's body.
type snsCreateTopicInput struct {
	Name       string
	Attributes map[string]string
	Tags       []snsTag
}

func (in *snsCreateTopicInput) readForm(f *qform) {
	in.Name, in.Attributes, in.Tags = f.get("Name"), snsEntries(f, "Attributes", "key", "value"), snsTags(f)
}

type snsTopicArnResult struct{ TopicArn string }

func topicArn(arn string) snsTopicArnResult { return snsTopicArnResult{arn} }

func snsCreateTopic(rq *request, in *snsCreateTopicInput) (any, error) {
	return answer(topicArn)(rq.h.rn.SNS.CreateTopic(rq.ctx, in.Name, in.Attributes, tagMap(in.Tags)))
}

type snsTopicInput struct{ TopicArn string }

func (in *snsTopicInput) readForm(f *qform) { in.TopicArn = f.get("TopicArn") }

func snsDeleteTopic(rq *request, in *snsTopicInput) (any, error) {
	return nil, rq.h.rn.SNS.DeleteTopic(rq.ctx, in.TopicArn)
}

type snsListInput struct{ TopicArn, NextToken string }

func (in *snsListInput) readForm(f *qform) {
	in.TopicArn, in.NextToken = f.get("TopicArn"), f.get("NextToken")
}

type snsListTopicsResult struct {
	Topics    []snsTopicArnResult `xml:"Topics>member"`
	NextToken string              `xml:",omitempty" json:",omitempty"`
}

func snsListTopics(rq *request, in *snsListInput) (any, error) {
	var all []snsTopicArnResult
	for _, arn := range rq.h.rn.SNS.ListTopics() {
		all = append(all, topicArn(arn))
	}
	page, next, err := snsPage(all, in.NextToken, "topics", func(t snsTopicArnResult) string { return t.TopicArn })
	if err != nil {
		return nil, err
	}
	return snsListTopicsResult{Topics: page, NextToken: next}, nil
}

type snsAttributesResult struct {
	Attributes snsAttrs
}

func snsGetTopicAttributes(rq *request, in *snsTopicInput) (any, error) {
	a, err := rq.h.rn.SNS.GetTopicAttributes(in.TopicArn)
	if err != nil {
		return nil, err
	}
	return snsAttributesResult{a}, nil
}

type snsSetAttributeInput struct {
	TopicArn, SubscriptionArn, AttributeName, AttributeValue string
}

func (in *snsSetAttributeInput) readForm(f *qform) {
	in.TopicArn, in.SubscriptionArn = f.get("TopicArn"), f.get("SubscriptionArn")
	in.AttributeName, in.AttributeValue = f.get("AttributeName"), f.get("AttributeValue")
}

func snsSetTopicAttributes(rq *request, in *snsSetAttributeInput) (any, error) {
	return nil, rq.h.rn.SNS.SetTopicAttributes(rq.ctx, in.TopicArn, in.AttributeName, in.AttributeValue)
}

type snsTagInput struct {
	ResourceArn string
	Tags        []snsTag
	TagKeys     []string
}

func (in *snsTagInput) readForm(f *qform) {
	in.ResourceArn, in.Tags, in.TagKeys = f.get("ResourceArn"), snsTags(f), f.list("TagKeys")
}

// snsEmpty is the empty <OpResult/> the SDK expects of TagResource and
// UntagResource.
type snsEmpty struct{}

func snsTagResource(rq *request, in *snsTagInput) (any, error) {
	return snsEmpty{}, rq.h.rn.SNS.TagResource(rq.ctx, in.ResourceArn, tagMap(in.Tags))
}

func snsUntagResource(rq *request, in *snsTagInput) (any, error) {
	return snsEmpty{}, rq.h.rn.SNS.UntagResource(rq.ctx, in.ResourceArn, in.TagKeys)
}

type snsTag struct{ Key, Value string }

type snsListTagsResult struct {
	Tags []snsTag `xml:"Tags>member"`
}

func snsListTagsForResource(rq *request, in *snsTagInput) (any, error) {
	tags, err := rq.h.rn.SNS.ListTagsForResource(in.ResourceArn)
	if err != nil {
		return nil, err
	}
	out := snsListTagsResult{Tags: []snsTag{}}
	for _, k := range sortedKeys(tags) {
		out.Tags = append(out.Tags, snsTag{k, tags[k]})
	}
	return out, nil
}
