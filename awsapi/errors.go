package awsapi

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/table"
)

// DynamoDB's namespace for its own error shapes.
const dynamoNS = "com.amazonaws.dynamodb.v20120810#"

// wireError is an error ready to write: the code, its table entry, and
// the shape and status in the request's API.
type wireError struct {
	e      *awserr.Error
	shape  string
	status int
}

// fault is the query protocol's name for who is at fault.
func (we wireError) fault() string {
	if we.status >= 500 {
		return "Receiver"
	}
	return "Sender"
}

// toWire turns err into the request's API's terms: an *awserr.Error as
// its code's entry says; the client going away as RequestCanceled; any
// other error, and a code without an entry, as an internal failure (500,
// logged).
func (rq *request) toWire(err error) wireError {
	internal := awserr.ErrService
	if rq.proto == protoSQSJSON || rq.proto == protoSQSQuery || rq.proto == protoSNS || rq.proto == protoSNSJSON {
		internal = awserr.ErrInternal
	}
	var e *awserr.Error
	var ccf *table.ConditionalCheckFailedError
	var tce *table.TransactionCanceledError
	switch {
	case errors.As(err, &e):
	case errors.As(err, &ccf): // DynamoDB's errors with details (dynamoErrorBody)
		e = awserr.New(awserr.ErrConditionalCheckFailed, "%s", ccf.Error())
	case errors.As(err, &tce):
		e = awserr.New(awserr.ErrTransactionCanceled, "%s", tce.Message())
	case rq.ctx.Err() != nil:
		e = awserr.New(awserr.ErrRequestCanceled, "%v", err)
	default:
		e = awserr.New(internal, "%v", err)
	}
	spec := e.Spec()
	if spec == nil {
		rq.log().Error("aws api: error code without an entry in awserr's table", "op", rq.op, "code", e.Code)
		e = awserr.New(internal, "%v", e)
		spec = e.Spec()
	}
	var w awserr.Wire
	switch rq.proto {
	case protoKinesis, protoKinesisCBOR:
		w = spec.Kinesis
	case protoSQSJSON, protoSQSQuery:
		w = spec.SQS
	case protoLambda:
		w = spec.Lambda
	case protoScheduler, protoREST:
		w = awserr.Wire{Status: spec.Lambda.Status} // REST statuses, AWS's code names
	case protoLogs, protoIAM, protoSTS, protoSNS, protoEvents:
		// the code as it is
	case protoSNSJSON:
		w = awserr.Wire{Shape: awserr.SNSShape(e.Code)}
	default:
		w = spec.DynamoDB
	}
	we := wireError{e: e}
	we.shape, we.status = spec.In(w)
	if (rq.proto == protoLambda || rq.proto == protoScheduler) && authCodes[e.Code] {
		we.status = 403 // the REST APIs refuse a signature with 403, as Lambda does
	}
	if we.status >= 500 {
		rq.log().Error("aws api: internal failure", "op", rq.op, "err", err)
	}
	return we
}

// authCodes are the codes of a refused signature (authError), which the
// REST APIs answer with HTTP 403.
var authCodes = map[string]bool{
	awserr.ErrMissingAuthenticationToken.Code: true, awserr.ErrUnrecognizedClient.Code: true,
	awserr.ErrInvalidSignature.Code: true, awserr.ErrExpiredTokenException.Code: true,
}

// fail writes err in the shape of the request's protocol.
func (rq *request) fail(err error) {
	we := rq.toWire(err)
	w := rq.w
	switch rq.proto {
	case protoDynamoDB, protoDynamoDBStreams:
		rq.dynamoWrite(we.status, dynamoErrorBody(rq, err, we))
		return
	case protoLambda, protoScheduler, protoREST:
		rq.lambdaFail(we)
		return
	case protoKinesisCBOR:
		rq.failCBOR(we)
		return
	}
	w.Header().Set("x-amzn-RequestId", rq.reqID)
	switch rq.proto {
	case protoSQSQuery, protoIAM, protoSTS, protoSNS:
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(we.status)
		var b bytes.Buffer
		b.WriteString(`<?xml version="1.0"?>` + "\n")
		b.WriteString(`<ErrorResponse xmlns="` + rq.xmlNS() + `"><Error><Type>` + we.fault() + `</Type><Code>`)
		xmlEscape(&b, we.e.Code)
		b.WriteString(`</Code><Message>`)
		xmlEscape(&b, we.e.Message)
		b.WriteString(`</Message><Detail/></Error><RequestId>` + rq.reqID + `</RequestId></ErrorResponse>`)
		w.Write(b.Bytes())
	case protoSQSJSON, protoSNSJSON:
		ns := "com.amazonaws.sqs#"
		if rq.proto == protoSNSJSON {
			ns = "com.amazonaws.sns#"
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("x-amzn-query-error", we.e.Code+";"+we.fault())
		w.WriteHeader(we.status)
		json.NewEncoder(w).Encode(map[string]string{"__type": ns + we.shape, "message": we.e.Message})
	default:
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		if rq.proto == protoKinesis {
			w.Header().Set("x-amz-id-2", kinesisID2())
		}
		w.WriteHeader(we.status)
		b, _ := json.Marshal(kinesisErrorBody(rq, we))
		w.Write(b)
	}
}

// dynamoErrorBody is DynamoDB's error body: {"__type", "message"}, or
// the conditional check's and the transaction's with their details.
func dynamoErrorBody(rq *request, err error, we wireError) []byte {
	var body map[string]any
	var ccf *table.ConditionalCheckFailedError
	var tce *table.TransactionCanceledError
	switch {
	case errors.As(err, &ccf):
		body = map[string]any{"__type": dynamoNS + "ConditionalCheckFailedException", "message": "The conditional request failed"}
		if ccf.Item != nil {
			body["Item"] = ccf.Item
		}
	case errors.As(err, &tce):
		body = map[string]any{"__type": dynamoNS + "TransactionCanceledException", "Message": tce.Message(), "CancellationReasons": tce.Reasons}
	default:
		typ := we.shape
		if !bytes.ContainsRune([]byte(typ), '#') {
			typ = dynamoNS + typ
		}
		body = dynamoBody(typ, dynamoMessage(rq, we))
	}
	b, _ := json.Marshal(body)
	return b
}
