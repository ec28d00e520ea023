// Package expr parses and evaluates the DynamoDB expression language over
// items: condition and filter expressions, update expressions, key
// condition expressions and projection expressions.
//
// It follows the DynamoDB developer guide:
//   - https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.OperatorsAndFunctions.html
//   - https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.UpdateExpressions.html
//   - https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.Attributes.html
//   - https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.ExpressionAttributeNames.html
//   - https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Query.KeyConditionExpressions.html
//
// One request shares one [Context] across all its expressions, so unused
// ExpressionAttributeNames and ExpressionAttributeValues are reported once
// by [Context.CheckUnused] after every expression of the request is parsed.
//
// Items are [Item] values (maps of events.DynamoDBAttributeValue). Nothing
// here mutates an item it is given: [Update.Apply] and [Projection.Apply]
// return new items that share unchanged sub-values with the old one.
//
// Numbers are exact decimals (github.com/cockroachdb/apd/v3, 38 digits), never
// float64. Every error returned by a parse or an evaluation is a
// *[ValidationError] whose message is DynamoDB's text; the caller sends it as
// a ValidationException.
//
// Not implemented: the reserved-word check ("Attribute name is a reserved
// keyword"), and the legacy non-expression parameters (Expected,
// AttributeUpdates, KeyConditions, QueryFilter, AttributesToGet).
package expr
