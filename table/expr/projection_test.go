package expr

import (
	"slices"
	"testing"
)

func TestProjection(t *testing.T) {
	tests := []struct {
		expr  string
		names map[string]string
		want  string
	}{
		{"pk", nil, `{"pk": {"S": "user#1"}}`},
		{"pk, age, missing", nil, `{"pk": {"S": "user#1"}, "age": {"N": "36"}}`},
		{"#n, #a", names("#n", "name", "#a", "age"), `{"name": {"S": "Ada Lovelace"}, "age": {"N": "36"}}`},
		{"map.inner.v", nil, `{"map": {"M": {"inner": {"M": {"v": {"N": "7"}}}}}}`},
		{"map.s, map.inner.v", nil, `{"map": {"M": {"s": {"S": "hello"}, "inner": {"M": {"v": {"N": "7"}}}}}}`},
		{"map.#d", names("#d", "dotted.key"), `{"map": {"M": {"dotted.key": {"S": "d"}}}}`},
		{"map.nope", nil, `{}`},
		{"list[2].x, list[0]", nil, `{"list": {"L": [{"S": "a"}, {"M": {"x": {"S": "deep"}}}]}}`},
		{"list[1]", nil, `{"list": {"L": [{"N": "2"}]}}`},
		{"list[7]", nil, `{}`},
		{"name[0], age.x", nil, `{}`}, // wrong types: nothing
		{"tags", nil, `{"tags": {"SS": ["red", "blue"]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			p, err := ParseProjection(tt.expr, &Context{Names: tt.names})
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Apply(item(t, sample)); !same(t, got, tt.want) {
				t.Fatalf("Apply = %s, want %s", text(t, got), text(t, item(t, tt.want)))
			}
		})
	}
	p, _ := ParseProjection("b, a.x, b2", nil)
	if got := p.Names(); !slices.Equal(got, []string{"b", "a", "b2"}) {
		t.Fatalf("Names = %v", got)
	}
	if p.Apply(nil) != nil {
		t.Fatal("Apply(nil) != nil")
	}
}

func TestProjectionErrors(t *testing.T) {
	const inv = "Invalid ProjectionExpression: "
	tests := []struct{ expr, want string }{
		{"", inv + "The expression can not be empty;"},
		{"a,", inv + `Syntax error; token: "<EOF>", near: ","`},
		{"a b", inv + `Syntax error; token: "b", near: "a b"`},
		{"a, :v", inv + `Syntax error; token: ":v", near: ", :v"`},
		{"#x", inv + "An expression attribute name used in the document path is not defined; attribute name: #x"},
		{"a, a", inv + "Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [a], path two: [a]"},
		{"a.b, a", inv + "Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [a, b], path two: [a]"},
		{"b[1], b.a, a.b, a", inv + "Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [a, b], path two: [a]"}, // overlaps before conflicts
		{"a.b, a[1]", inv + "Two document paths conflict with each other; must remove or rewrite one of these paths; path one: [a, b], path two: [a, [1]]"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			_, err := ParseProjection(tt.expr, nil)
			wantValidation(t, err, tt.want)
		})
	}
}
