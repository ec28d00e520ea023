package awsapi_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/runnel-dev/runnel/awsapi"
)

func (e *endpoint) ddbStreams() *dynamodbstreams.Client {
	return dynamodbstreams.NewFromConfig(e.config("AKID", "secret"))
}

func streamS(item map[string]stypes.AttributeValue, name string) string {
	if v, ok := item[name].(*stypes.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func streamN(item map[string]stypes.AttributeValue, name string) string {
	if v, ok := item[name].(*stypes.AttributeValueMemberN); ok {
		return v.Value
	}
	return ""
}

// readStream reads every shard of a stream from TRIM_HORIZON to its end.
func readStream(t *testing.T, sc *dynamodbstreams.Client, arn *string) []stypes.Record {
	t.Helper()
	ctx := context.Background()
	d := must(sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: arn})).StreamDescription
	var all []stypes.Record
	for _, sh := range d.Shards {
		it := must(sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: arn, ShardId: sh.ShardId, ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})).ShardIterator
		for it != nil {
			out := must(sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it, Limit: aws.Int32(2)}))
			all = append(all, out.Records...)
			if len(out.Records) == 0 {
				break
			}
			it = out.NextShardIterator
		}
	}
	return all
}

func TestDynamoDBStreams(t *testing.T) {
	e := start(t, awsapi.Options{})
	c, sc := e.ddb(), e.ddbStreams()
	ctx := context.Background()
	td := createOrders(t, c, "orders")
	arn := td.LatestStreamArn
	tn := aws.String("orders")
	key := map[string]types.AttributeValue{"pk": ddbS("a"), "sk": ddbN(1)}

	before := time.Now().Add(-time.Second)
	must(c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: map[string]types.AttributeValue{"pk": ddbS("a"), "sk": ddbN(1), "v": ddbS("one")}}))
	must(c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tn, Key: key, UpdateExpression: aws.String("SET v = :v"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": ddbS("two")}}))
	// An update that changes nothing writes no stream record.
	must(c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tn, Key: key, UpdateExpression: aws.String("SET v = :v"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": ddbS("two")}}))
	must(c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: tn, Key: key}))
	must(c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: tn, Item: map[string]types.AttributeValue{"pk": ddbS("b"), "sk": ddbN(1)}}},
		{Put: &types.Put{TableName: tn, Item: map[string]types.AttributeValue{"pk": ddbS("c"), "sk": ddbN(1)}}},
	}}))

	// ListStreams, DescribeStream.
	ls := must(sc.ListStreams(ctx, &dynamodbstreams.ListStreamsInput{}))
	if len(ls.Streams) != 1 || aws.ToString(ls.Streams[0].StreamArn) != aws.ToString(arn) || aws.ToString(ls.Streams[0].TableName) != "orders" ||
		aws.ToString(ls.Streams[0].StreamLabel) != aws.ToString(td.LatestStreamLabel) {
		t.Fatalf("ListStreams: %+v", ls.Streams)
	}
	if n := len(must(sc.ListStreams(ctx, &dynamodbstreams.ListStreamsInput{TableName: tn})).Streams); n != 1 {
		t.Fatalf("ListStreams of the table: %d", n)
	}
	d := must(sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: arn})).StreamDescription
	if d.StreamStatus != stypes.StreamStatusEnabled || d.StreamViewType != stypes.StreamViewTypeNewAndOldImages || aws.ToString(d.TableName) != "orders" ||
		len(d.KeySchema) != 2 || len(d.Shards) != 4 || aws.ToString(d.StreamLabel) != aws.ToString(td.LatestStreamLabel) || d.LastEvaluatedShardId != nil {
		t.Fatalf("DescribeStream: %+v", d)
	}
	for _, sh := range d.Shards {
		if id := aws.ToString(sh.ShardId); len(id) < 28 || !strings.HasPrefix(id, "shardId-") || sh.SequenceNumberRange == nil {
			t.Fatalf("shard %+v", sh)
		}
	}
	d1 := must(sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: arn, Limit: aws.Int32(3)})).StreamDescription
	d2 := must(sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: arn, ExclusiveStartShardId: d1.LastEvaluatedShardId})).StreamDescription
	if len(d1.Shards) != 3 || len(d2.Shards) != 1 || aws.ToString(d2.Shards[0].ShardId) != aws.ToString(d.Shards[3].ShardId) {
		t.Fatalf("DescribeStream pages: %d then %d", len(d1.Shards), len(d2.Shards))
	}

	// The changes of item a: INSERT, MODIFY, REMOVE with their images.
	recs := readStream(t, sc, arn)
	if len(recs) != 5 {
		t.Fatalf("%d records, want 5", len(recs))
	}
	var ofA []stypes.Record
	for _, r := range recs {
		if r.Dynamodb == nil || aws.ToString(r.EventSource) != "aws:dynamodb" || aws.ToString(r.AwsRegion) != "us-east-1" || aws.ToString(r.EventVersion) != "1.1" ||
			aws.ToString(r.EventID) == "" || r.Dynamodb.StreamViewType != stypes.StreamViewTypeNewAndOldImages || aws.ToInt64(r.Dynamodb.SizeBytes) <= 0 {
			t.Fatalf("record %+v", r)
		}
		if ts := aws.ToTime(r.Dynamodb.ApproximateCreationDateTime); ts.Before(before) || ts.After(time.Now().Add(time.Second)) {
			t.Fatalf("ApproximateCreationDateTime %v", ts)
		}
		if streamS(r.Dynamodb.Keys, "pk") == "a" {
			ofA = append(ofA, r)
		}
	}
	if len(ofA) != 3 || ofA[0].EventName != stypes.OperationTypeInsert || ofA[1].EventName != stypes.OperationTypeModify || ofA[2].EventName != stypes.OperationTypeRemove {
		t.Fatalf("changes of a: %+v", ofA)
	}
	if ofA[0].Dynamodb.OldImage != nil || streamS(ofA[0].Dynamodb.NewImage, "v") != "one" || streamN(ofA[0].Dynamodb.Keys, "sk") != "1" ||
		streamS(ofA[1].Dynamodb.OldImage, "v") != "one" || streamS(ofA[1].Dynamodb.NewImage, "v") != "two" ||
		streamS(ofA[2].Dynamodb.OldImage, "v") != "two" || ofA[2].Dynamodb.NewImage != nil {
		t.Fatalf("images of a: %+v %+v %+v", ofA[0].Dynamodb, ofA[1].Dynamodb, ofA[2].Dynamodb)
	}
	if a, b := aws.ToString(ofA[0].Dynamodb.SequenceNumber), aws.ToString(ofA[1].Dynamodb.SequenceNumber); len(a) < 21 || len(a) > 40 || len(a) != len(b) || a >= b {
		t.Fatalf("sequence numbers %s %s", a, b)
	}

	// AT_ and AFTER_SEQUENCE_NUMBER, LATEST, on a's shard.
	var shardOfA *string
	for _, sh := range d.Shards {
		// A sequence number belongs to one shard: the others refuse it.
		it, err := sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: arn, ShardId: sh.ShardId,
			ShardIteratorType: stypes.ShardIteratorTypeAtSequenceNumber, SequenceNumber: ofA[1].Dynamodb.SequenceNumber})
		if err != nil {
			if errCode(err) != "ValidationException" {
				t.Fatalf("AT_SEQUENCE_NUMBER on another shard: %v", err)
			}
			continue
		}
		out, err := sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator, Limit: aws.Int32(1)})
		if err == nil && len(out.Records) == 1 && aws.ToString(out.Records[0].Dynamodb.SequenceNumber) == aws.ToString(ofA[1].Dynamodb.SequenceNumber) {
			shardOfA = sh.ShardId
			break
		}
	}
	if shardOfA == nil {
		t.Fatalf("AT_SEQUENCE_NUMBER found a's MODIFY on no shard")
	}
	after := must(sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: arn, ShardId: shardOfA,
		ShardIteratorType: stypes.ShardIteratorTypeAfterSequenceNumber, SequenceNumber: ofA[1].Dynamodb.SequenceNumber}))
	ar := must(sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: after.ShardIterator}))
	if len(ar.Records) == 0 || ar.Records[0].EventName != stypes.OperationTypeRemove || ar.NextShardIterator == nil {
		t.Fatalf("AFTER_SEQUENCE_NUMBER: %+v", ar.Records)
	}
	latest := must(sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: arn, ShardId: shardOfA, ShardIteratorType: stypes.ShardIteratorTypeLatest})).ShardIterator
	if n := len(must(sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: latest})).Records); n != 0 {
		t.Fatalf("LATEST read %d records", n)
	}
	must(c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: map[string]types.AttributeValue{"pk": ddbS("a"), "sk": ddbN(1), "v": ddbS("three")}}))
	lr := must(sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: latest})).Records
	if len(lr) != 1 || lr[0].EventName != stypes.OperationTypeInsert || streamS(lr[0].Dynamodb.NewImage, "v") != "three" {
		t.Fatalf("LATEST then put: %+v", lr)
	}

	// A TTL deletion is a service REMOVE.
	must(c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: tn,
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("exp"), Enabled: aws.Bool(true)}}))
	must(c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: map[string]types.AttributeValue{"pk": ddbS("a"), "sk": ddbN(1), "exp": ddbN(int(time.Now().Add(-time.Hour).Unix()))}}))
	if n, err := e.rn.Tables.SweepExpired(ctx); err != nil || n != 1 {
		t.Fatalf("SweepExpired = %d, %v", n, err)
	}
	tr := must(sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: latest})).Records
	if len(tr) != 3 || tr[2].EventName != stypes.OperationTypeRemove || tr[2].UserIdentity == nil ||
		aws.ToString(tr[2].UserIdentity.Type) != "Service" || aws.ToString(tr[2].UserIdentity.PrincipalId) != "dynamodb.amazonaws.com" || tr[1].UserIdentity != nil {
		t.Fatalf("TTL deletion: %+v", tr)
	}

	// Turn the stream off: DISABLED, and later changes are in no stream;
	// on again: a new stream, the old one still readable.
	must(c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: tn, StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(false)}}))
	if s := must(sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: arn})).StreamDescription.StreamStatus; s != stypes.StreamStatusDisabled {
		t.Fatalf("status after turning off: %s", s)
	}
	must(c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: map[string]types.AttributeValue{"pk": ddbS("off"), "sk": ddbN(1)}}))
	time.Sleep(5 * time.Millisecond) // labels have ms precision
	ut := must(c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: tn, StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeKeysOnly}}))
	arn2 := ut.TableDescription.LatestStreamArn
	if aws.ToString(arn2) == aws.ToString(arn) {
		t.Fatalf("re-enabled stream has the old ARN %s", aws.ToString(arn2))
	}
	must(c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: map[string]types.AttributeValue{"pk": ddbS("on"), "sk": ddbN(1), "v": ddbS("x")}}))
	if n := len(readStream(t, sc, arn)); n != 8 {
		t.Fatalf("old stream: %d records, want 8", n)
	}
	r2 := readStream(t, sc, arn2)
	if len(r2) != 1 || streamS(r2[0].Dynamodb.Keys, "pk") != "on" || r2[0].Dynamodb.NewImage != nil || r2[0].Dynamodb.StreamViewType != stypes.StreamViewTypeKeysOnly {
		t.Fatalf("new stream: %+v", r2)
	}
	d = must(sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: arn2})).StreamDescription
	if d.StreamStatus != stypes.StreamStatusEnabled || d.StreamViewType != stypes.StreamViewTypeKeysOnly {
		t.Fatalf("new stream: %+v", d)
	}
	if ls := must(sc.ListStreams(ctx, &dynamodbstreams.ListStreamsInput{})).Streams; len(ls) != 1 || aws.ToString(ls[0].StreamArn) != aws.ToString(arn2) {
		t.Fatalf("ListStreams after re-enabling: %+v", ls)
	}

	// Errors.
	var notFound *stypes.ResourceNotFoundException
	_, err := sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String("arn:aws:dynamodb:us-east-1:000000000000:table/nope/stream/2024-01-01T00:00:00.000")})
	if !errors.As(err, &notFound) {
		t.Fatalf("DescribeStream of a missing table: %v", err)
	}
	_, err = sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(strings.Replace(aws.ToString(arn2), "/stream/", "/stream/9", 1))})
	if !errors.As(err, &notFound) {
		t.Fatalf("DescribeStream of an unknown label: %v", err)
	}
	_, err = sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: arn2, ShardId: aws.String("shardId-00000000000000000000-00000000"), ShardIteratorType: stypes.ShardIteratorTypeLatest})
	if !errors.As(err, &notFound) {
		t.Fatalf("GetShardIterator of a missing shard: %v", err)
	}
	_, err = sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String("garbage")})
	if errCode(err) != "ValidationException" {
		t.Fatalf("GetRecords with a bad iterator: %v", err)
	}
	_, err = sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: latest, Limit: aws.Int32(1001)})
	if errCode(err) != "ValidationException" {
		t.Fatalf("GetRecords with Limit 1001: %v", err)
	}
	// A deleted table's stream stays readable for 24 hours
	// (TestADeletedTablesStreamStaysReadableForADay).
	must(c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: tn}))
	if _, err = sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: latest}); err != nil {
		t.Fatalf("GetRecords after DeleteTable: %v", err)
	}
}

// An order as an application keeps it, marshalled with the SDK's
// attributevalue package.
type order struct {
	PK      string            `dynamodbav:"pk"`
	SK      int               `dynamodbav:"sk"`
	Items   []string          `dynamodbav:"items"`
	Tags    []string          `dynamodbav:"tags,stringset"`
	Price   float64           `dynamodbav:"price"`
	Paid    bool              `dynamodbav:"paid"`
	Meta    map[string]string `dynamodbav:"meta"`
	Note    *string           `dynamodbav:"note"`
	Created time.Time         `dynamodbav:"created,unixtime"`
}

// Items marshalled by attributevalue go through PutItem, Query and the
// stream unchanged.
func TestDynamoDBAttributeValue(t *testing.T) {
	e := start(t, awsapi.Options{})
	c, sc := e.ddb(), e.ddbStreams()
	ctx := context.Background()
	td := createOrders(t, c, "orders")
	in := order{PK: "cust#1", SK: 42, Items: []string{"a", "b"}, Tags: []string{"gift", "rush"}, Price: 12.5, Paid: true,
		Meta: map[string]string{"src": "web"}, Created: time.Unix(1700000000, 0)}
	item, err := attributevalue.MarshalMap(in)
	if err != nil {
		t.Fatal(err)
	}
	must(c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("orders"), Item: item}))
	kc, err := attributevalue.MarshalMap(map[string]any{":p": "cust#1"})
	if err != nil {
		t.Fatal(err)
	}
	q := must(c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("orders"), KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: kc}))
	var got []order
	if err := attributevalue.UnmarshalListOfMaps(q.Items, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].PK != in.PK || got[0].SK != 42 || got[0].Price != 12.5 || !got[0].Paid || len(got[0].Tags) != 2 ||
		got[0].Meta["src"] != "web" || got[0].Note != nil || !got[0].Created.Equal(in.Created) || strings.Join(got[0].Items, ",") != "a,b" {
		t.Fatalf("Query round trip: %+v", got)
	}
	recs := readStream(t, sc, td.LatestStreamArn)
	if len(recs) != 1 {
		t.Fatalf("%d stream records", len(recs))
	}
	img, err := attributevalue.FromDynamoDBStreamsMap(recs[0].Dynamodb.NewImage)
	if err != nil {
		t.Fatal(err)
	}
	var fromStream order
	if err := attributevalue.UnmarshalMap(img, &fromStream); err != nil {
		t.Fatal(err)
	}
	if fromStream.PK != in.PK || fromStream.Price != 12.5 || !fromStream.Created.Equal(in.Created) || len(fromStream.Tags) != 2 {
		t.Fatalf("stream image round trip: %+v", fromStream)
	}
}
