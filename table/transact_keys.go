package table

import (
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// How DynamoDB answers a transaction action whose table key is wrong
// (paritysuite/dynamodb-conformance, tests/tier3/error-messages/
// transactWriteItems.test.ts and transactGetItems.test.ts, captured
// against AWS):
//   - a key value of the wrong type (a Put's item: "Type mismatch for key
//     pk expected: S actual: N"; an Update's, Delete's, ConditionCheck's or
//     Get's Key, or a Key missing a key attribute or with others: "The
//     provided key element does not match the schema") cancels the
//     transaction: TransactionCanceledException, that action's reason
//     ValidationError with that message, the others None;
//   - an empty string or binary key value is a ValidationException of the
//     whole request: "One or more parameter values are not valid. The
//     AttributeValue for a key attribute cannot contain an empty string
//     value. Key: pk" (binary: "empty binary value").
//
// Either is reported after the request's other validation errors (an
// expression that does not parse, a missing table, two actions on one
// item), which the action's other checks find: they run on a stand-in
// whose key is of the schema's types.

// txKeyCheck is checkTxKey's answer.
type txKeyCheck struct {
	// use is what the action is built with: its own item or Key, or the
	// stand-in when reason or err is set.
	use Item
	// reason: the key is of the wrong type; the transaction is cancelled
	// with this ValidationError message at the action's index.
	reason string
	// err: an empty key value, a ValidationException of the request.
	err error
}

// msgKeySchema is DynamoDB's words for a Key that does not match the
// table's key schema.
const msgKeySchema = "The provided key element does not match the schema"

// checkTxKey checks a transaction action's key: a Put's item (exact
// false) or a Key (exact true, the key attributes and nothing else).
// Other mistakes (a missing attribute in a Put's item, a key over its
// size limit, a malformed number) are left to the action's own checks.
func checkTxKey(t *Table, item Item, exact bool) txKeyCheck {
	_, err := t.schema.keyOfItem(item, exact)
	if err == nil {
		return txKeyCheck{use: item}
	}
	msg := errMessage(err)
	switch {
	case strings.HasPrefix(msg, keyNotValid):
		return txKeyCheck{use: t.schema.standIn(item, exact), err: err}
	case strings.HasPrefix(msg, "One or more parameter values were invalid: Type mismatch for key "):
		if exact {
			msg = msgKeySchema
		}
		return txKeyCheck{use: t.schema.standIn(item, exact), reason: msg}
	case exact && msg == msgKeySchema:
		return txKeyCheck{use: t.schema.standIn(item, exact), reason: msg}
	}
	return txKeyCheck{use: item}
}

// standIn is item with its key attributes replaced by values of the
// schema's types (exact: the key alone), so that an action whose key is
// wrong is checked for its other mistakes all the same.
func (sc schema) standIn(item Item, exact bool) Item {
	out := Item{}
	if !exact {
		out = copyItem(item)
	}
	out[sc.hash] = standInValue(sc.hashType)
	if sc.rng != "" {
		out[sc.rng] = standInValue(sc.rngType)
	}
	return out
}

func standInValue(typ string) events.DynamoDBAttributeValue {
	switch typ {
	case TypeN:
		return events.NewNumberAttribute("0")
	case TypeB:
		return events.NewBinaryAttribute([]byte{0})
	}
	return events.NewStringAttribute("0")
}

// emptyIndexKey refuses an item whose value for a secondary index's key
// attribute is an empty string or binary, as DynamoDB refuses a
// TransactWriteItems Put's before the transaction runs
// (ValidationException "One or more parameter values are not valid. A
// value specified for a secondary index key is not supported. The
// AttributeValue for a key attribute cannot contain an empty string
// value. IndexName: gsi, IndexKey: uid"; paritysuite/dynamodb-conformance
// PR #46, moto #5830 and #5873). A value of another type than the index
// key's is not looked at here: it cancels the transaction (op.prepare's
// checkIndexKeys).
func emptyIndexKey(t *Table, it Item) error {
	for _, x := range t.indexes() {
		for _, a := range [][2]string{{x.sc.hash, x.sc.hashType}, {x.sc.rng, x.sc.rngType}} {
			v, ok := it[a[0]]
			if a[0] == "" || !ok || dataTypeName(v) != a[1] {
				continue
			}
			if (a[1] == TypeS && v.String() == "") || (a[1] == TypeB && len(v.Binary()) == 0) {
				return t.checkIndexKeys(Item{a[0]: v})
			}
		}
	}
	return nil
}
