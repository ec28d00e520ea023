package awsapi_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/table"
)

// streamOfOneItem makes the table "orders", writes n items of size bytes
// under one partition key (one shard of its stream) and returns the
// stream's ARN and that shard's id.
func streamOfOneItem(t *testing.T, e *endpoint, n, size int) (arn, shard *string) {
	t.Helper()
	ctx := context.Background()
	c, sc := e.ddb(), e.ddbStreams()
	td := createOrders(t, c, "orders")
	for i := range n {
		must(c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("orders"), Item: map[string]types.AttributeValue{
			"pk": ddbS("p"), "sk": ddbN(i), "blob": ddbS(strings.Repeat("x", size))}}))
	}
	d := must(sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: td.LatestStreamArn})).StreamDescription
	for _, sh := range d.Shards {
		it := must(sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: td.LatestStreamArn, ShardId: sh.ShardId, ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})).ShardIterator
		if out := must(sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it, Limit: aws.Int32(1)})); len(out.Records) > 0 {
			return td.LatestStreamArn, sh.ShardId
		}
	}
	t.Fatal("no shard holds the records")
	return nil, nil
}

// TestStreamIteratorsLastFifteenMinutes: a DynamoDB Streams shard
// iterator "expires 15 minutes after it is returned to the requester"
// (API_streams_GetShardIterator), not after Kinesis's 5.
func TestStreamIteratorsLastFifteenMinutes(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	e := startEnv(t, awsapi.Options{}, testenv.Options{Clock: clock})
	sc := e.ddbStreams()
	ctx := context.Background()
	arn, shard := streamOfOneItem(t, e, 1, 10)
	iter := func() *string {
		return must(sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: arn, ShardId: shard, ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})).ShardIterator
	}
	it := iter()
	clock.Advance(14 * time.Minute)
	if _, err := sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it}); err != nil {
		t.Fatalf("an iterator 14 minutes old: %v", err)
	}
	it = iter()
	clock.Advance(15*time.Minute + time.Second)
	_, err := sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it})
	var exp *stypes.ExpiredIteratorException
	if !errors.As(err, &exp) {
		t.Fatalf("an iterator 15 minutes and a second old: %v, want ExpiredIteratorException", err)
	}
}

// TestASequenceNumberPastTheStreamsDayIsTrimmed: AT_SEQUENCE_NUMBER and
// AFTER_SEQUENCE_NUMBER with the sequence number of a record older than
// the stream's 24 hours answer TrimmedDataAccessException ("a sequence
// number older than the trim point (24 hours)",
// API_streams_GetShardIterator); before, they gave an iterator that read
// nothing, and a consumer back after a day never learned it lost data.
func TestASequenceNumberPastTheStreamsDayIsTrimmed(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	e := startEnv(t, awsapi.Options{}, testenv.Options{Clock: clock})
	sc := e.ddbStreams()
	ctx := context.Background()
	arn, shard := streamOfOneItem(t, e, 1, 10)
	it := must(sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: arn, ShardId: shard, ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})).ShardIterator
	seq := must(sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it})).Records[0].Dynamodb.SequenceNumber
	at := func(typ stypes.ShardIteratorType) error {
		_, err := sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: arn, ShardId: shard, ShardIteratorType: typ, SequenceNumber: seq})
		return err
	}
	clock.Advance(23 * time.Hour)
	if err := at(stypes.ShardIteratorTypeAtSequenceNumber); err != nil {
		t.Fatalf("a record 23 hours old: %v", err)
	}
	clock.Advance(2 * time.Hour)
	for _, typ := range []stypes.ShardIteratorType{stypes.ShardIteratorTypeAtSequenceNumber, stypes.ShardIteratorTypeAfterSequenceNumber} {
		var tr *stypes.TrimmedDataAccessException
		if err := at(typ); !errors.As(err, &tr) {
			t.Fatalf("%s of a record 25 hours old: %v, want TrimmedDataAccessException", typ, err)
		}
	}
}

// TestGetRecordsAnswersAtMostOneMegabyte: "GetRecords can retrieve a
// maximum of 1 MB of data or 1000 stream records, whichever comes first"
// (API_streams_GetRecords): eight records of about 350 KB come three
// answers of at most 1 MB, each read continuing after the last record
// answered, every record once.
func TestGetRecordsAnswersAtMostOneMegabyte(t *testing.T) {
	e := start(t, awsapi.Options{})
	sc := e.ddbStreams()
	ctx := context.Background()
	arn, shard := streamOfOneItem(t, e, 8, 350_000)
	it := must(sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: arn, ShardId: shard, ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})).ShardIterator
	var got []string
	for calls := 0; it != nil && calls < 10; calls++ {
		out := must(sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it}))
		if len(out.Records) == 0 {
			break
		}
		size := int64(0)
		for _, r := range out.Records {
			size += aws.ToInt64(r.Dynamodb.SizeBytes)
			got = append(got, streamN(r.Dynamodb.Keys, "sk"))
		}
		if size > 1<<20 {
			t.Fatalf("an answer of %d records and %d bytes", len(out.Records), size)
		}
		it = out.NextShardIterator
	}
	want := make([]string, 8)
	for i := range want {
		want[i] = strconv.Itoa(i)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("records %v, want each of 0..7 once, in order", got)
	}
}

// TestADeletedTablesStreamStaysReadableForADay: "If you disable a stream
// on a table, the data in the stream continues to be readable for 24
// hours ... this also applies if you delete the table" (Streams.html).
// Before, DeleteTable deleted the change log at once: a consumer lost
// every change it had not read. The stream is DISABLED, its shards closed
// (an EndingSequenceNumber, and no next iterator at their end), listed by
// ListStreams, and gone with its log after the 24 hours.
func TestADeletedTablesStreamStaysReadableForADay(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	// The sweep runs with the TTL loop (off by default in tests).
	e := startEnv(t, awsapi.Options{}, testenv.Options{Clock: clock, Tables: table.Options{TTLInterval: time.Minute}})
	ctx := context.Background()
	c, sc := e.ddb(), e.ddbStreams()
	arn, shard := streamOfOneItem(t, e, 3, 10)
	tableID := aws.ToString(must(c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("orders")})).Table.TableId)
	must(c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("orders")}))
	clock.Advance(23 * time.Hour)

	d := must(sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: arn})).StreamDescription
	if d.StreamStatus != stypes.StreamStatusDisabled || aws.ToString(d.TableName) != "orders" || d.StreamViewType != stypes.StreamViewTypeNewAndOldImages {
		t.Fatalf("the deleted table's stream: %+v", d)
	}
	for _, sh := range d.Shards {
		if sh.SequenceNumberRange.EndingSequenceNumber == nil {
			t.Fatalf("shard %s of a deleted table's stream is not closed", aws.ToString(sh.ShardId))
		}
	}
	it := must(sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: arn, ShardId: shard, ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})).ShardIterator
	var n int
	for it != nil && n < 100 {
		out := must(sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it}))
		n += len(out.Records)
		if len(out.Records) == 0 && out.NextShardIterator != nil {
			t.Fatalf("a closed shard read to its end gave a next iterator")
		}
		it = out.NextShardIterator
	}
	if n != 3 {
		t.Fatalf("read %d records of the deleted table, want its 3 changes", n)
	}
	ls := must(sc.ListStreams(ctx, &dynamodbstreams.ListStreamsInput{TableName: aws.String("orders")})).Streams
	if len(ls) != 1 || aws.ToString(ls[0].StreamArn) != aws.ToString(arn) {
		t.Fatalf("ListStreams of the deleted table: %+v", ls)
	}

	clock.Advance(time.Hour + time.Minute) // past the 24 hours; the sweep runs on the TTL interval
	var notFound *stypes.ResourceNotFoundException
	if _, err := sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: arn}); !errors.As(err, &notFound) {
		t.Fatalf("DescribeStream after 24 hours: %v, want ResourceNotFoundException", err)
	}
	testenv.Eventually(t, 20*time.Second, "the log deleted", func() bool {
		_, err := e.rn.Tables.Logs().DescribeStream(ctx, "tbl-"+tableID)
		return err != nil
	})
}

// TestATurnedOffStreamIsClosedAndKeepsItsViewType: a stream turned off
// is DISABLED with its StreamViewType, and its shards are closed: an
// EndingSequenceNumber, and no NextShardIterator once read to the end
// (what a KCL reader takes for a shard's end). Before, its shards never
// ended (a reader polled them for 24 hours) and its StreamViewType was
// empty.
func TestATurnedOffStreamIsClosedAndKeepsItsViewType(t *testing.T) {
	e := start(t, awsapi.Options{})
	ctx := context.Background()
	c, sc := e.ddb(), e.ddbStreams()
	arn, shard := streamOfOneItem(t, e, 2, 10)
	must(c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String("orders"), StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(false)}}))
	d := must(sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: arn})).StreamDescription
	if d.StreamStatus != stypes.StreamStatusDisabled || d.StreamViewType != stypes.StreamViewTypeNewAndOldImages {
		t.Fatalf("the turned-off stream: status %s, view %q", d.StreamStatus, d.StreamViewType)
	}
	for _, sh := range d.Shards {
		if sh.SequenceNumberRange.EndingSequenceNumber == nil {
			t.Fatalf("shard %s of a turned-off stream is not closed", aws.ToString(sh.ShardId))
		}
	}
	it := must(sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: arn, ShardId: shard, ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})).ShardIterator
	n := 0
	for i := 0; it != nil; i++ {
		if i == 10 {
			t.Fatal("the turned-off stream's shard never ends")
		}
		out := must(sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it}))
		n += len(out.Records)
		it = out.NextShardIterator
	}
	if n != 2 {
		t.Fatalf("read %d records, want the 2 changes", n)
	}
}
