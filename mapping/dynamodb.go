package mapping

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/mapping/filter"
	"github.com/runnel-dev/runnel/stream"
	"github.com/runnel-dev/runnel/table"
	"github.com/runnel-dev/runnel/wire/ddbjson"
)

// ddbSource is a table's change stream as an event source: the shards of
// the table's change log, read with the stream mapping rules
// (https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html), delivered
// as events.DynamoDBEvent. Only changes written under the stream's label
// belong to it.
type ddbSource struct {
	label string
	table *table.Table
}

func ddbItemKey(rec *stream.Record) string { return table.ItemKeyOf(rec.PartitionKey) }

func (d *ddbSource) inStream(rec *stream.Record) bool {
	return table.LabelOf(rec.PartitionKey) == d.label
}

// record decodes one change into the record Lambda delivers. A change
// still in the table's ring of recent changes is the table's (its images
// are the item cache's): the record is a copy of it (table.EventRecord),
// the handler's own, unless shared (a filter's match, which only encodes
// it) when it is only read.
func (d *ddbSource) record(r *runner, rec *stream.Record, shared bool) events.DynamoDBEventRecord {
	if idx, err := strconv.Atoi(strings.TrimPrefix(rec.ShardID, "shardId-")); err == nil {
		if c := d.table.RecentChange(idx, rec.Seq); c != nil {
			if shared {
				return table.EventRecordShared(rec, c, r.svc.eng.Region(), r.streamARN)
			}
			return table.EventRecord(rec, c, r.svc.eng.Region(), r.streamARN)
		}
	}
	c, err := table.DecodeChange(rec.Data)
	if err != nil {
		// A record runnel wrote itself; a bad one is delivered with its
		// sequence number so it can be reported, never dropped.
		r.svc.eng.Logger.Error("undecodable change record", "mapping", r.cfg.UUID, "sequenceNumber", rec.SequenceNumber, "err", err)
		c = &table.Change{}
	}
	// Decoded here: the change is this record's alone, no copy needed.
	return table.EventRecordShared(rec, c, r.svc.eng.Region(), r.streamARN)
}

// match applies FilterCriteria to the record as Lambda sees it
// ({"eventName":...,"dynamodb":{"NewImage":...}}).
func (d *ddbSource) match(r *runner, m *filter.Matcher, rec *stream.Record) bool {
	record := d.record(r, rec, true)
	b := ddbjson.AppendEventRecord(nil, &record)
	var ev map[string]any
	if err := json.Unmarshal(b, &ev); err != nil {
		return false
	}
	return m.Match(ev)
}

func (d *ddbSource) event(r *runner, recs []stream.Record) *events.DynamoDBEvent {
	ev := &events.DynamoDBEvent{Records: make([]events.DynamoDBEventRecord, len(recs))}
	for i := range recs {
		ev.Records[i] = d.record(r, &recs[i], false)
	}
	return ev
}
