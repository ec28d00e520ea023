package awsapi

// DynamoDB's own wording where it differs from the other JSON services',
// as DynamoDB answers (the responses dynalite's tests record, written
// against AWS):
//
//   - a ValidationException is in the validation framework's namespace,
//     "com.amazon.coral.validate#ValidationException" (awserr's table);
//   - a SerializationException has its text under "Message", not
//     "message", and none at all when the body is not JSON;
//   - a value of the wrong JSON type is worded by DynamoDB's JSON reader,
//     which names what it expected from where the value is: a member of
//     a structure ("Unexpected field type"), an element of a list or a
//     value of a map ("Unexpected value type in payload"), and a list
//     where a scalar, a structure or a map is expected by its Java class
//     ("Unrecognized collection type class java.lang.String");
//   - the item operations (GetItem, PutItem, Query, the batches...) say
//     only "Requested resource not found" of a missing table; the table
//     operations name it.

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/runnel-dev/runnel/awserr"
)

// dynamoMemberOrder is the order DynamoDB reports a shape's failed
// members in where it is not the model's (see reorderMembers).
var dynamoMemberOrder = map[string][]string{
	"ProvisionedThroughput": {"WriteCapacityUnits", "ReadCapacityUnits"},
}

// maxDynamoFails is how many of a request's model failures DynamoDB
// reports ("10 validation errors detected: ...").
const maxDynamoFails = 10

// dynamoJavaNS is the Java package of DynamoDB's shapes, in its messages.
const dynamoJavaNS = "com.amazonaws.dynamodb.v20120810."

// dynamoCastMsg is DynamoDB's message for a scalar where a list or a map
// nested in another list or map is expected.
const dynamoCastMsg = "class sun.reflect.generics.reflectiveObjects.ParameterizedTypeImpl cannot be cast to class java.lang.Class " +
	"(sun.reflect.generics.reflectiveObjects.ParameterizedTypeImpl and java.lang.Class are in module java.base of loader 'bootstrap')"

// dynamoMismatch is DynamoDB's message for a value v of the wrong JSON
// type for shape s; field reports whether v is a member of a structure
// (not an element of a list or a value of a map).
func dynamoMismatch(s *shape, v any, field bool) string {
	_, isList := v.([]any)
	_, isMap := v.(map[string]any)
	switch s.Type {
	case "structure":
		switch {
		case isList:
			return "Unrecognized collection type class " + dynamoJavaNS + s.name
		case field:
			return "Unexpected field type"
		}
		return "Unexpected value type in payload"
	case "list":
		switch {
		case isMap:
			return "Start of structure or map found where not expected"
		case field:
			return "Unexpected field type"
		}
		return dynamoCastMsg
	case "map":
		switch {
		case isList:
			return "Unrecognized collection type java.util.Map<java.lang.String, " + dynamoJavaName(s.Value.shape) + ">"
		case field:
			return "Unexpected field type"
		}
		return dynamoCastMsg
	}
	switch {
	case isMap:
		return "Start of structure or map found where not expected"
	case isList:
		return "Unrecognized collection type class " + dynamoJavaName(s)
	}
	switch s.Type {
	case "blob":
		return "only base-64-encoded strings are convertible to bytes"
	case "boolean":
		if _, ok := v.(string); ok {
			return "Unexpected token received from parser"
		}
	}
	return dynamoToken(v) + " cannot be converted to " + javaType(s)
}

// dynamoToken is the JSON token's name in DynamoDB's messages: a number
// with a fraction or an exponent is a DECIMAL_VALUE.
func dynamoToken(v any) string {
	if n, ok := v.(json.Number); ok && strings.ContainsAny(string(n), ".eE") {
		return "DECIMAL_VALUE"
	}
	return tokenName(v)
}

// dynamoJavaName is the Java type DynamoDB reads a shape as: the
// java.lang class of a scalar's javaType.
func dynamoJavaName(s *shape) string {
	switch s.Type {
	case "string", "boolean", "integer", "long":
		return "java.lang." + javaType(s)
	case "blob":
		return "java.nio.ByteBuffer"
	case "list":
		return "java.util.List<" + dynamoJavaName(s.Member.shape) + ">"
	case "map":
		return "java.util.Map<java.lang.String, " + dynamoJavaName(s.Value.shape) + ">"
	}
	return dynamoJavaNS + s.name
}

// dynamoBase64 is DynamoDB's message for a blob that is not canonical
// base64, or "" when it is.
func dynamoBase64(str string) string {
	why := kinesisBase64(str)
	if why != "" && !strings.HasPrefix(why, "Base64 encoded length") {
		return "Invalid last non-pad Base64 character dectected"
	}
	return why
}

// dynamoItemOps are the operations that say only "Requested resource not
// found" of a missing table.
var dynamoItemOps = map[string]bool{
	"GetItem": true, "PutItem": true, "UpdateItem": true, "DeleteItem": true,
	"BatchGetItem": true, "BatchWriteItem": true, "Query": true, "Scan": true,
	"TransactWriteItems": true, "TransactGetItems": true,
}

// dynamoMessage is the error's message as DynamoDB words it for the
// request's operation.
func dynamoMessage(rq *request, we wireError) string {
	if we.e.Code == awserr.ErrResourceNotFound.Code && dynamoItemOps[rq.op] &&
		strings.HasPrefix(we.e.Message, "Requested resource not found: Table: ") {
		return "Requested resource not found"
	}
	return we.e.Message
}

// dynamoBody is the error body of an error without details: the text
// under "message", or under "Message" for a SerializationException (none
// when empty).
func dynamoBody(typ, msg string) map[string]any {
	if strings.HasSuffix(typ, "#SerializationException") {
		if msg == "" {
			return map[string]any{"__type": typ}
		}
		return map[string]any{"__type": typ, "Message": msg}
	}
	if msg == "" {
		return map[string]any{"__type": typ}
	}
	return map[string]any{"__type": typ, "message": msg}
}

// dynamoBooleanStrings are the strings DynamoDB's reader takes for an
// attribute value's BOOL or NULL, and what they read as.
var dynamoBooleanStrings = map[string]bool{"true": true, "false": false, "yes": true, "no": false, "1": true, "0": false}

// dynamoStringBooleans is body with an attribute value's BOOL or NULL
// given as a string DynamoDB takes ({"NULL": "no"}, {"BOOL": "1"}) as the
// boolean it reads, so that the value's own rules then apply ("Null
// attribute value types must have the true value"); body as it is when
// it has none.
func dynamoStringBooleans(body []byte) []byte {
	if !bytes.Contains(body, []byte(`"NULL"`)) && !bytes.Contains(body, []byte(`"BOOL"`)) {
		return body
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return body
	}
	var walk func(v any) bool
	walk = func(v any) bool {
		changed := false
		switch t := v.(type) {
		case map[string]any:
			if len(t) == 1 {
				for _, k := range []string{"NULL", "BOOL"} {
					if s, ok := t[k].(string); ok {
						if b, ok := dynamoBooleanStrings[s]; ok {
							t[k], changed = b, true
						}
					}
				}
			}
			for _, e := range t {
				changed = walk(e) || changed
			}
		case []any:
			for _, e := range t {
				changed = walk(e) || changed
			}
		}
		return changed
	}
	if !walk(v) {
		return body
	}
	out, err := json.Marshal(v)
	if err != nil {
		return body
	}
	return out
}
