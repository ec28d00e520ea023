package awsapi_test

import (
	"encoding/json"
	"encoding/xml"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/awsapi"
)

// TestValidationOfQueryServices: SQS (JSON and query protocol), CloudWatch
// Logs, IAM and STS requests their models refuse get each service's code
// and AWS's wording, before any queue, group or role is looked up (none
// exists here). Where a case names a public issue, its message is AWS's
// as quoted there; the others follow the model in the same wording.
func TestValidationOfQueryServices(t *testing.T) {
	e := start(t, awsapi.Options{})
	base := e.srv.URL
	form := func(kv ...string) url.Values {
		f := url.Values{}
		for i := 0; i < len(kv); i += 2 {
			f.Add(kv[i], kv[i+1])
		}
		return f
	}
	for _, tt := range []struct {
		name   string
		target string     // a JSON call's X-Amz-Target
		body   string     // its body
		scope  string     // a query call's signing scope
		form   url.Values // its form
		code   string
		msg    string
	}{
		{name: "SQS JSON without QueueUrl", target: "AmazonSQS.DeleteQueue", body: `{}`,
			code: "MissingParameter", msg: "The request must contain the parameter QueueUrl."},
		{name: "SQS JSON AddPermission without Label", target: "AmazonSQS.AddPermission",
			body: `{"QueueUrl":"http://x/000000000000/missing","AWSAccountIds":["111122223333"],"Actions":["SendMessage"]}`,
			code: "MissingParameter", msg: "The request must contain the parameter Label."},
		{name: "SQS JSON TagQueue without Tags", target: "AmazonSQS.TagQueue", body: `{"QueueUrl":"http://x/000000000000/missing"}`,
			code: "MissingParameter", msg: "The request must contain the parameter Tags."},
		{name: "SQS JSON unknown attribute name", target: "AmazonSQS.GetQueueAttributes",
			body: `{"QueueUrl":"http://x/000000000000/missing","AttributeNames":["Bogus"]}`,
			code: "InvalidAttributeName", msg: "Unknown Attribute Bogus."},
		{name: "SQS JSON receive without QueueUrl", target: "AmazonSQS.ReceiveMessage", body: `{"MaxNumberOfMessages":1}`,
			code: "MissingParameter", msg: "The request must contain the parameter QueueUrl."},
		{name: "SQS JSON send without a body", target: "AmazonSQS.SendMessage", body: `{"QueueUrl":"http://x/000000000000/missing"}`,
			code: "MissingParameter", msg: "The request must contain the parameter MessageBody."},
		{name: "SQS JSON batch entry without an Id", target: "AmazonSQS.SendMessageBatch",
			body: `{"QueueUrl":"http://x/000000000000/missing","Entries":[{"Id":"a","MessageBody":"x"},{"MessageBody":"y"}]}`,
			code: "MissingParameter", msg: "The request must contain the parameter Entries.2.Id."},
		{name: "SQS JSON TagQueue with no tags", target: "AmazonSQS.TagQueue", body: `{"QueueUrl":"http://x/000000000000/missing","Tags":{}}`,
			code: "MissingParameter", msg: "The request must contain the parameter Tags."},
		{name: "SQS JSON UntagQueue with no keys", target: "AmazonSQS.UntagQueue", body: `{"QueueUrl":"http://x/000000000000/missing","TagKeys":[]}`,
			code: "MissingParameter", msg: "The request must contain the parameter TagKeys."},
		{name: "SQS JSON AddPermission with no actions", target: "AmazonSQS.AddPermission",
			body: `{"QueueUrl":"http://x/000000000000/missing","Label":"l","AWSAccountIds":["111122223333"],"Actions":[]}`,
			code: "MissingParameter", msg: "The request must contain the parameter Actions."},
		{name: "SQS query TagQueue with no tags", scope: "sqs", form: form("Action", "TagQueue", "QueueUrl", "http://x/000000000000/missing"),
			code: "MissingParameter", msg: "The request must contain the parameter Tags."},
		{name: "SQS query tag without a key", scope: "sqs", form: form("Action", "TagQueue", "QueueUrl", "http://x/000000000000/missing", "Tag.1.Value", "v"),
			code: "InvalidParameterValue", msg: "Tag keys must be between 1 and 128 characters in length."},
		{name: "SQS JSON receive of message system attributes by their deprecated name", target: "AmazonSQS.ReceiveMessage",
			body: `{"QueueUrl":"http://x/000000000000/missing","AttributeNames":["SentTimestamp","ApproximateReceiveCount"]}`,
			code: "QueueDoesNotExist", msg: "The specified queue http://x/000000000000/missing does not exist."},
		{name: "SQS JSON a number as a string", target: "AmazonSQS.ChangeMessageVisibility",
			body: `{"QueueUrl":"http://x/000000000000/missing","ReceiptHandle":"h","VisibilityTimeout":"ten"}`,
			code: "SerializationException", msg: "STRING_VALUE cannot be converted to Integer"},
		{name: "SQS query without QueueUrl", scope: "sqs", form: form("Action", "PurgeQueue"),
			code: "MissingParameter", msg: "The request must contain the parameter QueueUrl."},
		{name: "SQS query ChangeMessageVisibility without VisibilityTimeout", scope: "sqs",
			form: form("Action", "ChangeMessageVisibility", "QueueUrl", "http://x/000000000000/missing", "ReceiptHandle", "h"),
			code: "MissingParameter", msg: "The request must contain the parameter VisibilityTimeout."},
		{name: "SQS query unknown attribute name", scope: "sqs",
			form: form("Action", "SetQueueAttributes", "QueueUrl", "http://x/000000000000/missing", "Attribute.1.Name", "Bogus", "Attribute.1.Value", "1"),
			code: "InvalidAttributeName", msg: "Unknown Attribute Bogus."},
		{name: "SQS query RemovePermission without Label", scope: "sqs",
			form: form("Action", "RemovePermission", "QueueUrl", "http://x/000000000000/missing"),
			code: "MissingParameter", msg: "The request must contain the parameter Label."},
		{
			// serverless/examples#405 (Error Code: ValidationError, from IAM).
			name: "IAM role name length", scope: "iam",
			form: form("Action", "CreateRole", "RoleName", "aws-node-serve-dynamic-html-via-http-endpoint-dev-us-east-1-lambdaRole", "AssumeRolePolicyDocument", "{}"),
			code: "ValidationError",
			msg:  "1 validation error detected: Value 'aws-node-serve-dynamic-html-via-http-endpoint-dev-us-east-1-lambdaRole' at 'roleName' failed to satisfy constraint: Member must have length less than or equal to 64",
		},
		{name: "IAM role name pattern", scope: "iam",
			form: form("Action", "GetRole", "RoleName", "my role"),
			code: "ValidationError",
			msg:  `1 validation error detected: Value 'my role' at 'roleName' failed to satisfy constraint: Member must satisfy regular expression pattern: [\w+=,.@-]+`},
		{name: "IAM tags over 50, as a list of members", scope: "iam",
			form: tags51(form("Action", "CreateRole", "RoleName", "r", "AssumeRolePolicyDocument", "{}")),
			code: "ValidationError", msg: "1 validation error detected: Value '[",
		},
		{name: "IAM required member", scope: "iam", form: form("Action", "DeleteRole"),
			code: "ValidationError", msg: "1 validation error detected: Value null at 'roleName' failed to satisfy constraint: Member must not be null"},
		{
			// JuliaCloud/AWSCore.jl#38 (STS's error document).
			name: "STS session name pattern", scope: "sts",
			form: form("Action", "AssumeRole", "RoleArn", "arn:aws:iam::000000000000:role/r", "RoleSessionName", "a:b"),
			code: "ValidationError",
			msg:  `1 validation error detected: Value 'a:b' at 'roleSessionName' failed to satisfy constraint: Member must satisfy regular expression pattern: [\w+=,.@-]*`,
		},
		{name: "STS DurationSeconds below 900", scope: "sts",
			form: form("Action", "AssumeRole", "RoleArn", "arn:aws:iam::000000000000:role/r", "RoleSessionName", "sess", "DurationSeconds", "100"),
			code: "ValidationError",
			msg:  "1 validation error detected: Value '100' at 'durationSeconds' failed to satisfy constraint: Member must have value greater than or equal to 900"},
		{
			// awslabs/aws-embedded-metrics-java#65 (InvalidParameterException from CloudWatch Logs).
			name: "Logs group name pattern", target: "Logs_20140328.CreateLogGroup", body: `{"logGroupName":"testServiceName:latest-metrics"}`,
			code: "InvalidParameterException",
			msg:  `1 validation error detected: Value 'testServiceName:latest-metrics' at 'logGroupName' failed to satisfy constraint: Member must satisfy regular expression pattern: [\.\-_/#A-Za-z0-9]+`,
		},
		{
			// fluent-plugins-nursery/fluent-plugin-cloudwatch-logs#223: AWS
			// lists the pattern first, runnel the length (docs/semantics.md).
			name: "Logs empty prefix", target: "Logs_20140328.DescribeLogGroups", body: `{"logGroupNamePrefix":""}`,
			code: "InvalidParameterException",
			msg: "2 validation errors detected: Value '' at 'logGroupNamePrefix' failed to satisfy constraint: Member must have length greater than or equal to 1; " +
				`Value '' at 'logGroupNamePrefix' failed to satisfy constraint: Member must satisfy regular expression pattern: [\.\-_/#A-Za-z0-9]+`,
		},
		{name: "Logs limit range", target: "Logs_20140328.DescribeLogGroups", body: `{"limit":51}`,
			code: "InvalidParameterException",
			msg:  "1 validation error detected: Value '51' at 'limit' failed to satisfy constraint: Member must have value less than or equal to 50"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var status int
			var body, code, msg string
			if tt.target != "" {
				ct := "application/x-amz-json-1.0"
				if strings.HasPrefix(tt.target, "Logs") {
					ct = "application/x-amz-json-1.1"
				}
				status, body = post(t, base, tt.body, map[string]string{"Content-Type": ct, "X-Amz-Target": tt.target})
				var e struct {
					Type    string `json:"__type"`
					Message string `json:"message"`
				}
				_ = json.Unmarshal([]byte(body), &e)
				code, msg = e.Type[strings.LastIndexByte(e.Type, '#')+1:], e.Message
			} else {
				status, body = query(t, base, tt.scope, tt.form)
				var e struct {
					Code    string `xml:"Error>Code"`
					Message string `xml:"Error>Message"`
				}
				_ = xml.Unmarshal([]byte(body), &e)
				code, msg = e.Code, e.Message
			}
			if status != 400 || code != tt.code || !strings.HasPrefix(msg, tt.msg) {
				t.Errorf("%d %s %q\nwant 400 %s %q\n%s", status, code, msg, tt.code, tt.msg, body)
			}
		})
	}
}

// tags51 adds 51 tags to an IAM form (Tags.member.N.Key/Value).
func tags51(f url.Values) url.Values {
	for i := 1; i <= 51; i++ {
		n := strconv.Itoa(i)
		f.Set("Tags.member."+n+".Key", "k"+n)
		f.Set("Tags.member."+n+".Value", "v")
	}
	return f
}
