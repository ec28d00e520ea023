package expr

import (
	"slices"
	"testing"
)

func TestUpdateApply(t *testing.T) {
	vals := `{
		":one": {"N": "1"}, ":tenth": {"N": "0.1"}, ":s": {"S": "x"}, ":l": {"L": [{"S": "z"}]}, ":empty": {"L": []},
		":ss": {"SS": ["c", "a"]}, ":ns": {"NS": ["1.0", "5"]}, ":bs": {"BS": ["AQ=="]}, ":big": {"N": "99999999999999999999999999999999999999"},
		":m": {"M": {"k": {"S": "v"}}}, ":neg": {"N": "-2.50"}
	}`
	old := `{"pk": {"S": "k"}, "n": {"N": "10"}, "s": {"S": "old"}, "l": {"L": [{"S": "a"}, {"S": "b"}, {"S": "c"}, {"S": "d"}]},
		"m": {"M": {"a": {"N": "1"}, "b": {"M": {"c": {"N": "2"}}}}}, "tags": {"SS": ["a", "b"]}, "nums": {"NS": ["1", "2"]}}`
	tests := []struct {
		name  string
		expr  string
		names map[string]string
		old   string
		want  string // the whole new item
	}{
		{"set value", "SET s = :s", nil, `{"s": {"S": "old"}}`, `{"s": {"S": "x"}}`},
		{"set creates item", "SET s = :s, n = :one", nil, "", `{"s": {"S": "x"}, "n": {"N": "1"}}`},
		{"set copies path", "SET s2 = s", nil, `{"s": {"S": "old"}}`, `{"s": {"S": "old"}, "s2": {"S": "old"}}`},
		{"set swap reads old", "SET a = b, b = a", nil, `{"a": {"N": "1"}, "b": {"N": "2"}}`, `{"a": {"N": "2"}, "b": {"N": "1"}}`},
		{"set plus", "SET n = n + :one", nil, `{"n": {"N": "10"}}`, `{"n": {"N": "11"}}`},
		{"set parenthesized operands", "SET s = (:s), n = (n) + (:one)", nil, `{"n": {"N": "10"}}`, `{"s": {"S": "x"}, "n": {"N": "11"}}`},
		{"set nested parentheses", "SET n = ((n)+(:one)), s = (:s)", nil, `{"n": {"N": "10"}}`, `{"s": {"S": "x"}, "n": {"N": "11"}}`},
		{"set parenthesized sum", "SET n = (n - :one)", nil, `{"n": {"N": "10"}}`, `{"n": {"N": "9"}}`},
		{"list positions in path order", "SET l[4] = :s, l[2] = :one ADD l[9] :ss, l[8] :one", nil, `{"l": {"L": [{"S": "a"}, {"S": "b"}]}}`,
			`{"l": {"L": [{"S": "a"}, {"S": "b"}, {"N": "1"}, {"S": "x"}, {"N": "1"}, {"SS": ["c", "a"]}]}}`},
		{"set minus", "set n = n - :neg", nil, `{"n": {"N": "10"}}`, `{"n": {"N": "12.5"}}`},
		{"set minus exact", "SET n = :tenth - n", nil, `{"n": {"N": "0.3"}}`, `{"n": {"N": "-0.2"}}`},
		{"if_not_exists absent", "SET n = if_not_exists(n, :one)", nil, `{}`, `{"n": {"N": "1"}}`},
		{"if_not_exists present", "SET n = if_not_exists(n, :one)", nil, `{"n": {"N": "5"}}`, `{"n": {"N": "5"}}`},
		{"counter", "SET n = if_not_exists(n, :one) + :one", nil, `{}`, `{"n": {"N": "2"}}`},
		{"list_append", "SET l = list_append(l, :l)", nil, `{"l": {"L": [{"S": "a"}]}}`, `{"l": {"L": [{"S": "a"}, {"S": "z"}]}}`},
		{"list_prepend", "SET l = list_append(:l, l)", nil, `{"l": {"L": [{"S": "a"}]}}`, `{"l": {"L": [{"S": "z"}, {"S": "a"}]}}`},
		{"list_append if_not_exists", "SET l = list_append(if_not_exists(l, :empty), :l)", nil, `{}`, `{"l": {"L": [{"S": "z"}]}}`},
		{"set list index", "SET l[1] = :s", nil, `{"l": {"L": [{"S": "a"}, {"S": "b"}]}}`, `{"l": {"L": [{"S": "a"}, {"S": "x"}]}}`},
		{"set list index past end appends", "SET l[10] = :s", nil, `{"l": {"L": [{"S": "a"}]}}`, `{"l": {"L": [{"S": "a"}, {"S": "x"}]}}`},
		{"set nested map", "SET m.b.c = :s, m.new = :one", nil, `{"m": {"M": {"b": {"M": {"c": {"N": "2"}}}}}}`,
			`{"m": {"M": {"b": {"M": {"c": {"S": "x"}}}, "new": {"N": "1"}}}}`},
		{"set in list of maps", "SET l[0].k = :s", nil, `{"l": {"L": [{"M": {}}]}}`, `{"l": {"L": [{"M": {"k": {"S": "x"}}}]}}`},
		{"names", "SET #a.#b = :s REMOVE #c", names("#a", "m", "#b", "dotted.key", "#c", "gone"),
			`{"m": {"M": {}}, "gone": {"N": "1"}}`, `{"m": {"M": {"dotted.key": {"S": "x"}}}}`},
		{"remove", "REMOVE s, n", nil, `{"s": {"S": "old"}, "n": {"N": "1"}, "k": {"N": "1"}}`, `{"k": {"N": "1"}}`},
		{"remove missing", "REMOVE nope, m.nope, l[9]", nil, `{"m": {"M": {}}, "l": {"L": []}}`, `{"m": {"M": {}}, "l": {"L": []}}`},
		{"remove nested", "REMOVE m.b.c", nil, `{"m": {"M": {"b": {"M": {"c": {"N": "2"}}}}}}`, `{"m": {"M": {"b": {"M": {}}}}}`},
		{"remove list elements by old positions", "REMOVE l[1], l[3]", nil, old,
			`{"pk": {"S": "k"}, "n": {"N": "10"}, "s": {"S": "old"}, "l": {"L": [{"S": "a"}, {"S": "c"}]},
			"m": {"M": {"a": {"N": "1"}, "b": {"M": {"c": {"N": "2"}}}}}, "tags": {"SS": ["a", "b"]}, "nums": {"NS": ["1", "2"]}}`},
		{"add number", "ADD n :one", nil, `{"n": {"N": "10"}}`, `{"n": {"N": "11"}}`},
		{"add number absent", "ADD n :neg", nil, `{}`, `{"n": {"N": "-2.5"}}`},
		{"add nested number", "ADD m.a :one", nil, `{"m": {"M": {"a": {"N": "1"}}}}`, `{"m": {"M": {"a": {"N": "2"}}}}`},
		{"add string set", "ADD tags :ss", nil, `{"tags": {"SS": ["a", "b"]}}`, `{"tags": {"SS": ["a", "b", "c"]}}`},
		{"add number set numerically", "ADD nums :ns", nil, `{"nums": {"NS": ["1", "2"]}}`, `{"nums": {"NS": ["1", "2", "5"]}}`},
		{"add set absent", "ADD bins :bs", nil, ``, `{"bins": {"BS": ["AQ=="]}}`},
		{"delete from set", "DELETE tags :ss", nil, `{"tags": {"SS": ["a", "b"]}}`, `{"tags": {"SS": ["b"]}}`},
		{"delete numbers numerically", "DELETE nums :ns", nil, `{"nums": {"NS": ["1", "2"]}}`, `{"nums": {"NS": ["2"]}}`},
		{"delete empties set removes it", "DELETE tags :ss", nil, `{"tags": {"SS": ["a"]}, "k": {"N": "1"}}`, `{"k": {"N": "1"}}`},
		{"delete absent", "DELETE tags :ss", nil, `{"k": {"N": "1"}}`, `{"k": {"N": "1"}}`},
		{"all clauses any order", "delete tags :ss add n :one remove s set m = :m", nil, old,
			`{"pk": {"S": "k"}, "n": {"N": "11"}, "l": {"L": [{"S": "a"}, {"S": "b"}, {"S": "c"}, {"S": "d"}]},
			"m": {"M": {"k": {"S": "v"}}}, "tags": {"SS": ["b"]}, "nums": {"NS": ["1", "2"]}}`},
		{"38 digits", "ADD n :big", nil, `{"n": {"N": "0"}}`, `{"n": {"N": "99999999999999999999999999999999999999"}}`},
		{"38 nines plus one", "ADD n :one", nil, `{"n": {"N": "99999999999999999999999999999999999999"}}`, `{"n": {"N": "100000000000000000000000000000000000000"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Context{Names: tt.names, Values: values(t, vals)}
			u, err := ParseUpdate(tt.expr, c)
			if err != nil {
				t.Fatal(err)
			}
			o := item(t, tt.old)
			before := text(t, o)
			got, err := u.Apply(o)
			if err != nil {
				t.Fatal(err)
			}
			if !same(t, got, tt.want) {
				t.Fatalf("Apply =\n %s\nwant\n %s", text(t, got), text(t, item(t, tt.want)))
			}
			if text(t, o) != before {
				t.Fatalf("Apply changed the old item: %s", text(t, o))
			}
		})
	}
}

func TestUpdateAddTenthTenTimes(t *testing.T) {
	u, err := ParseUpdate("ADD n :tenth", &Context{Values: values(t, `{":tenth": {"N": "0.1"}}`)})
	if err != nil {
		t.Fatal(err)
	}
	var it Item
	for range 10 {
		if it, err = u.Apply(it); err != nil {
			t.Fatal(err)
		}
	}
	if got := it["n"].Number(); got != "1" {
		t.Fatalf("0.1 added ten times = %s, want 1", got)
	}
}

func TestUpdateRuntimeErrors(t *testing.T) {
	vals := `{":one": {"N": "1"}, ":s": {"S": "x"}, ":l": {"L": []}, ":ss": {"SS": ["a"]}, ":ns": {"NS": ["1"]},
		":big": {"N": "9.9999999999999999999999999999999999999E+125"}, ":tiny": {"N": "1E-100"}, ":tenth": {"N": "0.1"}}`
	tests := []struct{ expr, old, want string }{
		{"SET a = b", `{}`, msgMissingOperand},
		{"SET a = b + :one", `{}`, msgMissingOperand},
		{"SET a = a + :one", `{"a": {"S": "x"}}`, msgIncorrectType},
		{"SET a = list_append(a, :l)", `{"a": {"S": "x"}}`, msgIncorrectType},
		{"ADD a :one", `{"a": {"S": "x"}}`, msgIncorrectType},
		{"ADD a :ss", `{"a": {"NS": ["1"]}}`, msgIncorrectType},
		{"ADD a :one", `{"a": {"SS": ["1"]}}`, msgIncorrectType},
		{"DELETE a :ss", `{"a": {"NS": ["1"]}}`, msgIncorrectType},
		{"SET a.b = :one", `{}`, msgInvalidPath},
		{"SET a.b = :one", `{"a": {"S": "x"}}`, msgInvalidPath},
		{"SET a[0] = :one", `{"a": {"M": {}}}`, msgInvalidPath},
		{"SET a[5].b = :one", `{"a": {"L": []}}`, msgInvalidPath},
		{"ADD a.b :one", `{}`, msgInvalidPath},
		// REMOVE and DELETE under a missing or mistyped parent (dynalite's
		// suite, recorded against AWS).
		{"REMOVE x.y", `{}`, msgInvalidPath},
		{"REMOVE a.b", `{"a": {"S": "x"}}`, msgInvalidPath},
		{"REMOVE a[1]", `{"a": {"M": {"1": {"S": "x"}}}}`, msgInvalidPath},
		{"REMOVE a.b", `{"a": {"L": [{"S": "x"}]}}`, msgInvalidPath},
		{"DELETE x.y :ss", `{}`, msgInvalidPath},
		{"DELETE a[1] :ss", `{"a": {"S": "x"}}`, msgInvalidPath},
		{"DELETE a.b :ss", `{"a": {"L": []}}`, msgInvalidPath},
		{"ADD a :big", `{"a": {"N": "9.9999999999999999999999999999999999999E+125"}}`, msgOverflow},
		{"ADD a :tiny", `{"a": {"N": "1"}}`, msgTooManyDigits},
		{"ADD a :tenth", `{"a": {"N": "99999999999999999999999999999999999999"}}`, msgTooManyDigits},
		{"SET a = a - :big", `{"a": {"N": "-9.9999999999999999999999999999999999999E+125"}}`, msgOverflow},
	}
	for _, tt := range tests {
		t.Run(tt.expr+" "+tt.old, func(t *testing.T) {
			u, err := ParseUpdate(tt.expr, &Context{Values: values(t, vals)})
			if err != nil {
				t.Fatal(err)
			}
			_, err = u.Apply(item(t, tt.old))
			wantValidation(t, err, tt.want)
		})
	}
}

func TestUpdateParseErrors(t *testing.T) {
	vals := `{":s": {"S": "a"}, ":n": {"N": "1"}, ":l": {"L": []}, ":m": {"M": {}}, ":b": {"B": "AQ=="}, ":null": {"NULL": true},
		":bool": {"BOOL": true}, ":ss": {"SS": ["a"]}}`
	const inv = "Invalid UpdateExpression: "
	tests := []struct {
		expr  string
		names map[string]string
		want  string
	}{
		{"", nil, inv + "The expression can not be empty;"},
		{"whatever", nil, inv + `Syntax error; token: "whatever", near: "whatever"`},
		{"set a", nil, inv + `Syntax error; token: "<EOF>", near: "a"`},
		{"set a = b * c", nil, inv + `Syntax error; token: "*", near: "b *"`},
		{"set a = b + c + d", nil, inv + `Syntax error; token: "+", near: "c +"`},
		{"set a[1] = 1", nil, inv + `Syntax error; token: "1", near: "= 1"`},
		{"set a=set", nil, inv + `Syntax error; token: "set", near: "=set"`},
		{"remove a, Delete", nil, inv + `Syntax error; token: "Delete", near: ", Delete"`},
		{"remove a = b", nil, inv + `Syntax error; token: "=", near: "a ="`},
		{"add a b", nil, inv + `Syntax error; token: "b", near: "a b"`},
		{"set :s = a", nil, inv + `Syntax error; token: ":s", near: "set :s"`},
		{"SET a = :s SET b = :s", nil, inv + `The "SET" section can only be used once in an update expression;`},
		{"remove a set b = :s REMOVE c", nil, inv + `The "REMOVE" section can only be used once in an update expression;`},
		{"add a :n delete b :ss add c :n", nil, inv + `The "ADD" section can only be used once in an update expression;`},
		{"delete a :ss delete b :ss", nil, inv + `The "DELETE" section can only be used once in an update expression;`},
		{"SET x = :s REMOVE x", nil, inv + "Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [x], path two: [x]"},
		{"SET a = :s, a.b = :s", nil, inv + "Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [a], path two: [a, b]"},
		{"set #c[3].#d = a, #c[3] = a", names("#c", "c", "#d", "[3]"), inv + "Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [c, [3], [3]], path two: [c, [3]]"},
		{"remove a.#c set a[1] = #d", names("#c", "c", "#d", "d"), inv + "Two document paths conflict with each other; must remove or rewrite one of these paths; path one: [a, c], path two: [a, [1]]"},
		{"ADD a :s", nil, inv + "Incorrect operand type for operator or function; operator: ADD, operand type: STRING, typeSet: ALLOWED_FOR_ADD_OPERAND"},
		{"ADD a :m", nil, inv + "Incorrect operand type for operator or function; operator: ADD, operand type: MAP, typeSet: ALLOWED_FOR_ADD_OPERAND"},
		{"ADD a :l", nil, inv + "Incorrect operand type for operator or function; operator: ADD, operand type: LIST, typeSet: ALLOWED_FOR_ADD_OPERAND"},
		{"ADD a :bool", nil, inv + "Incorrect operand type for operator or function; operator: ADD, operand type: BOOLEAN, typeSet: ALLOWED_FOR_ADD_OPERAND"},
		{"DELETE a :n", nil, inv + "Incorrect operand type for operator or function; operator: DELETE, operand type: NUMBER, typeSet: ALLOWED_FOR_DELETE_OPERAND"},
		{"DELETE a :null", nil, inv + "Incorrect operand type for operator or function; operator: DELETE, operand type: NULL, typeSet: ALLOWED_FOR_DELETE_OPERAND"},
		{"set a = list_append(:s, a)", nil, inv + "Incorrect operand type for operator or function; operator or function: list_append, operand type: S"},
		{"set a = a + :s", nil, inv + "Incorrect operand type for operator or function; operator or function: +, operand type: S"},
		{"set a = :b - a", nil, inv + "Incorrect operand type for operator or function; operator or function: -, operand type: B"},
		{"set a = if_not_exists(c)", nil, inv + "Incorrect number of operands for operator or function; operator or function: if_not_exists, number of operands: 1"},
		{"set a = list_append(c)", nil, inv + "Incorrect number of operands for operator or function; operator or function: list_append, number of operands: 1"},
		{"set a = if_not_exists(:s, c)", nil, inv + "Operator or function requires a document path; operator or function: if_not_exists"},
		{"set a = if_not_exist(a, :s)", nil, inv + "Invalid function name; function: if_not_exist"},
		{"set a = size(a)", nil, inv + "The function is not allowed in an update expression; function: size"},
		{"SET #c = :s", nil, inv + "An expression attribute name used in the document path is not defined; attribute name: #c"},
		{"SET a = if_not_exists(a, :c)", nil, inv + "An expression attribute value used in expression is not defined; attribute value: :c"},
		// Once the expression parses, DynamoDB reports its errors in this
		// order (dynalite's suite, recorded against AWS): function names,
		// repeated sections, undefined names, undefined values, overlap,
		// ADD's and DELETE's operand types, operand counts, other types.
		{"SET a = if_not_exist(a, 100)", nil, inv + `Syntax error; token: "100", near: ", 100"`},
		{"set #c = if_not_exist(:c) set c = d", nil, inv + "Invalid function name; function: if_not_exist"},
		{"set a = #c set c = :d", nil, inv + `The "SET" section can only be used once in an update expression;`},
		{"SET #c = if_not_exists(:c)", nil, inv + "An expression attribute name used in the document path is not defined; attribute name: #c"},
		{"SET #c = :c, a = if_not_exists(:c)", names("#c", "c"), inv + "An expression attribute value used in expression is not defined; attribute value: :c"},
		{"set d[1] = a, d.b = a, c[1].a = a, #c = if_not_exists(a)", names("#c", "c"), inv + "Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [c, [1], a], path two: [c]"},
		{"set b = list_append(:s, a), c = if_not_exists(a) add a.b :s", nil, inv + "Incorrect operand type for operator or function; operator: ADD, operand type: STRING, typeSet: ALLOWED_FOR_ADD_OPERAND"},
		{"set b = list_append(:s, a), c = if_not_exists(a)", nil, inv + "Incorrect number of operands for operator or function; operator or function: if_not_exists, number of operands: 1"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			_, err := ParseUpdate(tt.expr, &Context{Names: tt.names, Values: values(t, vals)})
			wantValidation(t, err, tt.want)
		})
	}
}

func TestUpdatePaths(t *testing.T) {
	u, err := ParseUpdate("SET a.b = :v, #n[0] = :v REMOVE c ADD a2 :v DELETE d :v", &Context{
		Names:  names("#n", "list"),
		Values: values(t, `{":v": {"NS": ["1"]}}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := u.Paths(), []string{"a", "list", "c", "a2", "d"}; !slices.Equal(got, want) {
		t.Fatalf("Paths = %v, want %v", got, want)
	}
}

// TestUpdateProjection: UPDATED_OLD and UPDATED_NEW are the written and
// removed paths of the item, nested ones in their structure and list
// elements compacted (dynalite's suite, recorded against AWS).
func TestUpdateProjection(t *testing.T) {
	vals := `{":a": {"N": "2"}, ":b": {"SS": ["a"]}}`
	u, err := ParseUpdate("set b.c=((c[1])+(b.a)),b.a = a,c[1] = a, c[4] = b.a - b.b, c[2] = b.c add c[8] :b, c[6] :a", &Context{Values: values(t, vals)})
	if err != nil {
		t.Fatal(err)
	}
	old := item(t, `{"a": {"S": "k"}, "b": {"M": {"a": {"N": "1"}, "b": {"N": "2"}, "c": {"N": "3"}}}, "c": {"L": [{"N": "1"}, {"N": "3"}]}}`)
	nw, err := u.Apply(old)
	if err != nil {
		t.Fatal(err)
	}
	wantItem(t, nw, `{"a": {"S": "k"}, "b": {"M": {"a": {"S": "k"}, "b": {"N": "2"}, "c": {"N": "4"}}},
		"c": {"L": [{"N": "1"}, {"S": "k"}, {"N": "3"}, {"N": "-1"}, {"N": "2"}, {"SS": ["a"]}]}}`)
	wantItem(t, u.Projection().Apply(nw), `{"b": {"M": {"a": {"S": "k"}, "c": {"N": "4"}}}, "c": {"L": [{"S": "k"}, {"N": "3"}, {"N": "2"}]}}`)
	wantItem(t, u.Projection().Apply(old), `{"b": {"M": {"a": {"N": "1"}, "c": {"N": "3"}}}, "c": {"L": [{"N": "3"}]}}`)
}

func wantItem(t *testing.T, got Item, want string) {
	t.Helper()
	if !same(t, got, want) {
		t.Fatalf("got\n %s\nwant\n %s", text(t, got), text(t, item(t, want)))
	}
}
