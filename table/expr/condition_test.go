package expr

import (
	"fmt"
	"strings"
	"testing"
)

const sample = `{
	"pk": {"S": "user#1"},
	"name": {"S": "Ada Lovelace"},
	"age": {"N": "36"},
	"score": {"N": "1.50"},
	"blob": {"B": "AQID"},
	"ok": {"BOOL": true},
	"nothing": {"NULL": true},
	"tags": {"SS": ["red", "blue"]},
	"nums": {"NS": ["1", "2.0"]},
	"bins": {"BS": ["AQ==", "Ag=="]},
	"list": {"L": [{"S": "a"}, {"N": "2"}, {"M": {"x": {"S": "deep"}}}]},
	"map": {"M": {"inner": {"M": {"v": {"N": "7"}}}, "s": {"S": "hello"}, "dotted.key": {"S": "d"}}}
}`

func TestConditionEval(t *testing.T) {
	vals := `{
		":s": {"S": "Ada Lovelace"}, ":n": {"N": "36"}, ":n2": {"N": "36.000"}, ":lo": {"N": "30"}, ":hi": {"N": "40"},
		":pre": {"S": "Ada"}, ":red": {"S": "red"}, ":two": {"N": "2"}, ":b": {"B": "AQ=="}, ":bp": {"B": "AQI="},
		":a": {"S": "a"}, ":tS": {"S": "S"}, ":tSS": {"S": "SS"}, ":tN": {"S": "N"}, ":tNULL": {"S": "NULL"}, ":tM": {"S": "M"},
		":tBOOL": {"S": "BOOL"}, ":tL": {"S": "L"}, ":tBS": {"S": "BS"}, ":tNS": {"S": "NS"}, ":tB": {"S": "B"},
		":deep": {"S": "deep"}, ":seven": {"N": "7"}, ":three": {"N": "3"}, ":twelve": {"N": "12"}, ":true": {"BOOL": true},
		":set": {"SS": ["blue", "red"]}, ":ns": {"NS": ["2", "1"]}, ":one5": {"N": "1.5"}, ":x": {"S": "x"}, ":ll": {"L": [{"S": "a"}]}
	}`
	tests := []struct {
		expr  string
		names map[string]string
		item  string // "" = no item
		want  bool
	}{
		// comparators
		{"name = :s", nil, sample, true},
		{"age = :n2", nil, sample, true}, // numbers compare numerically
		{"score = :one5", nil, sample, true},
		{"age <> :n", nil, sample, false},
		{"age <> :s", nil, sample, true}, // different types are unequal
		{"missing <> :s", nil, sample, true},
		{"missing = :s", nil, sample, false},
		{"age < :hi", nil, sample, true},
		{"age <= :n", nil, sample, true},
		{"age > :lo", nil, sample, true},
		{"age >= :hi", nil, sample, false},
		{"name < :s", nil, sample, false},
		{"name > :pre", nil, sample, true}, // byte order
		{"age < :s", nil, sample, false},   // mismatched types: false, not an error
		{"blob > :b", nil, sample, true},
		{"tags = :set", nil, sample, true}, // sets compare as sets
		{"nums = :ns", nil, sample, true},
		{"ok = :true", nil, sample, true},
		{":n = :n2", nil, sample, true},
		{"list[0] = :a", nil, sample, true},
		{"list[2].x = :deep", nil, sample, true},
		{"list[9] = :a", nil, sample, false},
		{"map.inner.v = :seven", nil, sample, true},
		{"#m.#i.#v = :seven", names("#m", "map", "#i", "inner", "#v", "v"), sample, true},
		{"map.#d = :a", names("#d", "dotted.key"), sample, false},
		{"#d = :a", names("#d", "map"), sample, false},
		{"map.s[0] = :a", nil, sample, false}, // index into a string: missing
		// BETWEEN, IN
		{"age BETWEEN :lo AND :hi", nil, sample, true},
		{"age between :n and :n", nil, sample, true},
		{"age BETWEEN :hi AND :hi", nil, sample, false},
		{"name BETWEEN :lo AND :hi", nil, sample, false},
		{"age IN (:lo, :n)", nil, sample, true},
		{"age IN (:lo, :hi)", nil, sample, false},
		{"tags IN (:set)", nil, sample, true},
		{"missing IN (:lo)", nil, sample, false},
		// functions
		{"attribute_exists(pk)", nil, sample, true},
		{"attribute_exists(missing)", nil, sample, false},
		{"attribute_exists(map.inner.v)", nil, sample, true},
		{"attribute_exists(list[2])", nil, sample, true},
		{"attribute_exists(list[3])", nil, sample, false},
		{"attribute_not_exists(pk)", nil, sample, false},
		{"attribute_not_exists(pk)", nil, "", true}, // no item
		{"attribute_exists(pk)", nil, "", false},
		{"attribute_type(name, :tS)", nil, sample, true},
		{"attribute_type(tags, :tSS)", nil, sample, true},
		{"attribute_type(nums, :tNS)", nil, sample, true},
		{"attribute_type(bins, :tBS)", nil, sample, true},
		{"attribute_type(blob, :tB)", nil, sample, true},
		{"attribute_type(age, :tN)", nil, sample, true},
		{"attribute_type(nothing, :tNULL)", nil, sample, true},
		{"attribute_type(ok, :tBOOL)", nil, sample, true},
		{"attribute_type(list, :tL)", nil, sample, true},
		{"attribute_type(map, :tM)", nil, sample, true},
		{"attribute_type(age, :tS)", nil, sample, false},
		{"attribute_type(missing, :tS)", nil, sample, false},
		{"begins_with(name, :pre)", nil, sample, true},
		{"begins_with(name, :a)", nil, sample, false},
		{"begins_with(blob, :bp)", nil, sample, true},
		{"begins_with(age, :pre)", nil, sample, false},
		{"contains(name, :pre)", nil, sample, true},
		{"contains(tags, :red)", nil, sample, true},
		{"contains(tags, :a)", nil, sample, false},
		{"contains(nums, :two)", nil, sample, true}, // "2.0" in the set
		{"contains(bins, :b)", nil, sample, true},
		{"contains(list, :a)", nil, sample, true},
		{"contains(list, :two)", nil, sample, true},
		{"contains(list, :x)", nil, sample, false},
		{"contains(age, :n)", nil, sample, false},
		{"size(name) = :twelve", nil, sample, true},
		{"size(tags) = :two", nil, sample, true},
		{"size(list) = :three", nil, sample, true},
		{"size(map) = :three", nil, sample, true},
		{"size(blob) = :three", nil, sample, true},
		{"size(age) = :two", nil, sample, false}, // size of a number: no value
		{"size(missing) < :two", nil, sample, false},
		{":three = size(list)", nil, sample, true},
		{"size(list) BETWEEN :two AND :three", nil, sample, true},
		// logic and precedence (NOT > AND > OR)
		{"age = :n AND name = :s", nil, sample, true},
		{"age = :n AND name = :a", nil, sample, false},
		{"age = :lo OR name = :s", nil, sample, true},
		{"NOT age = :lo", nil, sample, true},
		{"not attribute_exists(pk)", nil, sample, false},
		{"age = :lo AND name = :a OR age = :n", nil, sample, true},    // (F AND F) OR T
		{"age = :lo AND (name = :a OR age = :n)", nil, sample, false}, // F AND (...)
		{"age = :n OR name = :a AND age = :lo", nil, sample, true},    // T OR (F AND F)
		{"(age = :n OR name = :a) AND age = :lo", nil, sample, false},
		{"NOT age = :n OR age = :n", nil, sample, true},    // (NOT T) OR T
		{"NOT (age = :n OR age = :n)", nil, sample, false}, //
		{"NOT age = :lo AND NOT age = :hi", nil, sample, true},
		{"NOT NOT age = :n", nil, sample, true},
		{"(age = :n)", nil, sample, true},                          // "((age = :n))" is refused: TestConditionErrors
		{"age = :n and name = :s Or age = :lo", nil, sample, true}, // keywords in any case
		{"age BETWEEN :lo AND :hi AND name = :s", nil, sample, true},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			c := &Context{Names: tt.names, Values: values(t, vals)}
			cond, err := ParseCondition(tt.expr, c)
			if err != nil {
				t.Fatal(err)
			}
			got, err := cond.Eval(item(t, tt.item))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("Eval = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestConditionErrors(t *testing.T) {
	vals := `{":s": {"S": "a"}, ":n": {"N": "1"}, ":m": {"M": {}}, ":bad": {"S": "X"}, ":z": {"S": "z"}}`
	tests := []struct {
		expr  string
		names map[string]string
		want  string
	}{
		{"", nil, "Invalid ConditionExpression: The expression can not be empty;"},
		// AWS's answer to '((attribute_not_exists(pk)))', as recorded by
		// paritysuite/dynamodb-conformance (PutItem's exact error messages).
		{"((attribute_not_exists(a)))", nil, "Invalid ConditionExpression: The expression has redundant parentheses;"},
		{"(a = :s) AND ((b = :s))", nil, "Invalid ConditionExpression: The expression has redundant parentheses;"},
		{"   ", nil, "Invalid ConditionExpression: The expression can not be empty;"},
		{"a = #x", nil, "Invalid ConditionExpression: An expression attribute name used in the document path is not defined; attribute name: #x"},
		{"a.#x = :s", names("#y", "y"), "Invalid ConditionExpression: An expression attribute name used in the document path is not defined; attribute name: #x"},
		{"a = :x", nil, "Invalid ConditionExpression: An expression attribute value used in expression is not defined; attribute value: :x"},
		{"a =", nil, `Invalid ConditionExpression: Syntax error; token: "<EOF>", near: "="`},
		{"a = :s :s", nil, `Invalid ConditionExpression: Syntax error; token: ":s", near: ":s :s"`},
		{"a", nil, `Invalid ConditionExpression: Syntax error; token: "<EOF>", near: "a"`},
		{"a == :s", nil, `Invalid ConditionExpression: Syntax error; token: "=", near: "=="`},
		{"a != :s", nil, `Invalid ConditionExpression: Syntax error; token: "!", near: "a !"`},
		{"(a = :s", nil, `Invalid ConditionExpression: Syntax error; token: "<EOF>", near: ":s"`},
		{"a = 1", nil, `Invalid ConditionExpression: Syntax error; token: "1", near: "= 1"`},
		{"a[x] = :s", nil, `Invalid ConditionExpression: Syntax error; token: "x", near: "[x"`},
		{"a BETWEEN :s", nil, `Invalid ConditionExpression: Syntax error; token: "<EOF>", near: ":s"`},
		{"foo(a)", nil, "Invalid ConditionExpression: Invalid function name; function: foo"},
		{"ATTRIBUTE_EXISTS(a)", nil, "Invalid ConditionExpression: Invalid function name; function: ATTRIBUTE_EXISTS"},
		{"size(a)", nil, "Invalid ConditionExpression: The function is not allowed to be used this way in an expression; function: size"},
		{"attribute_exists(a) = :s", nil, "Invalid ConditionExpression: The function is not allowed to be used this way in an expression; function: attribute_exists"},
		{"a = if_not_exists(a, :s)", nil, "Invalid ConditionExpression: The function is not allowed to be used this way in an expression; function: if_not_exists"},
		{"a IN (:s, contains(a, :s))", nil, "Invalid ConditionExpression: The function is not allowed to be used this way in an expression; function: contains"},
		{"attribute_exists(a, b)", nil, "Invalid ConditionExpression: Incorrect number of operands for operator or function; operator or function: attribute_exists, number of operands: 2"},
		{"attribute_exists(:s)", nil, "Invalid ConditionExpression: Operator or function requires a document path; operator or function: attribute_exists"},
		{"attribute_type(a, :bad)", nil, "Invalid ConditionExpression: Invalid attribute type name found; type: X, valid types: {B,NULL,SS,BOOL,L,BS,N,NS,S,M}"},
		{"attribute_type(a, :n)", nil, "Invalid ConditionExpression: Incorrect operand type for operator or function; operator or function: attribute_type, operand type: N"},
		{"begins_with(a, :n)", nil, "Invalid ConditionExpression: Incorrect operand type for operator or function; operator or function: begins_with, operand type: N"},
		{"size(:n) > :n", nil, "Invalid ConditionExpression: Incorrect operand type for operator or function; operator or function: size, operand type: N"},
		{"a < :m", nil, "Invalid ConditionExpression: Incorrect operand type for operator or function; operator or function: <, operand type: M"},
		{"a BETWEEN :s AND :n", nil, "Invalid ConditionExpression: The BETWEEN operator requires same data type for lower and upper bounds; lower bound operand: AttributeValue: {S:a}, upper bound operand: AttributeValue: {N:1}"},
		{"a BETWEEN :z AND :s", nil, "Invalid ConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal to lower bound; lower bound operand: AttributeValue: {S:z}, upper bound operand: AttributeValue: {S:a}"},
		// DynamoDB's order (condition_order.go; dynalite's scan tests):
		// syntax first, then parentheses, unknown functions, misplaced
		// ones, then the first condition with an error, by its kind
		{"a > :x.stuff", nil, `Invalid ConditionExpression: Syntax error; token: ".", near: ":x."`},
		{"size(a)[0] > a", nil, `Invalid ConditionExpression: Syntax error; token: "[", near: ")["`},
		{"a > between", nil, `Invalid ConditionExpression: Syntax error; token: "between", near: "> between"`},
		{"((a = :x)) AND b = c(", nil, `Invalid ConditionExpression: Syntax error; token: "<EOF>", near: "("`},
		{"a = :x and whatever((:y)) > a", nil, "Invalid ConditionExpression: Invalid function name; function: whatever"},
		{"attribute_exists(a) = :s AND foo(a)", nil, "Invalid ConditionExpression: Invalid function name; function: foo"},
		{"attribute_exists(a) = :s AND b =", nil, `Invalid ConditionExpression: Syntax error; token: "<EOF>", near: "="`},
		{"size(:n) > #x", nil, "Invalid ConditionExpression: An expression attribute name used in the document path is not defined; attribute name: #x"},
		{"attribute_exists(size(:n), b)", nil, "Invalid ConditionExpression: Incorrect number of operands for operator or function; operator or function: attribute_exists, number of operands: 2"},
		{"a > whatever((:y), ((a)))", nil, "Invalid ConditionExpression: The expression has redundant parentheses;"},
		{"(a)between(((b.c)).d)and(c)", nil, "Invalid ConditionExpression: The expression has redundant parentheses;"},
		{"attribute_type(things, :x) > b", nil, "Invalid ConditionExpression: The function is not allowed to be used this way in an expression; function: attribute_type"},
		{"a = :x AND contains(:y, c) > b", nil, "Invalid ConditionExpression: The function is not allowed to be used this way in an expression; function: contains"},
		{"a=a and attribute_exists((views), (#a)) > b", nil, "Invalid ConditionExpression: The function is not allowed to be used this way in an expression; function: attribute_exists"},
		{"(a)between(b.c[45].#d)and(:x)", nil, "Invalid ConditionExpression: An expression attribute name used in the document path is not defined; attribute name: #d"},
		{"begins_with(:x, #a, #b)", nil, "Invalid ConditionExpression: An expression attribute value used in expression is not defined; attribute value: :x"},
		{"attribute_exists(#P.R, :x) and a=a", nil, "Invalid ConditionExpression: An expression attribute name used in the document path is not defined; attribute name: #P"},
		{"a = a AND #a = b AND :x > a", names("#a", "a"), "Invalid ConditionExpression: The first operand must be distinct from the remaining operands for this operator or function; operator: =, first operand: [a]"},
		{"#a <> a", names("#a", "a"), "Invalid ConditionExpression: The first operand must be distinct from the remaining operands for this operator or function; operator: <>, first operand: [a]"},
		{"contains(ab.bc[1].a, ab.bc[1].#a)", names("#a", "a"), "Invalid ConditionExpression: The first operand must be distinct from the remaining operands for this operator or function; operator: contains, first operand: [ab, bc, [1], a]"},
		{"a < :m AND b = b", nil, "Invalid ConditionExpression: Incorrect operand type for operator or function; operator or function: <, operand type: M"},
		{"attribute_type(a, size(a)) and a=a and a=:s", nil, "Invalid ConditionExpression: Incorrect operand type for operator or function; operator or function: attribute_type, operand type: N"},
		{"begins_with(a, size(a)) and a=:s", nil, "Invalid ConditionExpression: Incorrect operand type for operator or function; operator or function: begins_with, operand type: N"},
		{"size(size(a)) > :n", nil, "Invalid ConditionExpression: Incorrect operand type for operator or function; operator or function: size, operand type: N"},
		{"attribute_not_exists(size(:n))", nil, "Invalid ConditionExpression: Incorrect operand type for operator or function; operator or function: size, operand type: N"},
		{"attribute_not_exists(size(:s))", nil, "Invalid ConditionExpression: Operator or function requires a document path; operator or function: attribute_not_exists"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			_, err := ParseCondition(tt.expr, &Context{Names: tt.names, Values: values(t, vals)})
			wantValidation(t, err, tt.want)
		})
	}
	_, err := ParseFilter("", nil)
	wantValidation(t, err, "Invalid FilterExpression: The expression can not be empty;")
}

func TestConditionIN(t *testing.T) {
	vals := map[string]string{}
	var list []string
	for i := range 101 {
		vals[fmt.Sprintf(":v%d", i)] = fmt.Sprintf(`{"N": "%d"}`, i)
		list = append(list, fmt.Sprintf(":v%d", i))
	}
	var js []string
	for k, v := range vals {
		js = append(js, fmt.Sprintf("%q: %s", k, v))
	}
	ctx := &Context{Values: values(t, "{"+strings.Join(js, ",")+"}")}
	c, err := ParseCondition("a IN ("+strings.Join(list[:100], ", ")+")", ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := c.Eval(item(t, `{"a": {"N": "99"}}`)); !ok {
		t.Fatal("99 IN (0..99) is false")
	}
	_, err = ParseCondition("a IN ("+strings.Join(list, ", ")+")", ctx)
	wantValidation(t, err, "Invalid ConditionExpression: Too many operands for the operator or function; operator or function: IN, number of operands: 101")
}
