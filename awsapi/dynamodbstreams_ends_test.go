package awsapi_test

import (
	"context"
	"errors"
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
)

// readStreamToEnd reads every shard of arn from TRIM_HORIZON until the
// shard ends (no NextShardIterator), at most 50 calls a shard.
func readStreamToEnd(t *testing.T, sc *dynamodbstreams.Client, arn *string) []stypes.Record {
	t.Helper()
	ctx := context.Background()
	d := must(sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: arn})).StreamDescription
	var all []stypes.Record
	for _, sh := range d.Shards {
		it := must(sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: arn, ShardId: sh.ShardId, ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})).ShardIterator
		for calls := 0; it != nil && calls < 50; calls++ {
			out := must(sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it}))
			all = append(all, out.Records...)
			it = out.NextShardIterator
		}
		if it != nil {
			t.Fatalf("shard %s of %s never ended", aws.ToString(sh.ShardId), aws.ToString(arn))
		}
	}
	return all
}

func setStream(t *testing.T, c *dynamodb.Client, name string, on bool, view types.StreamViewType) *types.TableDescription {
	t.Helper()
	spec := &types.StreamSpecification{StreamEnabled: aws.Bool(on)}
	if on {
		spec.StreamViewType = view
	}
	return must(c.UpdateTable(context.Background(), &dynamodb.UpdateTableInput{TableName: aws.String(name), StreamSpecification: spec})).TableDescription
}

// TestADisabledStreamsShardEndsAfterItsOwnRecords: "If you disable a
// stream on a table, the data in the stream continues to be readable for
// 24 hours ... also applies if you delete the table" (Streams.html), and
// "it might take multiple calls to get to a portion of the shard that
// contains stream records" (API_streams_GetRecords). Before, a disabled
// stream's shard was closed by the first GetRecords whose log page (cut
// at 10 MiB) held none of its records: with 12 MB of earlier changes (an
// earlier stream's, or written while off) ahead of them, a reader from
// TRIM_HORIZON got an empty answer without a NextShardIterator and never
// saw the stream's records. Now a shard closes only past the stream's last
// change in it.
func TestADisabledStreamsShardEndsAfterItsOwnRecords(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	e := startEnv(t, awsapi.Options{}, testenv.Options{Clock: clock})
	ctx := context.Background()
	c, sc := e.ddb(), e.ddbStreams()
	createOrders(t, c, "orders")
	for i := range 35 {
		must(c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("orders"), Item: map[string]types.AttributeValue{
			"pk": ddbS("p"), "sk": ddbN(i), "blob": ddbS(strings.Repeat("x", 350_000))}}))
	}
	// Labels have ms precision; the changes ahead are within a second of
	// the stream's start, where the search for its end starts.
	clock.Advance(time.Millisecond)
	setStream(t, c, "orders", false, "")
	clock.Advance(time.Millisecond)
	arnB := setStream(t, c, "orders", true, types.StreamViewTypeKeysOnly).LatestStreamArn
	must(c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("orders"), Item: map[string]types.AttributeValue{
		"pk": ddbS("p"), "sk": ddbN(1000), "blob": ddbS("small")}}))
	clock.Advance(time.Millisecond)
	setStream(t, c, "orders", false, "")
	if n := len(readStreamToEnd(t, sc, arnB)); n != 1 {
		t.Errorf("turned-off stream: read %d records, want its 1", n)
	}
	must(c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("orders")}))
	if n := len(readStreamToEnd(t, sc, arnB)); n != 1 {
		t.Errorf("the deleted table's stream: read %d records, want its 1", n)
	}
}

// TestARecordTrimmedWhileItsIteratorIsHeldIsTrimmedDataAccess:
// TrimmedDataAccessException when "You obtain a shard iterator, but
// before you use the iterator in a GetRecords request, a stream record in
// the shard exceeds the 24 hour period and is trimmed"
// (API_streams_GetRecords). Before, the record was dropped and an empty
// answer with a NextShardIterator came back: the reader never learned it
// lost it. A TRIM_HORIZON iterator taken then starts at the oldest
// untrimmed record and reads without error.
func TestARecordTrimmedWhileItsIteratorIsHeldIsTrimmedDataAccess(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	e := startEnv(t, awsapi.Options{}, testenv.Options{Clock: clock})
	sc := e.ddbStreams()
	ctx := context.Background()
	arn, shard := streamOfOneItem(t, e, 1, 10)
	iter := func() *string {
		return must(sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: arn, ShardId: shard, ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})).ShardIterator
	}
	clock.Advance(24*time.Hour - 2*time.Minute)
	held := iter()
	clock.Advance(5 * time.Minute)
	out, err := sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: held})
	var tr *stypes.TrimmedDataAccessException
	if !errors.As(err, &tr) {
		t.Fatalf("GetRecords with a record trimmed since: %v (%+v), want TrimmedDataAccessException", err, out)
	}
	out, err = sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter()})
	if err != nil || len(out.Records) != 0 || out.NextShardIterator == nil {
		t.Fatalf("a TRIM_HORIZON iterator taken now: %v, %+v; want no records and a next iterator", err, out)
	}
}

// TestAStreamRecordsSizeBytesIsItsItemSize: SizeBytes is "The size of the
// stream record, in bytes" (API_streams_StreamRecord); AWS's sample record
// (Keys {Id: N 101}, NewImage {Message: S "New item!", Id: N 101}) says
// 26, DynamoDB's item size of its Keys (5) and NewImage (21). Before, it
// was the length of runnel's encoded change (both images and metadata,
// whatever the view type), and the 1 MB GetRecords answer was counted
// with it: five KEYS_ONLY records of 350 KB items came in three calls.
// Now a KEYS_ONLY record counts its keys only, and they come in one.
func TestAStreamRecordsSizeBytesIsItsItemSize(t *testing.T) {
	e := start(t, awsapi.Options{})
	ctx := context.Background()
	c, sc := e.ddb(), e.ddbStreams()
	for _, tc := range []struct {
		view      types.StreamViewType
		want      int64
		bigRecord int64 // SizeBytes of a 350 KB item's record; 0: not checked
	}{{types.StreamViewTypeNewAndOldImages, 26, 0}, {types.StreamViewTypeKeysOnly, 5, 5}} {
		name := "t" + strings.ToLower(string(tc.view))[:4]
		td := must(c.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(name),
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("Id"), KeyType: types.KeyTypeHash}},
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("Id"), AttributeType: types.ScalarAttributeTypeN}},
			BillingMode:          types.BillingModePayPerRequest,
			StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: tc.view}})).TableDescription
		must(c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: map[string]types.AttributeValue{"Id": ddbN(101), "Message": ddbS("New item!")}}))
		recs := readStream(t, sc, td.LatestStreamArn)
		if len(recs) != 1 || aws.ToInt64(recs[0].Dynamodb.SizeBytes) != tc.want {
			t.Fatalf("%s: AWS's sample record: %+v, want SizeBytes %d", tc.view, recs, tc.want)
		}
		// Five writes of a 350 KB item under one key (one shard): a 1 MB
		// answer of NEW_AND_OLD_IMAGES holds at most two of them, of
		// KEYS_ONLY all five.
		for i := range 5 {
			must(c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: map[string]types.AttributeValue{"Id": ddbN(101),
				"Message": ddbS(strings.Repeat(string(rune('a'+i)), 350_000))}}))
		}
		d := must(sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: td.LatestStreamArn})).StreamDescription
		for _, sh := range d.Shards {
			it := must(sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: td.LatestStreamArn, ShardId: sh.ShardId, ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})).ShardIterator
			first := must(sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it, Limit: aws.Int32(1)}))
			if len(first.Records) == 0 {
				continue
			}
			var per []int
			it = first.NextShardIterator
			for calls := 0; calls < 10; calls++ {
				out := must(sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it}))
				if len(out.Records) == 0 {
					break
				}
				per = append(per, len(out.Records))
				for _, r := range out.Records {
					if tc.bigRecord != 0 && aws.ToInt64(r.Dynamodb.SizeBytes) != tc.bigRecord {
						t.Fatalf("%s: a record of a 350 KB item: SizeBytes %d, want %d", tc.view, aws.ToInt64(r.Dynamodb.SizeBytes), tc.bigRecord)
					}
				}
				it = out.NextShardIterator
			}
			if tc.view == types.StreamViewTypeKeysOnly && (len(per) != 1 || per[0] != 5) {
				t.Fatalf("%s: records per GetRecords %v, want the 5 in one", tc.view, per)
			}
			if tc.view == types.StreamViewTypeNewAndOldImages && len(per) < 3 {
				t.Fatalf("%s: records per GetRecords %v, want at most 2 per 1 MB", tc.view, per)
			}
		}
	}
}

// TestATurnedOffStreamsEndingSequenceNumberStaysPut: a DISABLED stream's
// shards are closed at its last record: the EndingSequenceNumber is that
// record's and does not move (API_streams_SequenceNumberRange: "The last
// sequence number for the stream records contained within a shard"; a
// disabled stream takes no records). Before, it was the log shard's last
// record, and moved on with every change written while the stream was
// off.
func TestATurnedOffStreamsEndingSequenceNumberStaysPut(t *testing.T) {
	e := start(t, awsapi.Options{})
	ctx := context.Background()
	c, sc := e.ddb(), e.ddbStreams()
	arn, shard := streamOfOneItem(t, e, 2, 10)
	setStream(t, c, "orders", false, "")
	recs := readStreamToEnd(t, sc, arn)
	if len(recs) != 2 {
		t.Fatalf("read %d records, want 2", len(recs))
	}
	lastSeq := aws.ToString(recs[1].Dynamodb.SequenceNumber)
	ends := func() map[string]string {
		out := map[string]string{}
		for _, sh := range must(sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: arn})).StreamDescription.Shards {
			out[aws.ToString(sh.ShardId)] = aws.ToString(sh.SequenceNumberRange.EndingSequenceNumber)
		}
		return out
	}
	before := ends()
	if before[aws.ToString(shard)] != lastSeq {
		t.Fatalf("EndingSequenceNumber of the stream's shard %s, want its last record's %s", before[aws.ToString(shard)], lastSeq)
	}
	for i := range 8 {
		must(c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("orders"), Item: map[string]types.AttributeValue{
			"pk": ddbS("p"), "sk": ddbN(100 + i), "blob": ddbS("while off")}}))
	}
	if after := ends(); len(after) != len(before) || after[aws.ToString(shard)] != lastSeq {
		t.Fatalf("EndingSequenceNumbers after writes while off %v, before %v", after, before)
	}
}

// TestAStreamLabelThatNeverWasIsNotFound: DescribeStream of a stream ARN
// the table never had is ResourceNotFoundException "Requested resource
// not found: Stream: <arn> not found" (API_streams_DescribeStream). Before,
// any label between the table's creation and its latest stream resolved
// as a DISABLED stream. The table's real earlier stream still resolves,
// DISABLED.
func TestAStreamLabelThatNeverWasIsNotFound(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	e := startEnv(t, awsapi.Options{}, testenv.Options{Clock: clock})
	ctx := context.Background()
	c, sc := e.ddb(), e.ddbStreams()
	arnA, _ := streamOfOneItem(t, e, 1, 10)
	clock.Advance(time.Minute)
	setStream(t, c, "orders", false, "")
	clock.Advance(time.Minute)
	arnB := setStream(t, c, "orders", true, types.StreamViewTypeKeysOnly).LatestStreamArn
	a := aws.ToString(arnA)
	lt := must(time.Parse("2006-01-02T15:04:05.000", a[strings.LastIndex(a, "/")+1:]))
	var notFound *stypes.ResourceNotFoundException
	for _, d := range []time.Duration{time.Millisecond, 30 * time.Second, 90 * time.Second} {
		fake := a[:strings.LastIndex(a, "/")+1] + lt.Add(d).Format("2006-01-02T15:04:05.000")
		_, err := sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: &fake})
		if !errors.As(err, &notFound) || !strings.Contains(err.Error(), "Requested resource not found: Stream: "+fake+" not found") {
			t.Fatalf("DescribeStream of %s, a stream the table never had: %v", fake, err)
		}
	}
	if d := must(sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: arnA})).StreamDescription; d.StreamStatus != stypes.StreamStatusDisabled {
		t.Fatalf("the earlier stream: %s, want DISABLED", d.StreamStatus)
	}
	if n := len(readStreamToEnd(t, sc, arnA)); n != 1 {
		t.Fatalf("the earlier stream: %d records, want 1", n)
	}
	if d := must(sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: arnB})).StreamDescription; d.StreamStatus != stypes.StreamStatusEnabled {
		t.Fatalf("the latest stream: %s, want ENABLED", d.StreamStatus)
	}
}
