package awsapi

// DynamoDB's own rules on a request's values, checked after the model's
// constraints (validate.go) and before any table is looked up: an
// AttributeValue holds exactly one type; NULL is true; numbers are
// DynamoDB's (38 digits, 1E-130 to 9.99…E+125); sets are not empty and
// hold no duplicates. A table name that is not an ARN is a table name
// (3 to 255 characters of [a-zA-Z0-9_.-]). Messages are DynamoDB's.

import (
	"strings"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/table/expr"
)

// serviceRules are each service's rules on the values of a shape, by
// shape name: run on every value of that shape in a request whose
// model constraints hold (the first failure is the request's error).
var serviceRules = map[Service]map[string]func(v any) error{
	DynamoDB: {"AttributeValue": attributeValueRule},
}

// attributeValueTypes are the members of DynamoDB's AttributeValue.
var attributeValueTypes = []string{"S", "N", "B", "SS", "NS", "BS", "M", "L", "NULL", "BOOL"}

func invalidValue(format string, args ...any) error {
	return awserr.New(awserr.ErrValidation, "One or more parameter values were invalid: "+format, args...)
}

// attributeValueRule checks one AttributeValue (its nested values are
// checked on their own, as values of the same shape).
func attributeValueRule(v any) error {
	m, _ := v.(map[string]any)
	// DynamoDB reads a number before it counts the types.
	if s, ok := m["N"].(string); ok {
		if err := checkNumber(s); err != nil {
			return err
		}
	}
	var typ string
	n := 0
	for _, t := range attributeValueTypes {
		if m[t] != nil {
			typ = t
			n++
		}
	}
	switch {
	case n == 0:
		return awserr.New(awserr.ErrValidation, "Supplied AttributeValue is empty, must contain exactly one of the supported datatypes")
	case n > 1:
		return awserr.New(awserr.ErrValidation, "Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes")
	}
	switch val := m[typ]; typ {
	case "NULL":
		if val != true {
			return invalidValue("Null attribute value types must have the true value")
		}
	case "N":
		return checkNumber(val.(string))
	case "SS", "NS", "BS":
		return checkSet(typ, val.([]any))
	}
	return nil
}

func checkNumber(s string) error {
	if expr.PlainInteger(s) {
		return nil // valid without a decimal parse
	}
	if _, err := expr.ParseNumber(s); err != nil {
		return awserr.New(awserr.ErrValidation, "%s", err.Error())
	}
	return nil
}

// checkSet checks that a set is not empty, that its numbers are numbers,
// and that it holds no element twice (numbers compared by value).
func checkSet(typ string, elems []any) error {
	if len(elems) == 0 {
		switch typ {
		case "SS":
			return invalidValue("An string set  may not be empty")
		case "NS":
			return invalidValue("An number set  may not be empty")
		}
		return invalidValue("Binary sets should not be empty")
	}
	seen := make(map[string]bool, len(elems))
	if typ == "NS" {
		// The same string twice is refused as it is read, before the
		// numbers are compared by value.
		same := make(map[string]bool, len(elems))
		for _, e := range elems {
			s, _ := e.(string)
			if _, err := expr.ParseNumber(s); err != nil {
				return awserr.New(awserr.ErrValidation, "%s", err.Error())
			}
			if same[s] {
				return awserr.New(awserr.ErrValidation, "Input collection contains duplicates")
			}
			same[s] = true
		}
	}
	for _, e := range elems {
		s, _ := e.(string) // the model's types hold: strings
		k := s
		if typ == "NS" {
			d, err := expr.ParseNumber(s)
			if err != nil {
				return awserr.New(awserr.ErrValidation, "%s", err.Error())
			}
			k = expr.FormatNumber(d)
		}
		if seen[k] {
			if typ == "BS" {
				return invalidValue("Input collection %sof type BS contains duplicates.", javaString(elems))
			}
			return invalidValue("Input collection %s contains duplicates.", javaString(elems))
		}
		seen[k] = true
	}
	return nil
}

// tableNameRule is DynamoDB's check of a TableName that is not an ARN
// (the model's TableArn shape takes both): the TableName shape's
// constraints, once the TableArn's hold.
func (vd *validation) tableNameRule(s string) {
	if strings.HasPrefix(s, "arn:") {
		return
	}
	if name := vd.m.Shapes["TableName"]; name != nil {
		vd.scalar(name, s)
	}
}
