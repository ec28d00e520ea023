package expr

import (
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

const (
	hotUpdate    = "SET #value = :value, #version = :version, #status = :status, #updated = :updated"
	hotCondition = "attribute_not_exists(TradeID) OR #version < :version"
)

var hotNames = map[string]string{"#value": "Value", "#version": "Version", "#status": "Status", "#updated": "UpdatedAt"}

func hotValues(version int) map[string]events.DynamoDBAttributeValue {
	return map[string]events.DynamoDBAttributeValue{
		":value":   events.NewNumberAttribute(strconv.Itoa(version * 10)),
		":version": events.NewNumberAttribute(strconv.Itoa(version)),
		":status":  events.NewStringAttribute("OPEN"),
		":updated": events.NewStringAttribute("2024-01-01T00:00:0" + strconv.Itoa(version%10) + "Z"),
	}
}

// withoutCache runs f with the cache turned off.
func withoutCache(f func()) {
	cacheDisabled.Store(true)
	defer cacheDisabled.Store(false)
	f()
}

func TestCacheTwoValueSets(t *testing.T) {
	resetCache()
	stored := item(t, `{"TradeID": {"S": "t1"}, "Version": {"N": "5"}, "Value": {"N": "1"}}`)

	// Version 7 > 5: the condition holds and the update writes 70 and 7.
	c1 := &Context{Names: hotNames, Values: hotValues(7)}
	cond1, err := ParseCondition(hotCondition, c1)
	if err != nil {
		t.Fatal(err)
	}
	upd1, err := ParseUpdate(hotUpdate, c1)
	if err != nil {
		t.Fatal(err)
	}
	if err := c1.CheckUnused(); err != nil {
		t.Fatal(err)
	}
	// Version 3 < 5: the condition fails; the update writes 30 and 3.
	c2 := &Context{Names: hotNames, Values: hotValues(3)}
	cond2, err := ParseCondition(hotCondition, c2)
	if err != nil {
		t.Fatal(err)
	}
	upd2, err := ParseUpdate(hotUpdate, c2)
	if err != nil {
		t.Fatal(err)
	}
	if err := c2.CheckUnused(); err != nil {
		t.Fatal(err)
	}
	if upd1.updateTree != upd2.updateTree {
		t.Fatal("second ParseUpdate did not use the cached tree")
	}
	cacheMu.RLock()
	n := len(cacheMap[cacheKey{kind: kindCondition, text: hotCondition}])
	cacheMu.RUnlock()
	if n != 1 {
		t.Fatalf("condition cache variants = %d, want 1", n)
	}

	if ok, _ := cond1.Eval(stored); !ok {
		t.Error("condition with version 7 = false, want true")
	}
	if ok, _ := cond2.Eval(stored); ok {
		t.Error("condition with version 3 = true, want false")
	}
	// Evaluating the first again still sees its own values.
	if ok, _ := cond1.Eval(stored); !ok {
		t.Error("condition with version 7 (again) = false, want true")
	}
	got1, err := upd1.Apply(stored)
	if err != nil {
		t.Fatal(err)
	}
	got2, err := upd2.Apply(stored)
	if err != nil {
		t.Fatal(err)
	}
	want1 := `{"TradeID": {"S": "t1"}, "Version": {"N": "7"}, "Value": {"N": "70"}, "Status": {"S": "OPEN"}, "UpdatedAt": {"S": "2024-01-01T00:00:07Z"}}`
	want2 := `{"TradeID": {"S": "t1"}, "Version": {"N": "3"}, "Value": {"N": "30"}, "Status": {"S": "OPEN"}, "UpdatedAt": {"S": "2024-01-01T00:00:03Z"}}`
	if !same(t, got1, want1) {
		t.Errorf("update 1 = %s", text(t, got1))
	}
	if !same(t, got2, want2) {
		t.Errorf("update 2 = %s", text(t, got2))
	}

	// Key conditions and projections too.
	for i, v := range []string{"a", "b"} {
		c := &Context{Names: names("#pk", "pk"), Values: values(t, `{":h": {"S": "`+v+`"}, ":lo": {"N": "`+strconv.Itoa(i)+`"}, ":hi": {"N": "9"}}`)}
		k, err := ParseKeyCondition("#pk = :h AND sk BETWEEN :lo AND :hi", c, "pk", "sk")
		if err != nil {
			t.Fatal(err)
		}
		if k.HashName != "pk" || k.HashValue.String() != v || k.RangeOp != "BETWEEN" || k.RangeValues[0].Number() != strconv.Itoa(i) || k.RangeValues[1].Number() != "9" {
			t.Errorf("key condition %d = %+v", i, k)
		}
		if err := c.CheckUnused(); err != nil {
			t.Error(err)
		}
	}
}

// TestCacheSameAsFullParse parses each expression with several contexts,
// first without the cache and then twice with it (a miss, then a hit), and
// wants the same result or error every time, and the same CheckUnused.
func TestCacheSameAsFullParse(t *testing.T) {
	resetCache()
	it := item(t, `{"a": {"N": "5"}, "s": {"S": "abc"}, "l": {"L": [{"N": "1"}]}, "m": {"M": {"x": {"N": "1"}}}, "ss": {"SS": ["a", "b"]}}`)
	type ctx struct {
		names map[string]string
		vals  string
	}
	ctxs := []ctx{
		{nil, `{":v": {"N": "3"}, ":w": {"N": "7"}, ":s": {"S": "ab"}, ":l": {"L": [{"N": "2"}]}, ":ss": {"SS": ["b"]}, ":t": {"S": "N"}}`},
		{nil, `{":v": {"N": "9"}, ":w": {"N": "1"}, ":s": {"S": "x"}, ":l": {"L": []}, ":ss": {"SS": ["z"]}, ":t": {"S": "S"}}`},
		{nil, `{":v": {"S": "3"}, ":w": {"BOOL": true}, ":s": {"N": "1"}, ":l": {"S": "x"}, ":ss": {"N": "1"}, ":t": {"S": "X"}}`},
		{nil, `{":v": {"M": {}}, ":w": {"NULL": true}, ":s": {"B": "AQ=="}, ":l": {"N": "1"}, ":ss": {"S": "a"}, ":t": {"N": "1"}}`},
		{nil, `{":v": {"N": "3"}}`},
		{nil, `{":w": {"N": "3"}, ":s": {"S": "ab"}}`},
		{nil, ""},
		{names("#a", "a", "#s", "s"), `{":v": {"N": "3"}, ":w": {"N": "7"}, ":s": {"S": "ab"}, ":l": {"L": [{"N": "2"}]}, ":ss": {"SS": ["b"]}, ":t": {"S": "N"}}`},
		{names("#a", "s", "#s", "a"), `{":v": {"N": "3"}, ":w": {"N": "7"}, ":s": {"S": "ab"}, ":l": {"L": [{"N": "2"}]}, ":ss": {"SS": ["b"]}, ":t": {"S": "N"}}`},
		{names("#a", "a"), `{":v": {"N": "3"}, ":w": {"N": "7"}}`},
		{names("#s", "s", "#x", "x"), `{":v": {"N": "3"}, ":s": {"S": "ab"}}`},
	}
	conds := []string{
		"a < :v", "#a < :v", "a BETWEEN :v AND :w", "#a BETWEEN :v AND :w", "a IN (:v, :w)", "size(:s) > :v",
		"begins_with(s, :s)", "begins_with(#s, :s) AND #a > :v", "contains(ss, :s)", "attribute_type(a, :t)",
		"attribute_type(#a, :t) OR NOT #s = :s", "a = b", "#a = #a", "size(l) = :v", "a <> :w",
	}
	updates := []string{
		"SET a = :v", "SET #a = :v + :w", "SET a = a - :v", "SET l = list_append(l, :l)", "SET l = list_append(:l, l)",
		"ADD a :v", "ADD ss :ss DELETE #s :ss", "DELETE ss :ss", "SET #a = if_not_exists(#a, :v), #s = :s REMOVE m.x",
		"REMOVE a, #s", "SET b = #a + :v",
	}
	keys := []string{"#a = :v", "a = :v AND s > :s", "#a = :v AND begins_with(#s, :s)", "a = :v AND s BETWEEN :s AND :w", "s = :s"}
	projs := []string{"a, #s", "#a, m.x", "l[0], #s"}

	type outcome struct{ res, err, unused string }
	run := func(kind, e string, cx ctx) outcome {
		c := &Context{Names: cx.names, Values: values(t, cx.vals)}
		var o outcome
		var err error
		switch kind {
		case "condition":
			var x *Condition
			if x, err = ParseCondition(e, c); err == nil {
				ok, _ := x.Eval(it)
				nok, _ := x.Eval(nil)
				o.res = fmt.Sprint(ok, nok)
			}
		case "update":
			var x *Update
			if x, err = ParseUpdate(e, c); err == nil {
				got, aerr := x.Apply(it)
				o.res = fmt.Sprint(text(t, got), aerr, x.Paths())
			}
		case "key":
			var x *KeyCondition
			if x, err = ParseKeyCondition(e, c, "a", "s"); err == nil {
				o.res = fmt.Sprintf("%+v", *x)
			}
		case "projection":
			var x *Projection
			if x, err = ParseProjection(e, c); err == nil {
				o.res = fmt.Sprint(text(t, x.Apply(it)), x.Names())
			}
		}
		if err != nil {
			o.err = err.Error()
		} else if err := c.CheckUnused(); err != nil {
			o.unused = err.Error()
		}
		return o
	}
	check := func(kind string, exprs []string) {
		for _, e := range exprs {
			for i, cx := range ctxs {
				var want outcome
				withoutCache(func() { want = run(kind, e, cx) })
				for pass := range 2 {
					if got := run(kind, e, cx); got != want {
						t.Errorf("%s %q ctx %d pass %d:\n got %+v\nwant %+v", kind, e, i, pass, got, want)
					}
				}
			}
		}
	}
	check("condition", conds)
	check("update", updates)
	check("key", keys)
	check("projection", projs)
}

func TestCacheErrorsOnHit(t *testing.T) {
	resetCache()
	good := map[string]events.DynamoDBAttributeValue{":v": events.NewNumberAttribute("1")}
	if _, err := ParseCondition("a < :v AND #b = :v", &Context{Names: names("#b", "b"), Values: good}); err != nil {
		t.Fatal(err)
	}
	_, err := ParseCondition("a < :v AND #b = :v", &Context{Names: names("#b", "b")})
	wantValidation(t, err, "Invalid ConditionExpression: An expression attribute value used in expression is not defined; attribute value: :v")
	_, err = ParseCondition("a < :v AND #b = :v", &Context{Values: good})
	wantValidation(t, err, "Invalid ConditionExpression: An expression attribute name used in the document path is not defined; attribute name: #b")
	_, err = ParseCondition("a < :v AND #b = :v", &Context{Names: names("#b", "b"), Values: map[string]events.DynamoDBAttributeValue{":v": events.NewBooleanAttribute(true)}})
	wantValidation(t, err, "Invalid ConditionExpression: Incorrect operand type for operator or function; operator or function: <, operand type: BOOL")

	if _, err := ParseUpdate("ADD a :v", &Context{Values: good}); err != nil {
		t.Fatal(err)
	}
	_, err = ParseUpdate("ADD a :v", &Context{Values: map[string]events.DynamoDBAttributeValue{":v": events.NewStringAttribute("x")}})
	wantValidation(t, err, "Invalid UpdateExpression: Incorrect operand type for operator or function; operator: ADD, operand type: STRING, typeSet: ALLOWED_FOR_ADD_OPERAND")

	// Unused names and values are still reported on a hit.
	c := &Context{Names: names("#b", "b", "#x", "x"), Values: map[string]events.DynamoDBAttributeValue{":v": events.NewNumberAttribute("1"), ":y": events.NewNumberAttribute("2")}}
	if _, err := ParseCondition("a < :v AND #b = :v", c); err != nil {
		t.Fatal(err)
	}
	wantValidation(t, c.CheckUnused(), "Value provided in ExpressionAttributeNames unused in expressions: keys: {#x}")
}

func TestCacheBounded(t *testing.T) {
	resetCache()
	for i := range maxCacheEntries + 10 {
		if _, err := ParseProjection("a"+strconv.Itoa(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	cacheMu.RLock()
	n, count := len(cacheMap), cacheCount
	cacheMu.RUnlock()
	if n > maxCacheEntries || count > maxCacheEntries {
		t.Fatalf("cache holds %d keys, %d entries; max %d", n, count, maxCacheEntries)
	}
	// Many name variants of one text stay bounded too.
	for i := range 3 * maxVariants {
		if _, err := ParseProjection("#n", &Context{Names: names("#n", "n"+strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	cacheMu.RLock()
	v := len(cacheMap[cacheKey{kind: kindProjection, text: "#n"}])
	cacheMu.RUnlock()
	if v > maxVariants {
		t.Fatalf("%d variants, max %d", v, maxVariants)
	}
}

// TestCacheConcurrent parses and evaluates the same expressions from many
// goroutines with different values (run with -race).
func TestCacheConcurrent(t *testing.T) {
	resetCache()
	stored := item(t, `{"TradeID": {"S": "t1"}, "Version": {"N": "50"}}`)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				version := (g*300 + i) % 100
				c := &Context{Names: hotNames, Values: hotValues(version)}
				cond, err := ParseCondition(hotCondition, c)
				if err != nil {
					errs <- err
					return
				}
				upd, err := ParseUpdate(hotUpdate, c)
				if err != nil {
					errs <- err
					return
				}
				if err := c.CheckUnused(); err != nil {
					errs <- err
					return
				}
				if ok, _ := cond.Eval(stored); ok != (50 < version) {
					errs <- fmt.Errorf("version %d: condition = %v", version, ok)
					return
				}
				got, err := upd.Apply(stored)
				if err != nil {
					errs <- err
					return
				}
				if got["Version"].Number() != strconv.Itoa(version) || got["Value"].Number() != strconv.Itoa(version*10) {
					errs <- fmt.Errorf("version %d: update gave %v", version, got)
					return
				}
				if i%50 == 0 {
					resetCache() // a concurrent clear must be harmless too
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func benchParse(b *testing.B, parse func(*Context) error) {
	vals := hotValues(7)
	run := func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := parse(&Context{Names: hotNames, Values: vals}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("uncached", func(b *testing.B) { withoutCache(func() { run(b) }) })
	b.Run("cached", run)
}

func BenchmarkParseUpdateCached(b *testing.B) {
	benchParse(b, func(c *Context) error { _, err := ParseUpdate(hotUpdate, c); return err })
}

func BenchmarkParseConditionCached(b *testing.B) {
	benchParse(b, func(c *Context) error { _, err := ParseCondition(hotCondition, c); return err })
}
