package table

import (
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math/big"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/cockroachdb/apd/v3"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/table/expr"
)

// schema is a table's key: the partition (HASH) attribute and the optional
// sort (RANGE) attribute, each with its type.
type schema struct {
	hash, rng         string
	hashType, rngType string
}

func newSchema(ks []KeySchemaElement, defs []AttributeDefinition) (schema, error) {
	types, err := definitionTypes(defs)
	if err != nil {
		return schema{}, err
	}
	return schemaOf(ks, types)
}

// definitionTypes is AttributeDefinitions as name -> type.
func definitionTypes(defs []AttributeDefinition) (map[string]string, error) {
	types := map[string]string{}
	for _, d := range defs {
		switch d.AttributeType {
		case TypeS, TypeN, TypeB:
		default:
			return nil, validation("1 validation error detected: Value '%s' at 'attributeDefinitions.attributeType' failed to satisfy constraint: Member must satisfy enum value set: [B, N, S]", d.AttributeType)
		}
		types[d.AttributeName] = d.AttributeType
	}
	return types, nil
}

// schemaOf is the schema of a table's KeySchema whose attributes' types
// are in types, checked in DynamoDB's order and words: with two
// elements, an attribute without a definition (or fewer definitions than
// elements), then the same name twice, then the key types; with one, the
// attribute's definition, then its type.
func schemaOf(ks []KeySchemaElement, types map[string]string) (schema, error) {
	if len(ks) < 1 || len(ks) > 2 {
		return schema{}, validation("1 validation error detected: Value at 'keySchema' failed to satisfy constraint: Member must have length less than or equal to 2 and greater than or equal to 1")
	}
	if len(ks) == 2 {
		_, ok0 := types[ks[0].AttributeName]
		_, ok1 := types[ks[1].AttributeName]
		if !ok0 || !ok1 || len(types) < 2 {
			return schema{}, validation("Invalid KeySchema: Some index key attribute have no definition")
		}
	} else if _, ok := types[ks[0].AttributeName]; !ok {
		return schema{}, undefinedKeys(ks, types)
	}
	return keyTypes(ks, types)
}

// indexSchemaOf is the schema of an index's KeySchema: every attribute
// defined (else all the index's keys are named), then as a table's.
func indexSchemaOf(ks []KeySchemaElement, types map[string]string) (schema, error) {
	if len(ks) < 1 || len(ks) > 2 {
		return schema{}, validation("1 validation error detected: Value at 'keySchema' failed to satisfy constraint: Member must have length less than or equal to 2 and greater than or equal to 1")
	}
	for _, k := range ks {
		if _, ok := types[k.AttributeName]; !ok {
			return schema{}, undefinedKeys(ks, types)
		}
	}
	return keyTypes(ks, types)
}

// undefinedKeys is DynamoDB's error for key attributes without a
// definition: the keys and the definitions named.
func undefinedKeys(ks []KeySchemaElement, types map[string]string) error {
	names := make([]string, len(ks))
	for i, k := range ks {
		names[i] = k.AttributeName
	}
	return validation("One or more parameter values were invalid: Some index key attributes are not defined in AttributeDefinitions. Keys: [%s], AttributeDefinitions: [%s]",
		strings.Join(names, ", "), strings.Join(keysOf(types), ", "))
}

// keyTypes is the schema of defined key attributes: not the same name
// twice, the first a HASH, the second a RANGE.
func keyTypes(ks []KeySchemaElement, types map[string]string) (schema, error) {
	var sc schema
	if len(ks) == 2 && ks[0].AttributeName == ks[1].AttributeName {
		return sc, validation("Both the Hash Key and the Range Key element in the KeySchema have the same name")
	}
	if ks[0].KeyType != KeyTypeHash {
		return sc, validation("Invalid KeySchema: The first KeySchemaElement is not a HASH key type")
	}
	sc.hash, sc.hashType = ks[0].AttributeName, types[ks[0].AttributeName]
	if len(ks) == 2 {
		if ks[1].KeyType != KeyTypeRange {
			return sc, validation("Invalid KeySchema: The second KeySchemaElement is not a RANGE key type")
		}
		sc.rng, sc.rngType = ks[1].AttributeName, types[ks[1].AttributeName]
	}
	return sc, nil
}

func keysOf(m map[string]string) []string { return sortedKeys(m) }

func (sc schema) elements() []KeySchemaElement {
	out := []KeySchemaElement{{AttributeName: sc.hash, KeyType: KeyTypeHash}}
	if sc.rng != "" {
		out = append(out, KeySchemaElement{AttributeName: sc.rng, KeyType: KeyTypeRange})
	}
	return out
}

func (sc schema) definitions() []AttributeDefinition {
	out := []AttributeDefinition{{AttributeName: sc.hash, AttributeType: sc.hashType}}
	if sc.rng != "" {
		out = append(out, AttributeDefinition{AttributeName: sc.rng, AttributeType: sc.rngType})
	}
	return out
}

// key is an item's primary key as the index orders it: h is the MD5 of the
// partition key's canonical form, rk the sort key's canonical form ("" for
// a table without one).
type key struct {
	h    [16]byte
	rk   string
	keys Item // the key attributes only
}

func (k key) id() string { return string(k.h[:]) + k.rk }

// explicitHash routes every item of a partition to one shard of the log.
func (k key) explicitHash() string { return new(big.Int).SetBytes(k.h[:]).String() }

func (k key) hex() string { return hex.EncodeToString(k.h[:]) }

// canonical returns the canonical text of a key value of type t, or an
// error naming the attribute.
func canonical(name, t string, v events.DynamoDBAttributeValue) (string, error) {
	if dataTypeName(v) != t {
		return "", validation("One or more parameter values were invalid: Type mismatch for key %s expected: %s actual: %s", name, t, dataTypeName(v))
	}
	switch t {
	case TypeS:
		if v.String() == "" {
			return "", validation("One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty string value. Key: %s", name)
		}
		return v.String(), nil
	case TypeB:
		if len(v.Binary()) == 0 {
			return "", validation("One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty binary value. Key: %s", name)
		}
		return string(v.Binary()), nil
	default:
		d, err := expr.ParseNumber(v.Number())
		if err != nil {
			return "", validation("%v", err)
		}
		var r apd.Decimal
		r.Reduce(d)
		return r.Text('E'), nil
	}
}

// dataTypeName is the DynamoDB type letter of a value (S, N, B, BOOL...).
func dataTypeName(v events.DynamoDBAttributeValue) string { return expr.TypeName(v.DataType()) }

// keyOf extracts the primary key of item. With exact, item must hold the
// key attributes and nothing else (a Key parameter).
func (sc schema) keyOf(item Item, exact bool) (key, error) {
	k, err := sc.keyOfItem(item, exact)
	if err != nil && exact {
		// A Key parameter's mistakes are worded as DynamoDB words them
		// for a key: any wrong type is a key that does not match.
		msg := errMessage(err)
		switch {
		case strings.HasPrefix(msg, "One or more parameter values were invalid: Type mismatch for key "):
			return k, validation("The provided key element does not match the schema")
		case strings.HasPrefix(msg, keyNotValid):
			return k, validation("One or more parameter values were invalid: %s", strings.TrimPrefix(msg, keyNotValid))
		}
	}
	return k, err
}

// itemKeyMismatch is a key error of an item written by BatchWriteItem or
// TransactWriteItems, which DynamoDB words as a key that does not match
// (PutItem names the key).
func itemKeyMismatch(err error) error {
	if err == nil {
		return nil
	}
	msg := errMessage(err)
	if strings.HasPrefix(msg, "One or more parameter values were invalid: Missing the key ") ||
		strings.HasPrefix(msg, "One or more parameter values were invalid: Type mismatch for key ") {
		return validation("The provided key element does not match the schema")
	}
	return err
}

// errMessage is an error's message without its code.
func errMessage(err error) string {
	var e *awserr.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}

// keyNotValid begins PutItem's words for an empty key value.
const keyNotValid = "One or more parameter values are not valid. "

func (sc schema) keyOfItem(item Item, exact bool) (key, error) {
	var k key
	hv, ok := item[sc.hash]
	if !ok {
		if exact {
			return k, validation("The provided key element does not match the schema")
		}
		return k, validation("One or more parameter values were invalid: Missing the key %s in the item", sc.hash)
	}
	hc, err := sc.hashCanonical(hv)
	if err != nil {
		return k, err
	}
	k.h = hashKey(sc.hashType, hc)
	k.keys = Item{sc.hash: storedKeyValue(sc.hashType, hv)}
	if sc.rng != "" {
		rv, ok := item[sc.rng]
		if !ok {
			if exact {
				return k, validation("The provided key element does not match the schema")
			}
			return k, validation("One or more parameter values were invalid: Missing the key %s in the item", sc.rng)
		}
		if k.rk, err = canonical(sc.rng, sc.rngType, rv); err != nil {
			return k, err
		}
		if len(k.rk) > MaxRangeKeyBytes {
			return k, validation("One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit of %d bytes", MaxRangeKeyBytes)
		}
		k.keys[sc.rng] = storedKeyValue(sc.rngType, rv)
	}
	if exact && len(item) != len(k.keys) {
		return k, validation("The provided key element does not match the schema")
	}
	return k, nil
}

// storedKeyValue is a key attribute's value as DynamoDB stores and returns
// it: a number in its canonical form ("2.0" -> "2", "5.50" -> "5.5"),
// whatever form the request's Key gave. The key's attributes start an
// item an UpdateItem creates and name the item in its change records; a
// Key's "2.0" was stored as given, and returned so by every later read.
func storedKeyValue(typ string, v events.DynamoDBAttributeValue) events.DynamoDBAttributeValue {
	if typ == TypeN {
		if c, err := expr.CanonicalNumber(v.Number()); err == nil && c != v.Number() {
			return events.NewNumberAttribute(c)
		}
	}
	return v
}

// partitionOf returns the key of a partition-key value alone (h set).
func (sc schema) partitionOf(v events.DynamoDBAttributeValue) (key, error) {
	hc, err := sc.hashCanonical(v)
	if err != nil {
		return key{}, err
	}
	return key{h: hashKey(sc.hashType, hc)}, nil
}

// DynamoDB's limits on key values: the partition key's value at most 2048
// bytes, the sort key's at most 1024 (a string's UTF-8, a binary's bytes;
// a number's canonical text, never that long).
const (
	MaxHashKeyBytes  = 2048
	MaxRangeKeyBytes = 1024
)

// hashCanonical is canonical for the partition key, with its size limit.
func (sc schema) hashCanonical(v events.DynamoDBAttributeValue) (string, error) {
	hc, err := canonical(sc.hash, sc.hashType, v)
	if err == nil && len(hc) > MaxHashKeyBytes {
		// DynamoDB's words, without a space before the number.
		err = validation("One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of%d bytes", MaxHashKeyBytes)
	}
	return hc, err
}

// hashKey is the MD5 of the partition key's type and canonical form (a
// stack buffer for the usual short keys: no allocation).
func hashKey(typ, canonical string) [16]byte {
	var buf [128]byte
	b := append(append(buf[:0], typ...), canonical...)
	return md5.Sum(b)
}

// entry is one item in the index: where its latest image is in the log.
type entry struct {
	h     [16]byte
	rk    string
	bound int8   // -1 / +1: a search bound before / after every entry of h
	shard uint16 // log shard and position of the item's latest change
	pos   uint64
	exp   int64 // TTL attribute value (epoch seconds), 0 if none
	size  int32 // item size in bytes
}

// less orders entries by partition hash, then by sort key in the sort
// key's order (numbers numerically).
func (sc schema) less(a, b entry) bool {
	if a.h != b.h {
		// Big-endian halves order like bytes.Compare, without its call.
		ah, bh := binary.BigEndian.Uint64(a.h[:8]), binary.BigEndian.Uint64(b.h[:8])
		if ah != bh {
			return ah < bh
		}
		return binary.BigEndian.Uint64(a.h[8:]) < binary.BigEndian.Uint64(b.h[8:])
	}
	if a.bound != 0 || b.bound != 0 {
		return a.bound < b.bound
	}
	return sc.compareRange(a.rk, b.rk) < 0
}

func (sc schema) compareRange(a, b string) int {
	if sc.rngType == TypeN {
		var x, y apd.Decimal
		if _, _, err := x.SetString(a); err == nil {
			if _, _, err := y.SetString(b); err == nil {
				return x.Cmp(&y)
			}
		}
	}
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
