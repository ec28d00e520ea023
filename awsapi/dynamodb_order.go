package awsapi

// The order in which DynamoDB refuses a request, before any table is
// looked up, as DynamoDB answers (dynalite's tests, written against AWS):
//
//  1. the model's constraints (validate.go);
//  2. expression and legacy parameters mixed, and the placeholder maps
//     without an expression ("ExpressionAttributeValues can only be
//     specified when using expressions: ConditionExpression is null");
//  3. the attribute values (validate_dynamodb.go), but those of
//     ExpressionAttributeValues;
//  4. the placeholder maps themselves: empty, or a key over 255 bytes
//     (the Constraints page's limit, "ExpressionAttributeNames contains
//     invalid key: The expression attribute map contains a key that is too
//     long; size of key: 256") or without its "#" or ":";
//  5. the values of ExpressionAttributeValues ("ExpressionAttributeValues
//     contains invalid value: … for key :v");
//  6. the expressions, parsed (UpdateExpression, ConditionExpression,
//     FilterExpression, ProjectionExpression; an empty one is "Invalid
//     ConditionExpression: The expression can not be empty;"), and then
//     the placeholders none of them used. A Query's KeyConditionExpression
//     is parsed first, and its shape checked after the others are parsed
//     (expr.CheckKeyCondition); its keys need the table, so a Query's
//     unused placeholders are looked for after the lookup.

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/table"
	"github.com/runnel-dev/runnel/table/expr"
)

// dynamoParams are an operation's legacy and expression parameters, in
// the order DynamoDB lists them, and what its "ExpressionAttributeValues
// can only be specified" message says is null.
type dynamoParams struct {
	legacy, expression []string
	valuesNull         string
}

var dynamoParamsOf = map[string]dynamoParams{
	"GetItem":    {legacy: []string{"AttributesToGet"}, expression: []string{"ProjectionExpression"}},
	"PutItem":    {legacy: []string{"Expected", "ConditionalOperator"}, expression: []string{"ConditionExpression"}, valuesNull: "ConditionExpression is null"},
	"DeleteItem": {legacy: []string{"Expected", "ConditionalOperator"}, expression: []string{"ConditionExpression"}, valuesNull: "ConditionExpression is null"},
	"UpdateItem": {legacy: []string{"AttributeUpdates", "Expected", "ConditionalOperator"}, expression: []string{"UpdateExpression", "ConditionExpression"},
		valuesNull: "UpdateExpression and ConditionExpression are null"},
	"Query": {legacy: []string{"AttributesToGet", "QueryFilter", "ConditionalOperator", "KeyConditions"},
		expression: []string{"ProjectionExpression", "FilterExpression", "KeyConditionExpression"}, valuesNull: "FilterExpression and KeyConditionExpression are null"},
	"Scan": {legacy: []string{"AttributesToGet", "ScanFilter", "ConditionalOperator"},
		expression: []string{"ProjectionExpression", "FilterExpression"}, valuesNull: "FilterExpression is null"},
	"KeysAndAttributes": {legacy: []string{"AttributesToGet"}, expression: []string{"ProjectionExpression"}},
}

// valueRules are the first failures of step 3: of the attribute values
// but a Query's or Scan's ExclusiveStartKey (start) and a Query's
// KeyConditions (keyConds); queryChecks and scanChecks say when each is
// reported (dynalite's query and scan tests).
type valueRules struct{ other, start, keyConds error }

// dynamoRequestChecks runs steps 2 to 6 on a request whose model
// constraints hold; rules are the first failures of step 3, eavRule of
// step 5.
func dynamoRequestChecks(op string, v any, rules valueRules, eavRule error) error {
	obj, _ := v.(map[string]any)
	if op == "BatchGetItem" {
		items, _ := obj["RequestItems"].(map[string]any)
		for _, k := range sortedKeys(items) {
			if err := dynamoMixed("KeysAndAttributes", items[k]); err != nil {
				return err
			}
		}
	} else if err := dynamoMixed(op, obj); err != nil {
		return err
	}
	switch op {
	case "Query":
		return queryChecks(obj, rules, eavRule)
	case "Scan":
		return scanChecks(obj, rules, eavRule)
	}
	if rules.other != nil {
		return rules.other
	}
	if err := dynamoItemChecks(op, obj); err != nil {
		return err
	}
	if op == "TransactWriteItems" || op == "TransactGetItems" {
		return transactPlaceholderMaps(obj)
	}
	if op == "BatchGetItem" {
		items, _ := obj["RequestItems"].(map[string]any)
		for _, k := range sortedKeys(items) {
			if err := dynamoExpressions("KeysAndAttributes", items[k], nil); err != nil {
				return err
			}
		}
		for _, k := range sortedKeys(items) {
			if err := duplicateKeys(items[k]); err != nil {
				return err
			}
		}
		return nil
	}
	if err := dynamoExpressions(op, obj, eavRule); err != nil {
		return err
	}
	if rv, _ := obj["ReturnValues"].(string); (op == "PutItem" || op == "DeleteItem") && rv != "" && rv != "NONE" && rv != "ALL_OLD" {
		return awserr.New(awserr.ErrValidation, "ReturnValues can only be ALL_OLD or NONE")
	}
	return nil
}

// queryChecks are steps 3 to 6 of a Query, in DynamoDB's order: the
// QueryFilter's values and then its conditions' shape, AttributesToGet's
// duplicates, the ExclusiveStartKey's values, the expressions, the
// KeyConditions' values, their shape and their number.
func queryChecks(obj map[string]any, rules valueRules, eavRule error) error {
	if rules.other != nil {
		return rules.other
	}
	if err := legacyConditions(obj["QueryFilter"]); err != nil {
		return err
	}
	if err := attributesToGet(obj); err != nil {
		return err
	}
	if rules.start != nil {
		return rules.start
	}
	if err := dynamoExpressions("Query", obj, eavRule); err != nil {
		return err
	}
	if rules.keyConds != nil {
		return rules.keyConds
	}
	if err := legacyConditions(obj["KeyConditions"]); err != nil {
		return err
	}
	if kc, ok := obj["KeyConditions"].(map[string]any); ok && len(kc) != 1 && len(kc) != 2 {
		return awserr.New(awserr.ErrValidation, "Conditions can be of length 1 or 2 only")
	}
	return nil
}

// scanChecks are steps 3 to 6 of a Scan, in DynamoDB's order:
// AttributesToGet's duplicates, the ScanFilter's values and then its
// conditions' shape, the ExclusiveStartKey's values, Segment and
// TotalSegments, the expressions.
func scanChecks(obj map[string]any, rules valueRules, eavRule error) error {
	if err := attributesToGet(obj); err != nil {
		return err
	}
	if rules.other != nil {
		return rules.other
	}
	if err := legacyConditions(obj["ScanFilter"]); err != nil {
		return err
	}
	if rules.start != nil {
		return rules.start
	}
	if err := scanSegments(obj); err != nil {
		return err
	}
	return dynamoExpressions("Scan", obj, eavRule)
}

// legacyConditions checks the shape of a KeyConditions, QueryFilter or
// ScanFilter v (nil: none) whose values hold (table.CheckConditions).
func legacyConditions(v any) error {
	if v == nil {
		return nil
	}
	b, _ := json.Marshal(v)
	var conds map[string]table.LegacyCondition
	if json.Unmarshal(b, &conds) != nil {
		return nil // the decoding says what is wrong
	}
	return table.CheckConditions(conds)
}

// dynamoItemChecks are DynamoDB's checks of a request's items, keys and
// attribute names that need no table: an item over 400 KB, a name twice
// in AttributesToGet, a key twice in a BatchGetItem table's Keys, a
// BatchWriteItem request that is neither a put nor a delete.
func dynamoItemChecks(op string, obj map[string]any) error {
	switch op {
	case "CreateTable":
		return capacityBounds(obj["ProvisionedThroughput"], "")
	case "UpdateTable":
		return updateTableChecks(obj)
	case "PutItem":
		return itemSize(obj["Item"])
	case "GetItem":
		return attributesToGet(obj)
	case "BatchGetItem":
		items, _ := obj["RequestItems"].(map[string]any)
		for _, name := range sortedKeys(items) {
			ka, _ := items[name].(map[string]any)
			if err := attributesToGet(ka); err != nil {
				return err
			}
		}
	case "BatchWriteItem":
		items, _ := obj["RequestItems"].(map[string]any)
		for _, name := range sortedKeys(items) {
			reqs, _ := items[name].([]any)
			for _, r := range reqs {
				wr, _ := r.(map[string]any)
				put, _ := wr["PutRequest"].(map[string]any)
				if (put == nil) == (wr["DeleteRequest"] == nil) {
					return awserr.New(awserr.ErrValidation, "Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes")
				}
				if put != nil {
					if err := itemSize(put["Item"]); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// scanSegments refuses a Scan's Segment without TotalSegments (or the
// other way round), or a Segment not below TotalSegments, before the
// placeholder maps are looked at, as DynamoDB does.
func scanSegments(obj map[string]any) error {
	num := func(name string) *int {
		var n int
		switch x := obj[name].(type) {
		case float64:
			n = int(x)
		case json.Number:
			i, err := x.Int64()
			if err != nil {
				return nil
			}
			n = int(i)
		default:
			return nil
		}
		return &n
	}
	return table.CheckSegments(num("Segment"), num("TotalSegments"))
}

// itemSize refuses an item over DynamoDB's 400 KB.
//
// The exact count (expr.ItemSize) needs the item decoded again as
// table.Item, which cost a PutItem through the endpoint about a tenth of
// its CPU. So an item whose sizeBound is within the limit is let through
// without it: the bound is never below the exact count.
func itemSize(v any) error {
	if v == nil || sizeBound(v) <= table.MaxItemSize {
		return nil
	}
	b, _ := json.Marshal(v)
	var it table.Item
	if json.Unmarshal(b, &it) != nil {
		return nil // the table's decoding says what is wrong
	}
	if expr.ItemSize(it) > table.MaxItemSize {
		return awserr.New(awserr.ErrValidation, "Item size has exceeded the maximum allowed size")
	}
	return nil
}

// sizeBound is an upper bound of expr.ItemSize for an item (or an
// attribute value, when value is true) as the request's JSON decoded it:
// map[string]any of {"S": string}-shaped values. A string counts its
// bytes, as DynamoDB does; a base64 B its encoded length (never less than
// the bytes it decodes to); a number its length plus 21 (DynamoDB counts
// at most 21 bytes for one, and expr counts a number it cannot read by its
// length); a list or map 3 and 1 an element, as expr does. A value of
// another shape counts nothing: the table's decoding refuses it.
func sizeBound(v any) int {
	item, _ := v.(map[string]any)
	n := 0
	for k, av := range item {
		n += len(k) + valueBound(av)
	}
	return n
}

func valueBound(v any) int {
	av, _ := v.(map[string]any)
	n := 0
	for typ, x := range av {
		switch typ {
		case "S", "B":
			s, _ := x.(string)
			n += len(s)
		case "N":
			s, _ := x.(string)
			n += len(s) + 21
		case "BOOL", "NULL":
			n++
		case "SS", "BS", "NS":
			set, _ := x.([]any)
			for _, e := range set {
				s, _ := e.(string)
				n += len(s) + 21
			}
		case "L":
			list, _ := x.([]any)
			n += 3
			for _, e := range list {
				n += 1 + valueBound(e)
			}
		case "M":
			m, _ := x.(map[string]any)
			n += 3
			for k, e := range m {
				n += 1 + len(k) + valueBound(e)
			}
		}
	}
	return n
}

// attributesToGet refuses a name twice in AttributesToGet.
func attributesToGet(obj map[string]any) error {
	attrs, _ := obj["AttributesToGet"].([]any)
	seen := make(map[any]bool, len(attrs))
	for _, a := range attrs {
		if seen[a] {
			return awserr.New(awserr.ErrValidation, "One or more parameter values were invalid: Duplicate value in attribute name: %v", a)
		}
		seen[a] = true
	}
	return nil
}

// dynamoMixed is step 2 for a request (or a BatchGetItem table's part) of
// the kind op.
func dynamoMixed(op string, v any) error {
	obj, _ := v.(map[string]any)
	ps, ok := dynamoParamsOf[op]
	if !ok {
		return nil
	}
	present := func(names []string) []string {
		var out []string
		for _, n := range names {
			if obj[n] != nil {
				out = append(out, n)
			}
		}
		return out
	}
	legacy, expression := present(ps.legacy), present(ps.expression)
	if obj["KeyConditionExpression"] == nil {
		// KeyConditions go with the other expressions; only a
		// KeyConditionExpression makes them a mix.
		legacy = slices.DeleteFunc(legacy, func(p string) bool { return p == "KeyConditions" })
	}
	switch {
	case len(legacy) > 0 && len(expression) > 0:
		return awserr.New(awserr.ErrValidation, "Can not use both expression and non-expression parameters in the same request: Non-expression parameters: {%s} Expression parameters: {%s}",
			strings.Join(legacy, ", "), strings.Join(expression, ", "))
	case len(expression) == 0 && obj["ExpressionAttributeNames"] != nil:
		return awserr.New(awserr.ErrValidation, "ExpressionAttributeNames can only be specified when using expressions")
	case obj["ExpressionAttributeValues"] != nil && ps.valuesNull != "" && len(slices.DeleteFunc(expression, func(p string) bool { return p == "ProjectionExpression" })) == 0:
		return awserr.New(awserr.ErrValidation, "ExpressionAttributeValues can only be specified when using expressions: %s", ps.valuesNull)
	}
	return nil
}

// transactActions are the kinds of a TransactWriteItems' or a
// TransactGetItems' action, in the order an action is read.
var transactActions = []string{"ConditionCheck", "Put", "Update", "Delete", "Get"}

// transactPlaceholderMaps is step 4's first check for each action of a
// TransactWriteItems (ConditionCheck, Put, Update, Delete) or a
// TransactGetItems (Get), in TransactItems order: an empty
// ExpressionAttributeNames is a ValidationException "ExpressionAttributeNames
// must not be empty", an empty ExpressionAttributeValues "ExpressionAttributeValues
// must not be empty" (names first), before any expression is parsed or
// table looked up (moto's test_transact_write_items__empty_expr_attr_values,
// verified against AWS). Before, the action ran and its write happened.
func transactPlaceholderMaps(obj map[string]any) error {
	items, _ := obj["TransactItems"].([]any)
	for _, it := range items {
		action, _ := it.(map[string]any)
		for _, kind := range transactActions {
			a, _ := action[kind].(map[string]any)
			if a == nil {
				continue
			}
			for _, param := range []string{"ExpressionAttributeNames", "ExpressionAttributeValues"} {
				if m, ok := a[param].(map[string]any); ok && len(m) == 0 {
					return awserr.New(awserr.ErrValidation, "%s must not be empty", param)
				}
			}
		}
	}
	return nil
}

// dynamoExpressions is steps 4 to 6 for a request of the kind op.
func dynamoExpressions(op string, v any, eavRule error) error {
	obj, _ := v.(map[string]any)
	if _, ok := dynamoParamsOf[op]; !ok {
		return nil
	}
	names, hasNames := obj["ExpressionAttributeNames"].(map[string]any)
	values, hasValues := obj["ExpressionAttributeValues"].(map[string]any)
	if hasNames && len(names) == 0 {
		return awserr.New(awserr.ErrValidation, "ExpressionAttributeNames must not be empty")
	}
	for _, k := range sortedKeys(names) {
		if err := expr.PlaceholderKey("ExpressionAttributeNames", k); err != nil {
			return exprValidation(err)
		}
		if !strings.HasPrefix(k, "#") || len(k) < 2 {
			return awserr.New(awserr.ErrValidation, "ExpressionAttributeNames contains invalid key: Syntax error; key: %q", k)
		}
	}
	if hasValues && len(values) == 0 {
		return awserr.New(awserr.ErrValidation, "ExpressionAttributeValues must not be empty")
	}
	for _, k := range sortedKeys(values) {
		if err := expr.PlaceholderKey("ExpressionAttributeValues", k); err != nil {
			return exprValidation(err)
		}
		if !strings.HasPrefix(k, ":") || len(k) < 2 {
			return awserr.New(awserr.ErrValidation, "ExpressionAttributeValues contains invalid key: Syntax error; key: %q", k)
		}
	}
	if eavRule != nil {
		return eavRule
	}
	c := &expr.Context{}
	if hasNames {
		c.Names = make(map[string]string, len(names))
		for k, n := range names {
			c.Names[k], _ = n.(string)
		}
	}
	if hasValues {
		var it table.Item
		if !fromValue(values, &it) {
			it = nil
			b, _ := json.Marshal(values)
			if json.Unmarshal(b, &it) != nil {
				return nil // the table's decoding says what is wrong
			}
		}
		c.Values = expr.CanonicalItem(it)
	}
	// Each expression given, parsed in DynamoDB's order.
	shape := func() error { return nil }
	parsed := func(_ any, err error) error { return err }
	for _, e := range []struct {
		param string
		parse func(string) error
	}{
		{"UpdateExpression", func(s string) error { return parsed(expr.ParseUpdate(s, c)) }},
		{"ConditionExpression", func(s string) error { return parsed(expr.ParseCondition(s, c)) }},
		{"KeyConditionExpression", func(s string) (err error) { shape, err = expr.CheckKeyCondition(s, c); return err }},
		{"FilterExpression", func(s string) error { return parsed(expr.ParseFilter(s, c)) }},
		{"ProjectionExpression", func(s string) error { return parsed(expr.ParseProjection(s, c)) }},
	} {
		if s, ok := obj[e.param].(string); ok {
			if err := e.parse(s); err != nil {
				return exprValidation(err)
			}
		}
	}
	if _, ok := obj["KeyConditionExpression"].(string); ok {
		// its shape now; its keys, and the unused placeholders, with the
		// table's key
		return exprValidation(shape())
	}
	return exprValidation(c.CheckUnused())
}

// exprValidation is an expression's error as a ValidationException.
func exprValidation(err error) error {
	if ve, ok := err.(*expr.ValidationError); ok {
		return awserr.New(awserr.ErrValidation, "%s", ve.Message)
	}
	return err
}

// eavKey is the key of ExpressionAttributeValues the value at path is
// under ("" when it is not under one).
func eavKey(at []pathStep) string {
	if len(at) >= 2 && at[0].name == "expressionAttributeValues" && at[1].mapValue {
		return at[1].name
	}
	return ""
}

// wrapStartKey is an attribute value's error as DynamoDB words it for a
// value of a Query's or Scan's ExclusiveStartKey, which it reports before
// any other attribute value's (dynalite's query and scan tests, recorded
// from AWS): an empty value, one of several types, a NULL that is not
// true and an empty string or binary set are "The provided starting key
// is invalid: …" (the NULL's words then "must have the value of true");
// an empty number set, duplicates and a bad number keep their words.
func wrapStartKey(err error) error {
	e, ok := err.(*awserr.Error)
	if !ok {
		return err
	}
	msg := e.Message
	switch {
	case strings.HasPrefix(msg, "Supplied AttributeValue"),
		strings.HasSuffix(msg, "An string set  may not be empty"),
		strings.HasSuffix(msg, "Binary sets should not be empty"):
	case strings.HasSuffix(msg, "Null attribute value types must have the true value"):
		msg = strings.TrimSuffix(msg, "the true value") + "the value of true"
	default:
		return err
	}
	return awserr.New(awserr.ErrValidation, "The provided starting key is invalid: %s", msg)
}

// wrapEAV is an attribute value's error as DynamoDB words it for a value
// of ExpressionAttributeValues.
func wrapEAV(err error, key string) error {
	if e, ok := err.(*awserr.Error); ok {
		return awserr.New(awserr.ErrValidation, "ExpressionAttributeValues contains invalid value: %s for key %s", e.Message, key)
	}
	return err
}

// dynamoTableOps are the operations on a table that check its TableName
// before anything else, in words of their own.
var dynamoTableOps = map[string]bool{
	"CreateTable": true, "DeleteTable": true, "DescribeTable": true, "UpdateTable": true,
	"DescribeTimeToLive": true, "UpdateTimeToLive": true,
}

// dynamoFirst is what DynamoDB refuses before the model's constraints:
// a table operation's TableName absent, or not of 3 to 255 characters;
// a tag operation's ResourceArn absent.
func dynamoFirst(op string, v any) error {
	obj, _ := v.(map[string]any)
	switch {
	case dynamoTableOps[op]:
		name, ok := obj["TableName"].(string)
		switch {
		case obj["TableName"] == nil:
			return awserr.New(awserr.ErrValidation, "The parameter 'TableName' is required but was not present in the request")
		case ok && (javaLength(name) < 3 || javaLength(name) > 255):
			return awserr.New(awserr.ErrValidation, "TableName must be at least 3 characters long and at most 255 characters long")
		}
	case op == "TagResource" || op == "UntagResource" || op == "ListTagsOfResource":
		if obj["ResourceArn"] == nil {
			return awserr.New(awserr.ErrValidation, "Invalid TableArn")
		}
	}
	return nil
}

// maxCapacity is the largest capacity DynamoDB takes in a request.
const maxCapacity = 1e12

// capacityBounds refuses a throughput's units over maxCapacity, reads
// first (index: the index's name, in the message).
func capacityBounds(v any, index string) error {
	pt, _ := v.(map[string]any)
	for _, units := range []string{"ReadCapacityUnits", "WriteCapacityUnits"} {
		n, ok := pt[units].(json.Number)
		if !ok {
			continue
		}
		if f, err := n.Float64(); err == nil && f > maxCapacity {
			if index != "" {
				return awserr.New(awserr.ErrValidation, "Given value %s for %s is out of bounds for index %s", n, units, index)
			}
			return awserr.New(awserr.ErrValidation, "Given value %s for %s is out of bounds", n, units)
		}
	}
	return nil
}

// updateTableChecks are UpdateTable's checks that need no table.
func updateTableChecks(obj map[string]any) error {
	if err := capacityBounds(obj["ProvisionedThroughput"], ""); err != nil {
		return err
	}
	updates, ok := obj["GlobalSecondaryIndexUpdates"].([]any)
	if !ok {
		return nil
	}
	if len(updates) == 0 {
		others := 0
		for k, v := range obj {
			if v != nil && k != "TableName" && k != "GlobalSecondaryIndexUpdates" {
				others++
			}
		}
		if others == 0 {
			return awserr.New(awserr.ErrValidation, "At least one of ProvisionedThroughput, UpdateStreamEnabled or GlobalSecondaryIndexUpdates is required")
		}
	}
	seen := map[string]bool{}
	for _, u := range updates {
		gu, _ := u.(map[string]any)
		var name string
		var set int
		for _, action := range []string{"Update", "Create", "Delete"} {
			if a, ok := gu[action].(map[string]any); ok {
				set++
				name, _ = a["IndexName"].(string)
				if action == "Update" {
					if err := capacityBounds(a["ProvisionedThroughput"], name); err != nil {
						return err
					}
				}
			}
		}
		if set == 0 {
			return awserr.New(awserr.ErrValidation, "One or more parameter values were invalid: One of GlobalSecondaryIndexUpdate.Update, GlobalSecondaryIndexUpdate.Create, GlobalSecondaryIndexUpdate.Delete must not be null")
		}
		if seen[name] {
			return awserr.New(awserr.ErrValidation, "One or more parameter values were invalid: Only one global secondary index update per index is allowed simultaneously. Index: %s", name)
		}
		seen[name] = true
	}
	return nil
}

// duplicateKeys refuses a key twice in a BatchGetItem table's Keys,
// checked after the table's expressions.
func duplicateKeys(v any) error {
	ka, _ := v.(map[string]any)
	keys, _ := ka["Keys"].([]any)
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		b, _ := json.Marshal(k) // keys sorted: the same key however written
		if seen[string(b)] {
			return awserr.New(awserr.ErrValidation, "Provided list of item keys contains duplicates")
		}
		seen[string(b)] = true
	}
	return nil
}
