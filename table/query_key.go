package table

// A Query's key conditions and ExclusiveStartKey, checked against the key
// schema of the table or index read, in the order and words of DynamoDB
// (dynalite's query tests, recorded from AWS): the start key's number of
// attributes; then, key attribute by key attribute (partition key first),
// the start key's value and the condition on it; then the start key
// against the table's key and the conditions' values. The legacy
// KeyConditions and a KeyConditionExpression go the same way, as terms
// (expr.KeyTerm).

import (
	"sort"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/table/expr"
)

// LegacyCondition is an entry of the legacy KeyConditions, QueryFilter or
// ScanFilter: a ComparisonOperator and its values.
type LegacyCondition struct {
	ComparisonOperator string                          `json:"ComparisonOperator"`
	AttributeValueList []events.DynamoDBAttributeValue `json:"AttributeValueList,omitempty"`
}

// legacyArgs are how many values each ComparisonOperator takes (-1: one
// or more).
var legacyArgs = map[string]int{"EQ": 1, "NE": 1, "LE": 1, "LT": 1, "GE": 1, "GT": 1, "NOT_NULL": 0, "NULL": 0,
	"CONTAINS": 1, "NOT_CONTAINS": 1, "BEGINS_WITH": 1, "IN": -1, "BETWEEN": 2}

// legacyTypes are the value types an operator takes, where AWS's
// documentation of ComparisonOperator restricts them (EQ and NE take any).
var legacyTypes = map[string][]string{
	"LE": {TypeS, TypeN, TypeB}, "LT": {TypeS, TypeN, TypeB}, "GE": {TypeS, TypeN, TypeB}, "GT": {TypeS, TypeN, TypeB},
	"CONTAINS": {TypeS, TypeN, TypeB}, "NOT_CONTAINS": {TypeS, TypeN, TypeB}, "IN": {TypeS, TypeN, TypeB},
	"BETWEEN": {TypeS, TypeN, TypeB}, "BEGINS_WITH": {TypeS, TypeB},
}

// CheckConditions checks the shape of legacy conditions (KeyConditions,
// QueryFilter, ScanFilter), attribute by attribute in name order, as
// DynamoDB does before it looks the table up: the number of values of the
// operator, one type for all of them, a type the operator takes, and
// BETWEEN's bounds in order. The values themselves are checked before.
func CheckConditions(conds map[string]LegacyCondition) error {
	names := make([]string, 0, len(conds))
	for n := range conds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := conds[n]
		op, vals := c.ComparisonOperator, c.AttributeValueList
		want, known := legacyArgs[op]
		if !known || (want >= 0 && len(vals) != want) || (want < 0 && len(vals) == 0) {
			return validation("One or more parameter values were invalid: Invalid number of argument(s) for the %s ComparisonOperator", op)
		}
		for _, v := range vals[min(1, len(vals)):] {
			if v.DataType() != vals[0].DataType() {
				return validation("One or more parameter values were invalid: AttributeValues inside AttributeValueList must be of same type")
			}
		}
		if types, ok := legacyTypes[op]; ok {
			for _, v := range vals {
				if tn := dataTypeName(v); !contains(types, tn) {
					return validation("One or more parameter values were invalid: ComparisonOperator %s is not valid for %s AttributeValue type", op, tn)
				}
			}
		}
		if op == "BETWEEN" {
			if cmp, ok := expr.Compare(vals[0], vals[1]); ok && cmp > 0 {
				return validation("The BETWEEN condition was provided a range where the lower bound is greater than the upper bound")
			}
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// queryTerms are a Query's key conditions as terms: its legacy
// KeyConditions (checked as CheckConditions checks them, and for their
// number) or its KeyConditionExpression, parsed with c.
func queryTerms(in *QueryInput, c *expr.Context) ([]expr.KeyTerm, error) {
	if in.KeyConditions == nil {
		if in.KeyConditionExpression == "" {
			return nil, validation("Either the KeyConditions or KeyConditionExpression parameter must be specified in the request.")
		}
		terms, err := expr.ParseKeyTerms(in.KeyConditionExpression, c)
		return terms, exprErr(err)
	}
	if err := CheckConditions(in.KeyConditions); err != nil {
		return nil, err
	}
	if n := len(in.KeyConditions); n != 1 && n != 2 {
		return nil, validation("Conditions can be of length 1 or 2 only")
	}
	terms := make([]expr.KeyTerm, 0, len(in.KeyConditions))
	for name, kc := range in.KeyConditions {
		terms = append(terms, expr.KeyTerm{Name: name, Op: kc.ComparisonOperator, Values: kc.AttributeValueList})
	}
	sort.Slice(terms, func(i, j int) bool { return terms[i].Name < terms[j].Name })
	return terms, nil
}

// nonIndexable are the ComparisonOperators a key condition may not use.
var nonIndexable = map[string]bool{"NULL": true, "NOT_NULL": true, "NE": true, "CONTAINS": true, "NOT_CONTAINS": true, "IN": true}

// queryKey checks the key conditions terms and the ExclusiveStartKey esk
// (nil: none) of a Query on the table or, when x is not nil, the index x,
// and returns the key condition to read with. Errors (ValidationException),
// first found first:
//   - "The provided starting key is invalid": esk has not as many
//     attributes as the table's and the index's keys together, or lacks a
//     key attribute of the key read;
//   - "The provided key element does not match the schema": esk's value of
//     a key attribute of the key read is of another type;
//   - "Query key condition not supported": two conditions on a key without
//     a sort key, or a partition key condition other than EQ;
//   - "Query condition missed key schema element: a": no condition on the
//     partition key, or two conditions and none on the sort key;
//   - "Attempted conditional constraint is not an indexable operation":
//     NULL, NOT_NULL, NE, CONTAINS, NOT_CONTAINS or IN on a key attribute;
//   - "One or more parameter values were invalid: Condition parameter type
//     does not match schema type";
//   - "The provided starting key is invalid: " and the table key's error,
//     for esk's attributes of the table's key;
//   - "The provided starting key is outside query boundaries based on
//     provided conditions": esk in another partition, without a sort key
//     condition;
//   - "The provided starting key does not match the range key predicate";
//   - "The query can return at most one row and cannot be restarted": esk
//     in another partition, with a sort key condition it matches.
func (t *Table) queryKey(x *secondary, terms []expr.KeyTerm, esk Item) (*expr.KeyCondition, error) {
	sc := t.schema
	if x != nil {
		sc = x.sc
		if err := x.startKeyCount(esk); err != nil {
			return nil, err
		}
	} else if esk != nil && len(esk) != len(keyNames(t.schema)) {
		return nil, validation("The provided starting key is invalid")
	}
	byName := make(map[string]*expr.KeyTerm, len(terms))
	for i := range terms {
		byName[terms[i].Name] = &terms[i]
	}
	for i, attr := range keyNames(sc) {
		isHash, typ := i == 0, sc.hashType
		if !isHash {
			typ = sc.rngType
		}
		if err := startKeyPiece(esk, attr, typ); err != nil {
			return nil, err
		}
		if isHash && sc.rng == "" && len(terms) > 1 {
			return nil, validation("Query key condition not supported")
		}
		term := byName[attr]
		if term == nil && isHash {
			return nil, validation("Query condition missed key schema element: %s", attr)
		}
		if term == nil {
			continue // none on the sort key: KeyConditionFor refuses one on another attribute
		}
		if nonIndexable[term.Op] {
			return nil, validation("Attempted conditional constraint is not an indexable operation")
		}
		for _, v := range term.Values {
			if dataTypeName(v) != typ {
				return nil, validation("One or more parameter values were invalid: Condition parameter type does not match schema type")
			}
		}
		if isHash && term.Op != "EQ" {
			return nil, validation("Query key condition not supported")
		}
	}
	kc, err := expr.KeyConditionFor(terms, sc.hash, sc.rng)
	if err != nil {
		return nil, exprErr(err)
	}
	if esk == nil {
		return kc, nil
	}
	if _, err := t.schema.keyOf(keyAttrs(esk, t.schema), true); err != nil {
		return nil, startKeyInvalid(err)
	}
	sameHash := expr.Equal(esk[sc.hash], kc.HashValue)
	switch {
	case kc.RangeName == "" && !sameHash:
		return nil, validation("The provided starting key is outside query boundaries based on provided conditions")
	case kc.RangeName == "":
	case !kc.MatchRange(ptr(esk[sc.rng])):
		return nil, validation("The provided starting key does not match the range key predicate")
	case !sameHash:
		return nil, validation("The query can return at most one row and cannot be restarted")
	}
	return kc, nil
}

func ptr[T any](v T) *T { return &v }

// keyNames are the attributes of a key: its partition key, then its sort
// key if it has one.
func keyNames(sc schema) []string {
	if sc.rng == "" {
		return []string{sc.hash}
	}
	return []string{sc.hash, sc.rng}
}

// startKeyPiece checks the value of key attribute attr (of type typ) in
// an ExclusiveStartKey esk (nil: none): there, and of that type.
func startKeyPiece(esk Item, attr, typ string) error {
	if esk == nil {
		return nil
	}
	v, ok := esk[attr]
	if !ok {
		return validation("The provided starting key is invalid")
	}
	if dataTypeName(v) != typ {
		return validation("The provided key element does not match the schema")
	}
	return nil
}

// startKeyCount refuses an ExclusiveStartKey esk (nil: none) of a read of
// index x that has not as many attributes as the table's and the index's
// keys together.
func (x *secondary) startKeyCount(esk Item) error {
	if esk == nil {
		return nil
	}
	names := map[string]bool{}
	for _, a := range append(keyNames(x.table), keyNames(x.sc)...) {
		names[a] = true
	}
	if len(esk) != len(names) {
		return validation("The provided starting key is invalid")
	}
	return nil
}

// startKeyIndex checks an ExclusiveStartKey esk (nil: none) of a read of
// index x against the index's key: startKeyCount, then each of its key
// attributes there and of its type.
func (x *secondary) startKeyIndex(esk Item) error {
	if err := x.startKeyCount(esk); err != nil {
		return err
	}
	for i, attr := range keyNames(x.sc) {
		typ := x.sc.hashType
		if i > 0 {
			typ = x.sc.rngType
		}
		if err := startKeyPiece(esk, attr, typ); err != nil {
			return err
		}
	}
	return nil
}
