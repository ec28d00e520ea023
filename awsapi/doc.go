// Package awsapi serves runnel's streams, queues, functions and tables to
// unmodified AWS clients: one HTTP endpoint (HTTP/1.1 and cleartext
// HTTP/2) that speaks
//
//   - the Kinesis API (JSON 1.1, X-Amz-Target "Kinesis_20131202.<Op>");
//   - the SQS API, both its JSON protocol (X-Amz-Target
//     "AmazonSQS.<Op>", the protocol of current SDKs) and its older query
//     protocol (a form POST with Action=<Op>, XML responses; what older
//     AWS CLIs and SDKs send);
//   - the DynamoDB and DynamoDB Streams APIs (JSON 1.0, X-Amz-Target
//     "DynamoDB_20120810.<Op>" and "DynamoDBStreams_20120810.<Op>", over
//     package table);
//   - the Lambda REST API (paths /2015-03-31/functions...,
//     /2015-03-31/event-source-mappings...), over packages function,
//     function/async and mapping;
//   - the SNS API over package sns, its query protocol (Action=<Op>, XML;
//     routed by the request's "sns" signing scope, or unsigned by Action,
//     as a SubscribeURL is visited) and its JSON 1.0 protocol (X-Amz-Target
//     "SNS_20100331.<Op>", errors as SQS JSON's with "com.amazonaws.sns#");
//     GET /SimpleNotificationService-runnel.pem serves the certificate of
//     the envelopes' signatures.
//
// Point a client at it with an endpoint override:
//
//	cfg := aws.Config{Region: "us-east-1", BaseEndpoint: aws.String("http://127.0.0.1:4566"),
//		Credentials: credentials.NewStaticCredentialsProvider("x", "x", "")}
//	kc := kinesis.NewFromConfig(cfg)
//
// or `aws --endpoint-url http://127.0.0.1:4566 kinesis list-streams`.
//
// # Layout
//
// One operation is one function, in a file named by its service and
// resource (kinesis_records.go, sqs_messages.go, lambda_functions.go...),
// and one row of the table of operations (operations.go, Operations): the
// router dispatches on the table, the tests check it, and README.md's list
// of supported operations is generated from it. The protocols are in
// protocol_json.go, protocol_query.go, protocol_dynamodb.go and
// protocol_rest.go; routing in router.go; errors in errors.go. See "Adding
// an AWS operation" in docs/design.md.
//
// # Errors
//
// Services return *awserr.Error; the endpoint writes it in the shape of
// the request's protocol, with the status and shape of the code's entry in
// awserr's table: {"__type": ..., "message": ...} for the JSON protocols
// (SQS JSON errors carry the "com.amazonaws.sqs#<Shape>" type and the
// x-amzn-query-error header with the query-protocol code, as SQS sends
// them), an XML ErrorResponse for the SQS query protocol, and Lambda's
// X-Amzn-ErrorType header with {"Type", "message"}. An error that is not
// an *awserr.Error is an internal failure: HTTP 500, logged.
//
// SigV4 signatures are accepted from any credentials unless Options.Auth
// names the keys; then every Kinesis, SQS and DynamoDB request must be
// signed by one of them (Lambda requests are not checked).
package awsapi
