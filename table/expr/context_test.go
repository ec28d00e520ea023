package expr

import (
	"fmt"
	"strings"
	"testing"
)

func TestContextUnused(t *testing.T) {
	vals := `{":a": {"S": "a"}, ":b": {"S": "b"}, ":c": {"S": "c"}}`
	tests := []struct {
		name  string
		names map[string]string
		exprs func(c *Context) error
		want  string // "" = no error
	}{
		{"all used across expressions", names("#a", "a", "#p", "p"), func(c *Context) error {
			if _, err := ParseCondition("#a = :a", c); err != nil {
				return err
			}
			if _, err := ParseUpdate("SET b = :b, c = :c", c); err != nil {
				return err
			}
			_, err := ParseProjection("#p", c)
			return err
		}, ""},
		{"unused values", nil, func(c *Context) error {
			_, err := ParseUpdate("REMOVE x", c)
			return err
		}, "Value provided in ExpressionAttributeValues unused in expressions: keys: {:a, :b, :c}"},
		{"unused names first", names("#a", "a", "#b", "b"), func(c *Context) error {
			_, err := ParseCondition("#a = :a AND x = :b AND y = :c", c)
			return err
		}, "Value provided in ExpressionAttributeNames unused in expressions: keys: {#b}"},
		{"each value used once", nil, func(c *Context) error {
			_, err := ParseCondition("x = :a AND y = :b AND z = :c", c)
			return err
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Context{Names: tt.names, Values: values(t, vals)}
			if err := tt.exprs(c); err != nil {
				t.Fatal(err)
			}
			err := c.CheckUnused()
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantValidation(t, err, tt.want)
		})
	}
	if err := (*Context)(nil).CheckUnused(); err != nil {
		t.Fatal(err)
	}
}

func TestContextValidate(t *testing.T) {
	tests := []struct {
		names map[string]string
		vals  string
		want  string
	}{
		{names("#a", "a"), `{":a": {"N": "1"}}`, ""},
		{map[string]string{}, "", "ExpressionAttributeNames must not be empty"},
		{nil, `{}`, "ExpressionAttributeValues must not be empty"},
		{names("a", "a"), "", `ExpressionAttributeNames contains invalid key: Syntax error; key: "a"`},
		{nil, `{"b": {"S": "a"}}`, `ExpressionAttributeValues contains invalid key: Syntax error; key: "b"`},
		{nil, `{":b": {"N": "b"}}`, "ExpressionAttributeValues contains invalid value: The parameter cannot be converted to a numeric value: b for key :b"},
		{nil, `{":b": {"NS": ["1", "1e200"]}}`, "ExpressionAttributeValues contains invalid value: " + msgOverflow + " for key :b"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			err := (&Context{Names: tt.names, Values: values(t, tt.vals)}).Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantValidation(t, err, tt.want)
		})
	}
}

// TestContextUnusedAmongMany: past the short list of used placeholders
// (usedListMax) the set still knows every one used, and still names the
// one that was not, with names repeated across expressions.
func TestContextUnusedAmongMany(t *testing.T) {
	const n = 3*usedListMax + 5
	nm := map[string]string{}
	var cond, upd []string
	for i := range n {
		ph := fmt.Sprintf("#n%02d", i)
		nm[ph] = fmt.Sprintf("a%02d", i)
		if i == 2*usedListMax+1 {
			continue // the one left unused
		}
		cond = append(cond, fmt.Sprintf("attribute_exists(%s)", ph))
		upd = append(upd, fmt.Sprintf("%s = :v", ph))
	}
	c := &Context{Names: nm, Values: values(t, `{":v": {"S": "v"}}`)}
	if _, err := ParseCondition(strings.Join(cond, " AND "), c); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseUpdate("SET "+strings.Join(upd, ", "), c); err != nil {
		t.Fatal(err)
	}
	wantValidation(t, c.CheckUnused(), fmt.Sprintf("Value provided in ExpressionAttributeNames unused in expressions: keys: {#n%02d}", 2*usedListMax+1))
}
