package awsapi

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/table"
	"github.com/runnel-dev/runnel/table/expr"
)

// TestItemSizeBoundIsNeverBelowTheExactCount: itemSize lets an item
// through without counting it exactly when sizeBound is within 400 KB, so
// the bound must never be below expr.ItemSize, for every type, nested
// lists and maps, sets, numbers DynamoDB counts by their digits, and
// strings with multi-byte and invalid UTF-8.
func TestItemSizeBoundIsNeverBelowTheExactCount(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	numbers := []string{"0", "-0", "0.000", "1", "-1", "100000", "1E+125", "-1e-130", "12345678901234567890123456789012345678",
		"0.00000000000000000000000000000000000001", "3.14", "1e0", "not a number", ""}
	strs := []string{"", "a", "é", "日本語", "\xff\xfe", "\\u", strings.Repeat("x", 40)}
	name := func(s string) string { // a JSON string; invalid UTF-8 stays invalid
		b, _ := json.Marshal(s)
		return strings.ReplaceAll(string(b), `\ufffd`, "\xff")
	}
	var value func(depth int) string
	value = func(depth int) string {
		switch k := rng.IntN(10); {
		case k == 0 && depth < 3:
			parts := make([]string, rng.IntN(4))
			for i := range parts {
				parts[i] = value(depth + 1)
			}
			return `{"L":[` + strings.Join(parts, ",") + `]}`
		case k == 1 && depth < 3:
			parts := make([]string, rng.IntN(4))
			for i := range parts {
				parts[i] = name(fmt.Sprint("k", i, strs[rng.IntN(len(strs))])) + ":" + value(depth+1)
			}
			return `{"M":{` + strings.Join(parts, ",") + `}}`
		case k == 2:
			return `{"N":` + fmt.Sprintf("%q", numbers[rng.IntN(len(numbers))]) + `}`
		case k == 3:
			return `{"NS":["` + numbers[rng.IntN(4)] + `","` + numbers[4+rng.IntN(6)] + `"]}`
		case k == 4:
			return `{"B":"` + base64.StdEncoding.EncodeToString([]byte(strs[rng.IntN(len(strs))])) + `"}`
		case k == 5:
			return `{"BS":["` + base64.StdEncoding.EncodeToString([]byte("ab")) + `","` + base64.StdEncoding.EncodeToString([]byte("日本")) + `"]}`
		case k == 6:
			return `{"SS":["a",` + name(strs[rng.IntN(len(strs))]+"x") + `]}`
		case k == 7:
			return `{"BOOL":true}`
		case k == 8:
			return `{"NULL":true}`
		}
		return `{"S":` + name(strs[rng.IntN(len(strs))]) + `}`
	}
	checked := 0
	for range 5000 {
		parts := make([]string, 1+rng.IntN(5))
		for i := range parts {
			parts[i] = name(fmt.Sprint("a", i, strs[rng.IntN(len(strs))])) + ":" + value(0)
		}
		body := "{" + strings.Join(parts, ",") + "}"
		var generic any
		d := json.NewDecoder(strings.NewReader(body))
		d.UseNumber()
		if err := d.Decode(&generic); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		var it table.Item
		if json.Unmarshal([]byte(body), &it) != nil {
			continue // the table's decoding refuses it: itemSize never counts it
		}
		if bound, exact := sizeBound(generic), expr.ItemSize(it); bound < exact {
			t.Fatalf("sizeBound %d < expr.ItemSize %d for %s", bound, exact, body)
		}
		checked++
	}
	if checked < 1000 {
		t.Fatalf("only %d of 5000 items decoded as table items", checked)
	}
}

// TestItemSizeCountsExactlyWhenTheBoundIsOver: an item whose bound passes
// 400 KB but whose exact size does not (numbers DynamoDB counts by half
// their digits) is accepted; one whose exact size passes it is refused.
func TestItemSizeCountsExactlyWhenTheBoundIsOver(t *testing.T) {
	item := func(numbers int, s int) any {
		m := map[string]any{"s": map[string]any{"S": strings.Repeat("a", s)}}
		ns := make([]any, numbers)
		for i := range ns {
			ns[i] = fmt.Sprint(i + 1)
		}
		m["ns"] = map[string]any{"NS": ns}
		return m
	}
	under := item(10_000, table.MaxItemSize-60_000) // numbers counted 2–4 bytes each, bounded at 22–26
	if sizeBound(under) <= table.MaxItemSize {
		t.Fatalf("sizeBound %d: the item must be over the bound for this test", sizeBound(under))
	}
	if err := itemSize(under); err != nil {
		t.Fatalf("an item under 400 KB, counted exactly: %v", err)
	}
	if err := itemSize(item(10_000, table.MaxItemSize)); err == nil || !strings.Contains(err.Error(), "Item size has exceeded") {
		t.Fatalf("an item over 400 KB: %v", err)
	}
}
