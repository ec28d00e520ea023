package table

import (
	"bytes"
	"slices"

	"github.com/aws/aws-lambda-go/events"
)

// The table's item cache and its ring of recent changes hold items that
// readers must never change: every item the package hands out (GetItem,
// Query, Scan, BatchGetItem, TransactGetItems, ReturnValues,
// ConditionalCheckFailedError.Item, a CancellationReason's Item, a stream
// record from EventRecord) is the caller's own copy, as a freshly decoded
// response or Lambda event is on AWS; and an item a caller writes is
// copied in, so changing the request afterwards changes nothing stored.
//
// cloneItem is that copy: the top-level map always, a nested value (M, L)
// or a slice (B, BS, NS, SS) only where one is present; strings, numbers,
// booleans and NULL are immutable and shared.
func cloneItem(it Item) Item {
	if it == nil {
		return nil
	}
	out := make(Item, len(it))
	for k, v := range it {
		out[k] = cloneValue(v)
	}
	return out
}

// cloneValue is cloneItem for one value.
func cloneValue(v events.DynamoDBAttributeValue) events.DynamoDBAttributeValue {
	switch v.DataType() {
	case events.DataTypeMap:
		return events.NewMapAttribute(cloneItem(v.Map()))
	case events.DataTypeList:
		l := v.List()
		if l == nil {
			return v
		}
		out := make([]events.DynamoDBAttributeValue, len(l))
		for i, e := range l {
			out[i] = cloneValue(e)
		}
		return events.NewListAttribute(out)
	case events.DataTypeBinary:
		return events.NewBinaryAttribute(bytes.Clone(v.Binary()))
	case events.DataTypeBinarySet:
		bs := v.BinarySet()
		if bs == nil {
			return v
		}
		out := make([][]byte, len(bs))
		for i, b := range bs {
			out[i] = bytes.Clone(b)
		}
		return events.NewBinarySetAttribute(out)
	case events.DataTypeNumberSet:
		return events.NewNumberSetAttribute(slices.Clone(v.NumberSet()))
	case events.DataTypeStringSet:
		return events.NewStringSetAttribute(slices.Clone(v.StringSet()))
	}
	return v
}

// cloneNested returns the values of it (ExpressionAttributeValues) as the
// caller's map itself when none is mutable (the common case: no copy),
// else a copy with the mutable ones cloned, so that an update that stores
// a value does not share it with the request.
func cloneNested(it Item) Item {
	for _, v := range it {
		switch v.DataType() {
		case events.DataTypeMap, events.DataTypeList, events.DataTypeBinary, events.DataTypeBinarySet, events.DataTypeNumberSet, events.DataTypeStringSet:
			return cloneItem(it)
		}
	}
	return it
}

// ownValues clones, in place, the values of out, a map the caller already
// owns (a projection's result) whose values may be shared.
func ownValues(out Item) Item {
	for k, v := range out {
		out[k] = cloneValue(v)
	}
	return out
}
