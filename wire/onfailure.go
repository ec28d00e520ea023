package wire

// OnFailureRecord is what a stream event source mapping sends to its
// on-failure destination when it discards records: pointers to the
// records, not the records
// (https://docs.aws.amazon.com/lambda/latest/dg/kinesis-on-failure-destination.html,
// .../services-ddb-batchfailurereporting.html). Its JSON is exactly AWS's:
//
//	{"requestContext":{"requestId":"...","functionArn":"...","condition":"RetryAttemptsExhausted","approximateInvokeCount":1},
//	 "responseContext":{"statusCode":200,"executedVersion":"$LATEST","functionError":"Unhandled"},
//	 "version":"1.0","timestamp":"2019-11-14T00:38:06.021Z",
//	 "KinesisBatchInfo":{"shardId":"shardId-000000000001","startSequenceNumber":"...","endSequenceNumber":"...",
//	   "approximateArrivalOfFirstRecord":"...","approximateArrivalOfLastRecord":"...","batchSize":500,"streamArn":"..."}}
//
// Exactly one of KinesisBatchInfo (a Kinesis stream source) and
// DDBStreamBatchInfo (a DynamoDB stream source) is set. With
// ParallelizationFactor > 1 a batch holds only some partition keys of its
// shard, so the sequence range may also cover records of other batch lanes
// that were processed; batchSize counts the discarded ones.
type OnFailureRecord struct {
	RequestContext   RequestContext    `json:"requestContext"`
	ResponseContext  ResponseContext   `json:"responseContext"`
	Version          string            `json:"version"`
	Timestamp        string            `json:"timestamp"`
	KinesisBatchInfo *KinesisBatchInfo `json:"KinesisBatchInfo,omitempty"`
	// DDBStreamBatchInfo replaces KinesisBatchInfo when the source is a
	// DynamoDB stream (same seven fields; arrival times without
	// milliseconds, as AWS writes them: TimestampSeconds).
	DDBStreamBatchInfo *KinesisBatchInfo `json:"DDBStreamBatchInfo,omitempty"`
}

// BatchInfo returns whichever of KinesisBatchInfo and DDBStreamBatchInfo
// is set, or nil when neither is (the body is not an on-failure record).
func (r *OnFailureRecord) BatchInfo() *KinesisBatchInfo {
	if r.KinesisBatchInfo != nil {
		return r.KinesisBatchInfo
	}
	return r.DDBStreamBatchInfo
}

// ResponseContext of an OnFailureRecord: the last invocation's outcome.
// For records discarded by age before any invocation, StatusCode is 0 and
// FunctionError empty (still present in the JSON, as AWS writes it).
type ResponseContext struct {
	StatusCode      int    `json:"statusCode"`
	ExecutedVersion string `json:"executedVersion"`
	FunctionError   string `json:"functionError"`
}

// KinesisBatchInfo points at the discarded records of one shard: an
// inclusive sequence-number range, the arrival times of its first and last
// record (Timestamp, or TimestampSeconds for a DynamoDB stream), the
// number of discarded records (1..10000) and the source stream's ARN.
type KinesisBatchInfo struct {
	ShardID                         string `json:"shardId"`
	StartSequenceNumber             string `json:"startSequenceNumber"`
	EndSequenceNumber               string `json:"endSequenceNumber"`
	ApproximateArrivalOfFirstRecord string `json:"approximateArrivalOfFirstRecord"`
	ApproximateArrivalOfLastRecord  string `json:"approximateArrivalOfLastRecord"`
	BatchSize                       int    `json:"batchSize"`
	StreamArn                       string `json:"streamArn"`
}
