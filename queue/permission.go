package queue

// AddPermission and RemovePermission: statements of the queue's Policy
// attribute, written as SQS writes them, never enforced (runnel checks no
// caller's rights; see docs/semantics.md).
//
// AWS: https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_AddPermission.html
// and API_RemovePermission.html. The statement AddPermission adds to the
// Policy (created with Version 2012-10-17 and Id "<queue ARN>/SQSDefaultPolicy"
// when the queue has none) is
//
//	{"Sid":"<Label>","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::<account>:root"},
//	 "Action":"SQS:<action>","Resource":"<queue ARN>"}
//
// with lists for several accounts or actions. A policy set with
// SetQueueAttributes keeps its statements; RemovePermission of the last
// statement removes the Policy.

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/lease"
)

// Permission is one AddPermission: a statement of the queue's Policy.
type Permission struct {
	// Label is the statement's Sid: 1..80 of [a-zA-Z0-9_-], unique in the
	// queue's policy.
	Label string `json:"label"`
	// AWSAccountIds are the principals: 12-digit account ids, at least one.
	AWSAccountIds []string `json:"accounts"`
	// Actions are SQS action names without "SQS:" (or "*"), 1..MaxPermissionActions,
	// of PermissionActions.
	Actions []string `json:"actions"`
}

// MaxPermissionActions is the most actions of one permission.
const MaxPermissionActions = 7

// PermissionActions are the actions a permission may grant: the ones a
// queue's owner may share ("*" is all of them).
var PermissionActions = []string{"*", "ChangeMessageVisibility", "DeleteMessage", "GetQueueAttributes", "GetQueueUrl",
	"ListDeadLetterSourceQueues", "PurgeQueue", "ReceiveMessage", "SendMessage"}

var (
	labelRE   = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,80}$`)
	accountRE = regexp.MustCompile(`^[0-9]{12}$`)
)

// check checks p as AWS does, in its order: the label, the accounts, the
// actions.
func (p *Permission) check() error {
	switch {
	case p.Label == "":
		return awserr.New(awserr.ErrMissingParameter, "The request must contain the parameter Label.")
	case !labelRE.MatchString(p.Label):
		return awserr.New(awserr.ErrSQSInvalidParameterValue, "Value %s for parameter Label is invalid. Reason: Must be 1 to 80 alphanumeric characters, hyphens (-) or underscores (_).", p.Label)
	case len(p.AWSAccountIds) == 0:
		return awserr.New(awserr.ErrMissingParameter, "The request must contain the parameter AWSAccountIds.")
	case len(p.Actions) == 0:
		return awserr.New(awserr.ErrMissingParameter, "The request must contain the parameter Actions.")
	case len(p.Actions) > MaxPermissionActions:
		return awserr.New(awserr.ErrOverLimit, "%d Actions were found, maximum allowed is %d.", len(p.Actions), MaxPermissionActions)
	}
	for _, a := range p.AWSAccountIds {
		if !accountRE.MatchString(a) {
			return awserr.New(awserr.ErrSQSInvalidParameterValue, "Value [%s] for parameter PrincipalId is invalid. Reason: Unable to verify.", a)
		}
	}
	for _, a := range p.Actions {
		if !slices.Contains(PermissionActions, a) {
			return awserr.New(awserr.ErrSQSInvalidParameterValue, "Value SQS:%s for parameter ActionName is invalid. Reason: Only the queue owner is allowed to invoke this action.", a)
		}
	}
	return nil
}

// policyDoc is a queue's Policy attribute, its statements as they were
// written.
type policyDoc struct {
	Version   string            `json:"Version,omitempty"`
	ID        string            `json:"Id,omitempty"`
	Statement []json.RawMessage `json:"Statement"`
}

// readPolicy reads a Policy attribute ("" is none); a Statement that is
// one object is read as a list of it.
func readPolicy(v string) (*policyDoc, error) {
	var raw struct {
		Version   string          `json:"Version"`
		ID        string          `json:"Id"`
		Statement json.RawMessage `json:"Statement"`
	}
	if v != "" {
		if err := json.Unmarshal([]byte(v), &raw); err != nil {
			return nil, awserr.New(awserr.ErrInternal, "the queue's Policy is not a JSON object: %v", err)
		}
	}
	doc := &policyDoc{Version: raw.Version, ID: raw.ID}
	if len(raw.Statement) > 0 && raw.Statement[0] == '{' {
		doc.Statement = []json.RawMessage{raw.Statement}
	} else if len(raw.Statement) > 0 {
		if err := json.Unmarshal(raw.Statement, &doc.Statement); err != nil {
			return nil, awserr.New(awserr.ErrInternal, "the queue's Policy has no list of statements: %v", err)
		}
	}
	return doc, nil
}

// sid returns the index of the statement labelled label, or -1.
func (d *policyDoc) sid(label string) int {
	return slices.IndexFunc(d.Statement, func(st json.RawMessage) bool {
		var s struct{ Sid string }
		return json.Unmarshal(st, &s) == nil && s.Sid == label
	})
}

// oneOrList is a policy value: a string for one, a list for several.
func oneOrList(vs []string) any {
	if len(vs) == 1 {
		return vs[0]
	}
	return vs
}

// AddPermission adds p as a statement of the queue's Policy
// (API_AddPermission). A label already in the policy is
// awserr.ErrSQSInvalidParameterValue ("Reason: Already exists."); see
// Permission.check for the rest.
func (s *Service) AddPermission(ctx context.Context, queueURL string, p Permission) error {
	if remote, err := s.forward(ctx, "AddPermission", lease.Pair(queueURL, p), nil); remote {
		return err
	}
	if err := p.check(); err != nil {
		return err
	}
	return s.updateMeta(ctx, queueURL, func(m *queueMeta) error {
		doc, err := readPolicy(m.Attributes[AttrPolicy])
		if err != nil {
			return err
		}
		if doc.sid(p.Label) >= 0 {
			return awserr.New(awserr.ErrSQSInvalidParameterValue, "Value %s for parameter Label is invalid. Reason: Already exists.", p.Label)
		}
		arn := s.ARN(m.Name)
		if doc.Version == "" {
			doc.Version, doc.ID = "2012-10-17", arn+"/SQSDefaultPolicy"
		}
		principals, actions := make([]string, len(p.AWSAccountIds)), make([]string, len(p.Actions))
		for i, a := range p.AWSAccountIds {
			principals[i] = "arn:aws:iam::" + a + ":root"
		}
		for i, a := range p.Actions {
			actions[i] = "SQS:" + a
		}
		st, _ := json.Marshal(struct {
			Sid       string
			Effect    string
			Principal struct{ AWS any }
			Action    any
			Resource  string
		}{p.Label, "Allow", struct{ AWS any }{oneOrList(principals)}, oneOrList(actions), arn})
		doc.Statement = append(doc.Statement, st)
		b, _ := json.Marshal(doc)
		m.Attributes[AttrPolicy], m.LastModified = string(b), s.eng.Clock.Now().Unix()
		return nil
	})
}

// RemovePermission removes the statement labelled label from the queue's
// Policy (API_RemovePermission), and the Policy with its last statement.
// A label the policy lacks is awserr.ErrSQSInvalidParameterValue
// ("Reason: can't find label on existing policy.").
func (s *Service) RemovePermission(ctx context.Context, queueURL, label string) error {
	if remote, err := s.forward(ctx, "RemovePermission", lease.Pair(queueURL, label), nil); remote {
		return err
	}
	if label == "" {
		return awserr.New(awserr.ErrMissingParameter, "The request must contain the parameter Label.")
	}
	return s.updateMeta(ctx, queueURL, func(m *queueMeta) error {
		doc, err := readPolicy(m.Attributes[AttrPolicy])
		if err != nil {
			return err
		}
		i := doc.sid(label)
		if i < 0 {
			return awserr.New(awserr.ErrSQSInvalidParameterValue, "Value %s for parameter Label is invalid. Reason: can't find label on existing policy.", label)
		}
		doc.Statement = slices.Delete(doc.Statement, i, i+1)
		m.LastModified = s.eng.Clock.Now().Unix()
		if len(doc.Statement) == 0 {
			delete(m.Attributes, AttrPolicy)
			return nil
		}
		b, _ := json.Marshal(doc)
		m.Attributes[AttrPolicy] = string(b)
		return nil
	})
}
