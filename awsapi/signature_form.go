package awsapi

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/runnel-dev/runnel/awserr"
)

// signatureForm refuses a request whose signature AWS's front end would
// refuse before any service sees it: none at all, or one of the wrong
// form. It runs for every request routed by X-Amz-Target or SQS Action
// (Kinesis, SQS, DynamoDB and its Streams, CloudWatch Logs, SNS,
// EventBridge), unless Options.AllowUnsigned; the signature's value is
// checked only with Options.Auth (verify). The rules and words are AWS's,
// as kinesalite's and dynalite's connection tests recorded them:
//
//   - Kinesis: a body that is not JSON is refused first
//     (SerializationException); then an Authorization header and an
//     X-Amz-Algorithm query parameter together (InvalidSignatureException
//     "Found both …"); a header missing Credential, Signature or
//     SignedHeaders, or a request without X-Amz-Date or Date
//     (IncompleteSignatureException, the missing parts listed, then
//     "Authorization=<header>"); a presigned query missing one of its
//     five parameters (IncompleteSignatureException); neither
//     (MissingAuthenticationTokenException "Missing Authentication
//     Token").
//   - DynamoDB and DynamoDB Streams: a header that does not start with
//     "AWS4-" is no signature ("Request is missing Authentication
//     Token"); otherwise the same parts are required.
//   - The other services: the same checks; a missing signature is
//     refused in the service's own code (authError).
//
// Trap: SDKs, the AWS CLI and runnel's own functions always sign, so this
// refuses only hand-made requests (curl): `runnel serve --allow-unsigned`
// accepts them again.
func signatureForm(rq *request) error {
	if rq.proto == protoKinesis {
		if b := bytes.TrimSpace(rq.body); len(b) == 0 || !json.Valid(b) {
			return awserr.New(awserr.ErrSerialization, "")
		}
	}
	r := rq.r
	q := r.URL.Query()
	authz := r.Header.Get("Authorization")
	_, algQ := q["X-Amz-Algorithm"]
	both := authz != "" && algQ
	dynamo := rq.proto == protoDynamoDB || rq.proto == protoDynamoDBStreams
	if dynamo && !strings.HasPrefix(authz, "AWS4-") {
		authz = ""
	}
	var missing []string
	switch {
	case both:
		return awserr.New(awserr.ErrInvalidSignature, "Found both 'X-Amz-Algorithm' as a query-string param and 'Authorization' as HTTP header.")
	case authz != "":
		params := map[string]bool{}
		fields := strings.FieldsFunc(authz, func(c rune) bool { return c == ' ' || c == ',' })
		for _, f := range fields[1:] {
			if k, _, ok := strings.Cut(f, "="); ok {
				params[k] = true
			}
		}
		for _, p := range []string{"Credential", "Signature", "SignedHeaders"} {
			if !params[p] {
				missing = append(missing, "Authorization header requires '"+p+"' parameter.")
			}
		}
		if r.Header.Get("X-Amz-Date") == "" && r.Header.Get("Date") == "" {
			missing = append(missing, "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.")
		}
		if len(missing) > 0 {
			return awserr.New(awserr.ErrIncompleteSignature, "%s Authorization=%s", strings.Join(missing, " "), authz)
		}
	case algQ:
		for _, p := range []string{"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Signature", "X-Amz-SignedHeaders", "X-Amz-Date"} {
			if q.Get(p) == "" {
				missing = append(missing, "AWS query-string parameters must include '"+p+"'.")
			}
		}
		if len(missing) > 0 {
			return awserr.New(awserr.ErrIncompleteSignature, "%s Re-examine the query-string parameters.", strings.Join(missing, " "))
		}
	case rq.proto == protoKinesis:
		return awserr.New(awserr.ErrMissingAuthenticationToken, "Missing Authentication Token")
	default:
		return authError(rq.proto, authMissing, "Request is missing Authentication Token")
	}
	return nil
}

// anonymousOK reports the calls AWS serves without a signature: SNS's
// ConfirmSubscription and Unsubscribe, which the SubscribeURL and
// UnsubscribeURL of its messages make (an HTTP endpoint's owner opens
// them as they are).
func anonymousOK(rq *request) bool {
	return (rq.proto == protoSNS || rq.proto == protoSNSJSON) && (rq.op == "ConfirmSubscription" || rq.op == "Unsubscribe")
}
