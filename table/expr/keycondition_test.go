package expr

import (
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

func TestKeyCondition(t *testing.T) {
	vals := `{":pk": {"S": "user#1"}, ":a": {"S": "2024-01"}, ":b": {"S": "2024-03"}, ":p": {"S": "2024-02"}, ":n": {"N": "5"}}`
	sk := func(s string) *events.DynamoDBAttributeValue { v := events.NewStringAttribute(s); return &v }
	num := events.NewNumberAttribute("5")
	tests := []struct {
		expr    string
		names   map[string]string
		rangeOp string
		match   []*events.DynamoDBAttributeValue
		nomatch []*events.DynamoDBAttributeValue
	}{
		{"pk = :pk", nil, "", []*events.DynamoDBAttributeValue{nil, sk("x")}, nil},
		{"#p = :pk", names("#p", "pk"), "", nil, nil},
		{":pk = pk", nil, "", nil, nil},
		{"pk = :pk AND sk = :a", nil, "=", []*events.DynamoDBAttributeValue{sk("2024-01")}, []*events.DynamoDBAttributeValue{sk("2024-02"), nil, &num}},
		{"pk = :pk AND sk < :b", nil, "<", []*events.DynamoDBAttributeValue{sk("2024-02")}, []*events.DynamoDBAttributeValue{sk("2024-03")}},
		{"pk = :pk AND sk <= :b", nil, "<=", []*events.DynamoDBAttributeValue{sk("2024-03")}, []*events.DynamoDBAttributeValue{sk("2024-04")}},
		{"pk = :pk AND sk > :a", nil, ">", []*events.DynamoDBAttributeValue{sk("2024-02")}, []*events.DynamoDBAttributeValue{sk("2024-01")}},
		{"pk = :pk AND sk >= :a", nil, ">=", []*events.DynamoDBAttributeValue{sk("2024-01")}, []*events.DynamoDBAttributeValue{sk("2023-12")}},
		{"pk = :pk AND :a < sk", nil, ">", []*events.DynamoDBAttributeValue{sk("2024-02")}, []*events.DynamoDBAttributeValue{sk("2024-01")}},
		{"sk BETWEEN :a AND :b AND pk = :pk", nil, "BETWEEN", []*events.DynamoDBAttributeValue{sk("2024-01"), sk("2024-02-15"), sk("2024-03")}, []*events.DynamoDBAttributeValue{sk("2024-03-01"), sk("2023")}},
		{"pk = :pk and begins_with(sk, :p)", nil, "begins_with", []*events.DynamoDBAttributeValue{sk("2024-02-10")}, []*events.DynamoDBAttributeValue{sk("2024-03"), &num}},
		{"(pk = :pk) AND (sk = :n)", nil, "=", []*events.DynamoDBAttributeValue{&num}, []*events.DynamoDBAttributeValue{sk("5")}},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			k, err := ParseKeyCondition(tt.expr, &Context{Names: tt.names, Values: values(t, vals)}, "pk", "sk")
			if err != nil {
				t.Fatal(err)
			}
			if k.HashName != "pk" || !Equal(k.HashValue, events.NewStringAttribute("user#1")) {
				t.Fatalf("hash = %s %v", k.HashName, k.HashValue)
			}
			if k.RangeOp != tt.rangeOp {
				t.Fatalf("RangeOp = %q, want %q", k.RangeOp, tt.rangeOp)
			}
			for _, v := range tt.match {
				if !k.MatchRange(v) {
					t.Errorf("MatchRange(%v) = false", v)
				}
			}
			for _, v := range tt.nomatch {
				if k.MatchRange(v) {
					t.Errorf("MatchRange(%v) = true", v)
				}
			}
		})
	}
}

func TestKeyConditionErrors(t *testing.T) {
	vals := `{":v": {"S": "a"}, ":w": {"S": "b"}, ":n": {"N": "1"}}`
	tests := []struct {
		expr, rangeKey, want string
	}{
		{"", "sk", "Invalid KeyConditionExpression: The expression can not be empty;"},
		{"pk = :v AND", "sk", `Invalid KeyConditionExpression: Syntax error; token: "<EOF>", near: "AND"`},
		{"sk = :v", "sk", "Query condition missed key schema element: pk"},
		{"pk = :v AND other = :v", "sk", "Query condition missed key schema element: sk"},
		{"pk = :v AND other = :v", "", "Query key condition not supported"},
		{"pk < :v", "sk", "Query key condition not supported"},
		{"begins_with(pk, :v)", "sk", "Query key condition not supported"},
		{"pk = :v OR sk = :v", "sk", "Invalid operator used in KeyConditionExpression: OR"},
		{"NOT pk = :v", "sk", "Invalid operator used in KeyConditionExpression: NOT"},
		{"pk IN (:v)", "sk", "Invalid operator used in KeyConditionExpression: IN"},
		{"pk = :v AND sk <> :v", "sk", "Invalid operator used in KeyConditionExpression: <>"},
		{"pk = :v AND attribute_exists(sk)", "sk", "Invalid operator used in KeyConditionExpression: attribute_exists"},
		{"pk = :v AND contains(sk, :v)", "sk", "Invalid operator used in KeyConditionExpression: contains"},
		{"pk = :v AND sk > :v AND sk < :w", "sk", "KeyConditionExpressions must only contain one condition per key"},
		{"pk = :v AND pk = :w", "sk", "KeyConditionExpressions must only contain one condition per key"},
		{"pk.x = :v", "sk", "KeyConditionExpressions cannot have conditions on nested attributes"},
		{"pk = :v AND sk[0] = :v", "sk", "KeyConditionExpressions cannot have conditions on nested attributes"},
		{"pk = :v AND size(sk) > :n", "sk", "KeyConditionExpressions cannot contain nested operations"},
		{":v = :w", "sk", "Invalid condition in KeyConditionExpression: No key attribute specified"},
		{"pk = sk", "sk", "Invalid condition in KeyConditionExpression: Multiple attribute names used in one condition"},
		{"pk = :v AND :v BETWEEN sk AND :w", "sk", "Invalid condition in KeyConditionExpression: BETWEEN operator must have the key attribute as its first operand"},
		{"pk = :v AND begins_with(:v, sk)", "sk", "Invalid condition in KeyConditionExpression: begins_with operator must have the key attribute as its first operand"},
		{"pk = :v AND begins_with(sk, :n)", "sk", "Invalid KeyConditionExpression: Incorrect operand type for operator or function; operator or function: begins_with, operand type: N"},
		{"pk = :v AND sk BETWEEN :w AND :v", "sk", "Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal to lower bound; lower bound operand: AttributeValue: {S:b}, upper bound operand: AttributeValue: {S:a}"},
		{"pk = :v AND sk BETWEEN :n AND :v", "sk", "Invalid KeyConditionExpression: The BETWEEN operator requires same data type for lower and upper bounds; lower bound operand: AttributeValue: {N:1}, upper bound operand: AttributeValue: {S:a}"},
		{"pk = :x", "sk", "Invalid KeyConditionExpression: An expression attribute value used in expression is not defined; attribute value: :x"},
		{"attribute_type(pk, sk)", "sk", "Invalid KeyConditionExpression: Incorrect operand type for operator or function; operator or function: attribute_type, operand type: {NS,SS,L,BS,N,M,B,BOOL,NULL,S}"},
		{"(size(pk))[0] > sk", "sk", `Invalid KeyConditionExpression: Syntax error; token: "[", near: ")["`},
		// leaf by leaf from the left, each operand in turn (dynalite's query tests)
		{":v BETWEEN size(pk) AND size(sk) AND sk > :w", "sk", "Invalid condition in KeyConditionExpression: BETWEEN operator must have the key attribute as its first operand"},
		{"pk BETWEEN sk AND size(pk)", "sk", "Invalid condition in KeyConditionExpression: Multiple attribute names used in one condition"},
		{"pk.d > sk AND c.d > e.f", "sk", "KeyConditionExpressions cannot have conditions on nested attributes"},
		{"pk.x = :v AND attribute_exists(sk)", "sk", "KeyConditionExpressions cannot have conditions on nested attributes"},
		{":v > :w AND pk < :w", "sk", "Invalid condition in KeyConditionExpression: No key attribute specified"},
		{"pk = :v AND pk = :w AND attribute_exists(sk)", "sk", "KeyConditionExpressions must only contain one condition per key"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			_, err := ParseKeyCondition(tt.expr, &Context{Values: values(t, vals)}, "pk", tt.rangeKey)
			wantValidation(t, err, tt.want)
		})
	}
}
