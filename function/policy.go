package function

// Resource-based policies (AddPermission, RemovePermission, GetPolicy)
// and tags (TagResource, UntagResource, ListTags) of functions. Both are
// stored, in KV buckets "runnel_function_policies" (key "<function>" or
// "<function>.<qualifier>": a policy is per version or alias) and
// "runnel_function_tags" (key "<function>": tags are the function's, not
// a version's), and deleted with the function (a version's or alias's
// policy also with the version or alias). Every change is written with
// the revision it read and retried on a conflict (updateDoc), so that
// changes through several nodes at once are all kept. runnel never
// enforces a policy: every caller may invoke every function.
// https://docs.aws.amazon.com/lambda/latest/dg/access-control-resource-based.html
// https://docs.aws.amazon.com/lambda/latest/api/API_AddPermission.html

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
)

const (
	policiesBucket = "runnel_function_policies"
	tagsBucket     = "runnel_function_tags"
	// MaxTags is the most tags a function has (Lambda quotas).
	MaxTags = 50
)

// Permission is one statement AddPermission adds (API_AddPermission's
// request).
type Permission struct {
	// StatementId: 1..100 characters of [a-zA-Z0-9-_], unique in the
	// policy. Required.
	StatementId string
	// Action: lambda:InvokeFunction, lambda:InvokeFunctionUrl, lambda:*...
	// Required.
	Action string
	// Principal: an AWS service (s3.amazonaws.com), an account id, an
	// ARN, or "*". Required.
	Principal string
	// Conditions, each added only when set.
	SourceArn, SourceAccount, EventSourceToken, PrincipalOrgID, FunctionUrlAuthType string
	// RevisionId, when set, must be the policy's (PreconditionFailed).
	RevisionId string
}

// Policy is a function's (or version's or alias's) resource policy as
// stored: IAM's document and its revision.
type Policy struct {
	Version    string
	Id         string
	Statement  []json.RawMessage
	RevisionId string `json:",omitempty"`
}

var accountIDRE = regexp.MustCompile(`^[0-9]{12}$`)

// statement is p as the JSON statement Lambda adds for it, on resource.
func (p Permission) statement(resource string) json.RawMessage {
	var principal any = p.Principal
	switch {
	case p.Principal == "*":
	case strings.HasSuffix(p.Principal, ".amazonaws.com"):
		principal = map[string]string{"Service": p.Principal}
	case accountIDRE.MatchString(p.Principal):
		principal = map[string]string{"AWS": "arn:aws:iam::" + p.Principal + ":root"}
	default:
		principal = map[string]string{"AWS": p.Principal}
	}
	cond := map[string]map[string]string{}
	add := func(op, key, v string) {
		if v != "" {
			if cond[op] == nil {
				cond[op] = map[string]string{}
			}
			cond[op][key] = v
		}
	}
	add("ArnLike", "AWS:SourceArn", p.SourceArn)
	add("StringEquals", "AWS:SourceAccount", p.SourceAccount)
	add("StringEquals", "lambda:EventSourceToken", p.EventSourceToken)
	add("StringEquals", "aws:PrincipalOrgID", p.PrincipalOrgID)
	add("StringEquals", "lambda:FunctionUrlAuthType", p.FunctionUrlAuthType)
	s := struct {
		Sid       string
		Effect    string
		Principal any
		Action    string
		Resource  string
		Condition map[string]map[string]string `json:",omitempty"`
	}{p.StatementId, "Allow", principal, p.Action, resource, cond}
	if len(cond) == 0 {
		s.Condition = nil
	}
	return mustJSON(s)
}

func sidOf(stmt json.RawMessage) string {
	var s struct{ Sid string }
	json.Unmarshal(stmt, &s)
	return s.Sid
}

// docKey checks that function name (and qualifier, a version or alias)
// exists and returns its key in a bucket.
func (s *Service) docKey(name, qualifier string) (string, error) {
	ref, key := name, name
	if qualifier != "" && qualifier != Latest {
		ref, key = name+":"+qualifier, name+"."+qualifier
	}
	if _, err := s.Describe(ref); err != nil {
		return "", err
	}
	return key, nil
}

// loadDoc reads key of kv into v; false when there is none.
func loadDoc(ctx context.Context, kv jetstream.KeyValue, key string, v any) (bool, error) {
	e, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, awserr.New(awserr.ErrService, "read %s: %v", key, err)
	}
	return true, json.Unmarshal(e.Value(), v)
}

// MaxPolicySize is the most bytes a resource policy holds, as GetPolicy
// returns the document (Lambda quotas: "Function resource-based policy:
// 20 KB").
const MaxPolicySize = 20 * 1024

// ErrPolicyLengthExceeded is AddPermission's answer to a statement that
// would make the policy larger than MaxPolicySize
// (PolicyLengthExceededException, HTTP 400, in AddPermission's errors in
// the Lambda model).
var ErrPolicyLengthExceeded = awserr.ErrPolicyLengthExceeded

// AddPermission adds p to the policy of function name (qualifier: of a
// version or alias) and returns the statement added. Errors:
// ResourceNotFound, ResourceConflict for a StatementId already there
// (Lambda's message), PreconditionFailed for a stale RevisionId,
// PolicyLengthExceeded ("The final policy size is bigger than the
// limit.") when the policy would be over MaxPolicySize bytes.
//
// The policy is written with the revision read (KV Update, or Create for
// a first statement) and read again when another call, on any node,
// wrote it meanwhile: a plain Put after the read lost the statements
// other nodes added in between (docMu serializes one process only).
func (s *Service) AddPermission(ctx context.Context, name, qualifier string, p Permission) (json.RawMessage, error) {
	key, err := s.docKey(name, qualifier)
	if err != nil {
		return nil, err
	}
	st := p.statement(s.QualifiedARN(name, strings.TrimPrefix(qualifier, Latest)))
	err = updateDoc(ctx, s.polkv, key, func() Policy { return Policy{Version: "2012-10-17", Id: "default"} }, func(pol *Policy) error {
		if p.RevisionId != "" && p.RevisionId != pol.RevisionId {
			return errRevision()
		}
		for _, st := range pol.Statement {
			if sidOf(st) == p.StatementId {
				return awserr.New(awserr.ErrResourceConflict, "The statement id (%s) provided already exists. Please provide a new statement id, or remove the existing statement.", p.StatementId)
			}
		}
		pol.Statement = append(pol.Statement, st)
		doc := *pol
		doc.RevisionId = ""
		if len(mustJSON(doc)) > MaxPolicySize {
			return awserr.New(ErrPolicyLengthExceeded, "The final policy size is bigger than the limit.")
		}
		pol.RevisionId = uuid.NewString()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// updateDoc applies change to the document under key of kv (fresh() when
// there is none) and stores it with the revision read: Create when there
// was none, Update otherwise. When another writer got there first (the
// revision moved: ErrKeyExists) it reads again and retries; an error of
// change is returned as it is, nothing stored.
func updateDoc[T any](ctx context.Context, kv jetstream.KeyValue, key string, fresh func() T, change func(*T) error) error {
	for {
		v := fresh()
		var rev uint64
		e, err := kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return awserr.New(awserr.ErrService, "read %s: %v", key, err)
		default:
			rev = e.Revision()
			if err := json.Unmarshal(e.Value(), &v); err != nil {
				return awserr.New(awserr.ErrService, "read %s: %v", key, err)
			}
		}
		if err := change(&v); err != nil {
			return err
		}
		if rev == 0 {
			_, err = kv.Create(ctx, key, mustJSON(v))
		} else {
			_, err = kv.Update(ctx, key, mustJSON(v), rev)
		}
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return awserr.New(awserr.ErrService, "store %s: %v", key, err)
		}
		if err := ctx.Err(); err != nil {
			return awserr.New(awserr.ErrService, "store %s: %v", key, err)
		}
	}
}

// GetPolicy returns the policy of function name (or of its version or
// alias qualifier): ResourceNotFound ("The resource you requested does
// not exist.") when it has no statement.
func (s *Service) GetPolicy(ctx context.Context, name, qualifier string) (*Policy, error) {
	key, err := s.docKey(name, qualifier)
	if err != nil {
		return nil, err
	}
	var pol Policy
	ok, err := loadDoc(ctx, s.polkv, key, &pol)
	if err != nil {
		return nil, err
	}
	if !ok || len(pol.Statement) == 0 {
		return nil, awserr.New(awserr.ErrResourceNotFound, "The resource you requested does not exist.")
	}
	return &pol, nil
}

// RemovePermission removes statement sid from the policy of function name
// (or of its version or alias qualifier). Errors: ResourceNotFound for an
// unknown function or statement, PreconditionFailed for a stale
// revisionID.
func (s *Service) RemovePermission(ctx context.Context, name, qualifier, sid, revisionID string) error {
	key, err := s.docKey(name, qualifier)
	if err != nil {
		return err
	}
	return updateDoc(ctx, s.polkv, key, func() Policy { return Policy{} }, func(pol *Policy) error {
		if revisionID != "" && revisionID != pol.RevisionId {
			return errRevision()
		}
		for i, st := range pol.Statement {
			if sidOf(st) == sid {
				pol.Statement = slices.Delete(pol.Statement, i, i+1)
				pol.RevisionId = uuid.NewString()
				return nil
			}
		}
		return awserr.New(awserr.ErrResourceNotFound, "Statement %s is not found in resource policy.", sid)
	})
}

// TagResource adds or replaces tags of function name (at most MaxTags in
// all: InvalidParameterValue beyond).
func (s *Service) TagResource(ctx context.Context, name string, tags map[string]string) error {
	return s.changeTags(ctx, name, func(t map[string]string) { maps.Copy(t, tags) })
}

// UntagResource removes the tags of function name with keys.
func (s *Service) UntagResource(ctx context.Context, name string, keys []string) error {
	return s.changeTags(ctx, name, func(t map[string]string) {
		for _, k := range keys {
			delete(t, k)
		}
	})
}

// changeTags applies change to the tags of function name and stores them
// with the revision read, retrying when another call changed them
// meanwhile (updateDoc).
func (s *Service) changeTags(ctx context.Context, name string, change func(map[string]string)) error {
	if _, err := s.docKey(name, ""); err != nil {
		return err
	}
	return updateDoc(ctx, s.tagkv, name, func() map[string]string { return map[string]string{} }, func(t *map[string]string) error {
		if *t == nil {
			*t = map[string]string{}
		}
		change(*t)
		if len(*t) > MaxTags {
			return awserr.New(awserr.ErrInvalidParameterValue, "Tags: a function has at most %d tags (this would make %d)", MaxTags, len(*t))
		}
		return nil
	})
}

// ListTags returns the tags of function name (empty: none), or
// ResourceNotFound.
func (s *Service) ListTags(ctx context.Context, name string) (map[string]string, error) {
	if _, err := s.docKey(name, ""); err != nil {
		return nil, err
	}
	t := map[string]string{}
	if _, err := loadDoc(ctx, s.tagkv, name, &t); err != nil {
		return nil, err
	}
	return t, nil
}

// purgeDocs deletes the policies and tags of function name (its own
// policy and those of its versions and aliases: "<name>.<qualifier>").
func (s *Service) purgeDocs(ctx context.Context, name string) {
	s.tagkv.Purge(ctx, name)
	keys, _ := s.polkv.Keys(ctx)
	for _, k := range keys {
		if k == name || strings.HasPrefix(k, name+".") {
			s.polkv.Purge(ctx, k)
		}
	}
}

// purgePolicy deletes the policy of version or alias qualifier of
// function name (DeleteAlias, DeleteFunction of a version): a version or
// alias created again under the name starts with no statement, as in
// Lambda.
func (s *Service) purgePolicy(ctx context.Context, name, qualifier string) {
	s.polkv.Purge(ctx, name+"."+qualifier)
}
