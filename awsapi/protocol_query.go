package awsapi

// SQS's query protocol: a form (Action=<Op>&QueueUrl=...) in, an XML
// document out. Every SQS input reads itself from the form (formReader);
// results are written by encoding/xml with the same struct as the JSON
// protocol's, so their fields carry xml tags too.

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/runnel-dev/runnel/awserr"
)

// The XML namespaces of the query protocol's services.
const (
	sqsNS = "http://queue.amazonaws.com/doc/2012-11-05/"
	iamNS = "https://iam.amazonaws.com/doc/2010-05-08/"
	stsNS = "https://sts.amazonaws.com/doc/2011-06-15/"
	snsNS = "http://sns.amazonaws.com/doc/2010-03-31/"
)

// xmlNS is the namespace of the request's query-protocol service.
func (rq *request) xmlNS() string {
	switch rq.proto {
	case protoIAM:
		return iamNS
	case protoSTS:
		return stsNS
	case protoSNS:
		return snsNS
	}
	return sqsNS
}

// xmlMap is a map that the query protocol writes as flattened
// <Name/><Value/> entries (Attribute, MessageAttribute), sorted by name.
type xmlMap[V any] map[string]V

func (m xmlMap[V]) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	return xmlEntries(e, start, m, "Name")
}

// xmlTags is a map of tags, written as flattened <Key/><Value/> entries
// (SQS's Tag), sorted by key.
type xmlTags map[string]string

func (m xmlTags) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	return xmlEntries(e, start, m, "Key")
}

// xmlEntries writes m as flattened start elements of a <key/> and a
// <Value/>, sorted by key.
func xmlEntries[V any](e *xml.Encoder, start xml.StartElement, m map[string]V, key string) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := e.EncodeToken(start); err != nil {
			return err
		}
		if err := e.EncodeElement(k, xml.StartElement{Name: xml.Name{Local: key}}); err != nil {
			return err
		}
		if err := e.EncodeElement(m[k], xml.StartElement{Name: xml.Name{Local: "Value"}}); err != nil {
			return err
		}
		if err := e.EncodeToken(start.End()); err != nil {
			return err
		}
	}
	return nil
}

// formReader is an SQS input that reads itself from the query form.
type formReader interface{ readForm(f *qform) }

// decodeForm reads the query form into in, an SQS input.
func decodeForm(form url.Values, in any) error {
	fr, ok := in.(formReader)
	if !ok {
		return fmt.Errorf("awsapi: %T does not read the query form", in)
	}
	f := &qform{v: form}
	fr.readForm(f)
	return f.err
}

// qform reads the parameters of a query-protocol request.
type qform struct {
	v   url.Values
	err error
}

func (f *qform) get(k string) string { return f.v.Get(k) }

func (f *qform) has(k string) bool { _, ok := f.v[k]; return ok }

func (f *qform) intp(k string) *int {
	if !f.has(k) {
		return nil
	}
	n, err := strconv.Atoi(f.get(k))
	if err != nil && f.err == nil {
		f.err = awserr.New(awserr.ErrSQSInvalidParameterValue, "Value %s for parameter %s is invalid. Reason: must be an integer.", f.get(k), k)
	}
	return &n
}

func (f *qform) int(k string) int {
	if p := f.intp(k); p != nil {
		return *p
	}
	return 0
}

// indexes returns the N of the parameters prefix.N[...] in order; the
// non-flattened form prefix.member.N is accepted too (then the returned
// prefix includes ".member").
func (f *qform) indexes(prefix string) (string, []int) {
	for _, p := range []string{prefix, prefix + ".member"} {
		seen := map[int]bool{}
		for k := range f.v {
			rest, ok := strings.CutPrefix(k, p+".")
			if !ok {
				continue
			}
			num, _, _ := strings.Cut(rest, ".")
			if n, err := strconv.Atoi(num); err == nil && n > 0 {
				seen[n] = true
			}
		}
		if len(seen) > 0 {
			ns := make([]int, 0, len(seen))
			for n := range seen {
				ns = append(ns, n)
			}
			sort.Ints(ns)
			return p, ns
		}
	}
	return prefix, nil
}

// list reads prefix.1, prefix.2, ...
func (f *qform) list(prefix string) []string {
	p, ns := f.indexes(prefix)
	var out []string
	for _, n := range ns {
		out = append(out, f.get(p+"."+strconv.Itoa(n)))
	}
	return out
}

// attrs reads prefix.N.Name / prefix.N.Value.
func (f *qform) attrs(prefix string) map[string]string {
	return formMap(f, prefix, "Name", func(k string) string { return f.get(k + ".Value") })
}

// tags reads prefix.N.Key / prefix.N.Value (SQS's Tag).
func (f *qform) tags(prefix string) map[string]string {
	return formMap(f, prefix, "Key", func(k string) string { return f.get(k + ".Value") })
}

// msgAttrs reads prefix.N.Name and prefix.N.Value.{DataType,StringValue,BinaryValue}.
func (f *qform) msgAttrs(prefix string) map[string]msgAttr {
	return formMap(f, prefix, "Name", func(k string) msgAttr {
		a := msgAttr{DataType: f.get(k + ".Value.DataType")}
		if f.has(k + ".Value.StringValue") {
			s := f.get(k + ".Value.StringValue")
			a.StringValue = &s
		}
		if f.has(k + ".Value.BinaryValue") {
			b, err := base64.StdEncoding.DecodeString(f.get(k + ".Value.BinaryValue"))
			if err != nil && f.err == nil {
				f.err = awserr.New(awserr.ErrSQSInvalidParameterValue, "%s.Value.BinaryValue is not base64: %v", k, err)
			}
			a.BinaryValue = b
		}
		a.StringListValues = f.list(k + ".Value.StringListValue")
		return a
	})
}

// formMap reads prefix.N.<key> and, with value, what prefix.N holds (nil
// when there is no prefix.N).
func formMap[V any](f *qform, prefix, key string, value func(k string) V) map[string]V {
	p, ns := f.indexes(prefix)
	if len(ns) == 0 {
		return nil
	}
	out := make(map[string]V, len(ns))
	for _, n := range ns {
		k := p + "." + strconv.Itoa(n)
		out[f.get(k+"."+key)] = value(k)
	}
	return out
}

// replyXML writes out as the query protocol's XML document
// <OpResponse><OpResult>out</OpResult><ResponseMetadata/></OpResponse>
// (no Result element when out is nil).
func (rq *request) replyXML(out any) {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0"?>` + "\n")
	b.WriteString(`<` + rq.op + `Response xmlns="` + rq.xmlNS() + `">`)
	if out != nil {
		enc := xml.NewEncoder(&b)
		if err := enc.EncodeElement(out, xml.StartElement{Name: xml.Name{Local: rq.op + "Result"}}); err != nil {
			rq.fail(err)
			return
		}
		enc.Flush()
	}
	b.WriteString(`<ResponseMetadata><RequestId>` + rq.reqID + `</RequestId></ResponseMetadata></` + rq.op + `Response>`)
	rq.w.Header().Set("Content-Type", "text/xml")
	rq.w.Header().Set("x-amzn-RequestId", rq.reqID)
	rq.w.Write(b.Bytes())
}

func xmlEscape(b *bytes.Buffer, s string) { xml.EscapeText(b, []byte(s)) }
