package table_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/table"
	"github.com/runnel-dev/runnel/table/expr"
)

// TestReturnValuesOutsideTheirEnumAreRefused: PutItem and DeleteItem take
// ReturnValues NONE or ALL_OLD, UpdateItem also UPDATED_OLD, ALL_NEW and
// UPDATED_NEW, and every write takes ReturnValuesOnConditionCheckFailure
// NONE or ALL_OLD; any other value is a ValidationException naming the
// field (API_PutItem, API_UpdateItem, API_DeleteItem), and nothing is
// written. Each allowed value is accepted.
func TestReturnValuesOutsideTheirEnumAreRefused(t *testing.T) {
	tb := testenv.Start(t, testenv.Options{}).Tables
	createTable(t, tb, "rv_table", "", "")
	key := table.Item{"pk": S("k")}
	put := func(rv, rvoccf string) error {
		_, err := tb.PutItem(ctx, table.PutItemInput{TableName: "rv_table", Item: table.Item{"pk": S("k")}, ReturnValues: rv, WriteExpr: table.WriteExpr{ReturnValuesOnConditionCheckFailure: rvoccf}})
		return err
	}
	update := func(rv, rvoccf string) error {
		_, err := tb.UpdateItem(ctx, table.UpdateItemInput{TableName: "rv_table", Key: key, UpdateExpression: "SET v = :v",
			WriteExpr: table.WriteExpr{
				ExpressionAttributeValues:           table.Item{":v": N("1")},
				ReturnValuesOnConditionCheckFailure: rvoccf,
			}, ReturnValues: rv})
		return err
	}
	del := func(rv, rvoccf string) error {
		_, err := tb.DeleteItem(ctx, table.DeleteItemInput{TableName: "rv_table", Key: key, ReturnValues: rv, WriteExpr: table.WriteExpr{ReturnValuesOnConditionCheckFailure: rvoccf}})
		return err
	}
	writes := map[string]func(rv, rvoccf string) error{"PutItem": put, "UpdateItem": update, "DeleteItem": del}
	for name, w := range writes {
		for _, bad := range []string{"ALL_NEW_", "all_old", "UPDATED_NEW"} {
			if name == "UpdateItem" && bad == "UPDATED_NEW" {
				continue
			}
			wantError(t, w(bad, ""), awserr.ErrValidation, "Value '"+bad+"' at 'returnValues' failed to satisfy constraint")
		}
		for _, bad := range []string{"ALL_NEW", "none"} {
			wantError(t, w("", bad), awserr.ErrValidation, "Value '"+bad+"' at 'returnValuesOnConditionCheckFailure' failed to satisfy constraint")
		}
	}
	if n := len(changes(t, tb, "rv_table")); n != 0 {
		t.Fatalf("refused writes wrote %d changes", n)
	}
	for _, rv := range []string{"", "NONE", "ALL_OLD"} {
		for _, rvoccf := range []string{"", "NONE", "ALL_OLD"} {
			for name, w := range writes {
				if err := w(rv, rvoccf); err != nil {
					t.Fatalf("%s with ReturnValues %q, ReturnValuesOnConditionCheckFailure %q: %v", name, rv, rvoccf, err)
				}
			}
		}
	}
	for _, rv := range []string{"UPDATED_OLD", "ALL_NEW", "UPDATED_NEW"} {
		if err := update(rv, ""); err != nil {
			t.Fatalf("UpdateItem with ReturnValues %s: %v", rv, err)
		}
	}
}

// TestItemsUpTo400KBAndNoLarger: a PutItem of an item larger than 400 KB
// (attribute names and values, as DynamoDB counts), or an UpdateItem
// whose result would be, is a ValidationException ("Item size has
// exceeded the maximum allowed size") and leaves the item as it was; an
// item of exactly 400 KB is stored, by either.
func TestItemsUpTo400KBAndNoLarger(t *testing.T) {
	tb := testenv.Start(t, testenv.Options{}).Tables
	createTable(t, tb, "sized", "", "")
	key := table.Item{"pk": S("k")}
	// pk + "k" + v + the value: the value that makes the item exactly 400 KB.
	fill := strings.Repeat("x", table.MaxItemSize-len("pk")-len("k")-len("v"))
	set := func(v string) error {
		_, err := tb.UpdateItem(ctx, table.UpdateItemInput{TableName: "sized", Key: key, UpdateExpression: "SET v = :v",
			WriteExpr: table.WriteExpr{ExpressionAttributeValues: table.Item{":v": S(v)}}})
		return err
	}
	putV := func(v string) error {
		_, err := tb.PutItem(ctx, table.PutItemInput{TableName: "sized", Item: table.Item{"pk": S("k"), "v": S(v)}})
		return err
	}
	wantError(t, putV(fill+"x"), awserr.ErrValidation, "Item size has exceeded the maximum allowed size")
	if err := putV(fill); err != nil {
		t.Fatalf("PutItem of exactly 400 KB: %v", err)
	}
	if err := set("small"); err != nil {
		t.Fatal(err)
	}
	wantError(t, set(fill+"x"), awserr.ErrValidation, "Item size to update has exceeded the maximum allowed size")
	if it := get(t, tb, "sized", key); it["v"].String() != "small" {
		t.Fatalf("a refused update changed the item: v has %d bytes", len(it["v"].String()))
	}
	if err := set(fill); err != nil {
		t.Fatalf("an item of exactly 400 KB: %v", err)
	}
	if it := get(t, tb, "sized", key); expr.ItemSize(it) != table.MaxItemSize {
		t.Fatalf("stored item of %d bytes, want %d", expr.ItemSize(it), table.MaxItemSize)
	}
}

// TestConditionFailureReturnsTheItemOnlyWhenAsked: a write whose
// condition fails returns the item as it was in
// ConditionalCheckFailedException when ReturnValuesOnConditionCheckFailure
// is ALL_OLD, and no item with NONE or without it — for UpdateItem as for
// PutItem and DeleteItem.
func TestConditionFailureReturnsTheItemOnlyWhenAsked(t *testing.T) {
	tb := testenv.Start(t, testenv.Options{}).Tables
	createTable(t, tb, "ccf", "", "")
	key := table.Item{"pk": S("k")}
	if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "ccf", Item: table.Item{"pk": S("k"), "v": N("1")}}); err != nil {
		t.Fatal(err)
	}
	const never = "attribute_not_exists(pk)"
	writes := map[string]func(rvoccf string) error{
		"PutItem": func(rvoccf string) error {
			_, err := tb.PutItem(ctx, table.PutItemInput{TableName: "ccf", Item: table.Item{"pk": S("k")}, WriteExpr: table.WriteExpr{ConditionExpression: never, ReturnValuesOnConditionCheckFailure: rvoccf}})
			return err
		},
		"UpdateItem": func(rvoccf string) error {
			_, err := tb.UpdateItem(ctx, table.UpdateItemInput{TableName: "ccf", Key: key, UpdateExpression: "SET v = :v", WriteExpr: table.WriteExpr{
				ConditionExpression:                 never,
				ExpressionAttributeValues:           table.Item{":v": N("2")},
				ReturnValuesOnConditionCheckFailure: rvoccf,
			},
			})
			return err
		},
		"DeleteItem": func(rvoccf string) error {
			_, err := tb.DeleteItem(ctx, table.DeleteItemInput{TableName: "ccf", Key: key, WriteExpr: table.WriteExpr{ConditionExpression: never, ReturnValuesOnConditionCheckFailure: rvoccf}})
			return err
		},
	}
	for name, w := range writes {
		for _, rvoccf := range []string{"", "NONE", "ALL_OLD"} {
			var ccf *table.ConditionalCheckFailedError
			if err := w(rvoccf); !errors.As(err, &ccf) {
				t.Fatalf("%s: %v, want ConditionalCheckFailedException", name, err)
			}
			if got, want := ccf.Item != nil, rvoccf == "ALL_OLD"; got != want || (want && ccf.Item["v"].Number() != "1") {
				t.Fatalf("%s with %q: item %v, want it returned: %v", name, rvoccf, ccf.Item, want)
			}
		}
	}
}

// TestUpdatedValuesAreTheUpdatedPaths: UPDATED_OLD and UPDATED_NEW return
// the paths the update wrote, nested ones in their structure, not the
// whole top-level attributes (dynalite's suite, recorded against AWS).
func TestUpdatedValuesAreTheUpdatedPaths(t *testing.T) {
	tb := testenv.Start(t, testenv.Options{}).Tables
	createTable(t, tb, "upd_paths", "", "")
	key := table.Item{"pk": S("k")}
	m := func(kv ...string) events.DynamoDBAttributeValue {
		out := map[string]events.DynamoDBAttributeValue{}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = N(kv[i+1])
		}
		return events.NewMapAttribute(out)
	}
	if _, err := tb.UpdateItem(ctx, table.UpdateItemInput{TableName: "upd_paths", Key: key, UpdateExpression: "SET b = :b",
		WriteExpr: table.WriteExpr{ExpressionAttributeValues: table.Item{":b": m("a", "1", "b", "2")}}}); err != nil {
		t.Fatal(err)
	}
	for rv, want := range map[string]events.DynamoDBAttributeValue{"UPDATED_OLD": m("a", "1"), "UPDATED_NEW": m("a", "5")} {
		out, err := tb.UpdateItem(ctx, table.UpdateItemInput{TableName: "upd_paths", Key: key, UpdateExpression: "SET b.a = :a",
			WriteExpr: table.WriteExpr{ExpressionAttributeValues: table.Item{":a": N("5")}}, ReturnValues: rv})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Attributes) != 1 || !reflect.DeepEqual(out.Attributes["b"], want) {
			t.Fatalf("%s = %v, want {b: %v}", rv, out.Attributes, want)
		}
		if _, err := tb.UpdateItem(ctx, table.UpdateItemInput{TableName: "upd_paths", Key: key, UpdateExpression: "SET b.a = :a",
			WriteExpr: table.WriteExpr{ExpressionAttributeValues: table.Item{":a": N("1")}}}); err != nil {
			t.Fatal(err)
		}
	}
}
