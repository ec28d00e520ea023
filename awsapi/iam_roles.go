package awsapi

// IAM: roles (query protocol, XML), as deploy scripts make them: create,
// read and delete a role, attach and detach managed policies (by ARN),
// put inline policies. Roles are stored in the KV bucket iamRolesBucket
// (key: the role name without case, base64url) and survive restarts.
// Permissions are not enforced: a role, its trust policy and its
// policies are recorded and reported, and no call anywhere is refused
// for want of one. Policy documents are returned URL-encoded, as IAM
// does (the AWS CLI and botocore decode them).

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
)

// iamRolesBucket holds the roles, key = base64url of the lower-cased name.
const iamRolesBucket = "runnel_iam_roles"

// maxAttachedPolicies is IAM's default quota of managed policies per role.
const maxAttachedPolicies = 10

var (
	roleNameRE   = regexp.MustCompile(`^[\w+=,.@-]{1,64}$`)
	policyNameRE = regexp.MustCompile(`^[\w+=,.@-]{1,128}$`)
)

type iamTag struct{ Key, Value string }

type attachedPolicy struct{ PolicyName, PolicyArn string }

// iamRole is a stored role.
type iamRole struct {
	Path, RoleName, RoleId, Arn string
	CreateDate                  time.Time
	AssumeRolePolicyDocument    string
	Description                 string `json:",omitempty"`
	MaxSessionDuration          int
	Tags                        []iamTag          `json:",omitempty"`
	AttachedPolicies            []attachedPolicy  `json:",omitempty"`
	RolePolicies                map[string]string `json:",omitempty"`
}

// roleXML is a Role in IAM's XML.
type roleXML struct {
	Path                     string
	RoleName                 string
	RoleId                   string
	Arn                      string
	CreateDate               string
	AssumeRolePolicyDocument string
	Description              string   `xml:",omitempty"`
	MaxSessionDuration       int      `xml:",omitempty"`
	Tags                     *tagList `xml:",omitempty"` // nil: no element (encoding/xml writes an empty Tags>member)
}

type tagList struct {
	Member []iamTag `xml:"member"`
}

func (r *iamRole) xml() roleXML {
	out := roleXML{Path: r.Path, RoleName: r.RoleName, RoleId: r.RoleId, Arn: r.Arn,
		CreateDate: r.CreateDate.UTC().Format(time.RFC3339), AssumeRolePolicyDocument: url.PathEscape(r.AssumeRolePolicyDocument),
		Description: r.Description, MaxSessionDuration: r.MaxSessionDuration}
	if len(r.Tags) > 0 {
		out.Tags = &tagList{Member: r.Tags}
	}
	return out
}

type roleResult struct {
	Role roleXML
}

func roleKey(name string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strings.ToLower(name)))
}

func (rq *request) iamRoles() (jetstream.KeyValue, error) {
	return rq.h.rn.Engine.Bucket(rq.ctx, iamRolesBucket)
}

// getRole reads the role name (NoSuchEntity when there is none).
func getRole(ctx context.Context, kv jetstream.KeyValue, name string) (*iamRole, uint64, error) {
	e, err := kv.Get(ctx, roleKey(name))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, awserr.New(awserr.ErrNoSuchEntity, "The role with name %s cannot be found.", name)
	}
	if err != nil {
		return nil, 0, err
	}
	var r iamRole
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return nil, 0, err
	}
	return &r, e.Revision(), nil
}

// role reads the role name (NoSuchEntity when there is none).
func (rq *request) role(name string) (*iamRole, error) {
	kv, err := rq.iamRoles()
	if err != nil {
		return nil, err
	}
	r, _, err := getRole(rq.ctx, kv, name)
	return r, err
}

// updateRole applies change to the role name and stores it (retrying
// when another call changed it meanwhile).
func (rq *request) updateRole(name string, change func(*iamRole) error) error {
	kv, err := rq.iamRoles()
	if err != nil {
		return err
	}
	for {
		r, rev, err := getRole(rq.ctx, kv, name)
		if err != nil {
			return err
		}
		if err := change(r); err != nil {
			return err
		}
		b, _ := json.Marshal(r)
		_, err = kv.Update(rq.ctx, roleKey(name), b, rev)
		if err == nil || !errors.Is(err, jetstream.ErrKeyExists) {
			return err
		}
	}
}

type roleNameInput struct{ RoleName string }

func (in *roleNameInput) readForm(f *qform) { in.RoleName = f.get("RoleName") }

func (in *roleNameInput) check() error {
	if !roleNameRE.MatchString(in.RoleName) {
		return awserr.New(awserr.ErrInvalidInput, "RoleName: 1 to 64 characters of [\\w+=,.@-] required, got %q", in.RoleName)
	}
	return nil
}

type createRoleInput struct {
	roleNameInput
	AssumeRolePolicyDocument, Path, Description string
	MaxSessionDuration                          *int
	Tags                                        []iamTag
}

func (in *createRoleInput) readForm(f *qform) {
	in.roleNameInput.readForm(f)
	in.AssumeRolePolicyDocument, in.Path, in.Description = f.get("AssumeRolePolicyDocument"), f.get("Path"), f.get("Description")
	in.MaxSessionDuration = f.intp("MaxSessionDuration")
	p, ns := f.indexes("Tags.member")
	for _, n := range ns {
		k := p + "." + strconv.Itoa(n)
		in.Tags = append(in.Tags, iamTag{Key: f.get(k + ".Key"), Value: f.get(k + ".Value")})
	}
}

func (in *createRoleInput) check() error {
	if err := in.roleNameInput.check(); err != nil {
		return err
	}
	if err := checkPolicyDocument("AssumeRolePolicyDocument", in.AssumeRolePolicyDocument); err != nil {
		return err
	}
	if in.Path == "" {
		in.Path = "/"
	}
	if !strings.HasPrefix(in.Path, "/") || !strings.HasSuffix(in.Path, "/") || len(in.Path) > 512 {
		return awserr.New(awserr.ErrInvalidInput, "Path: must begin and end with /, at most 512 characters, got %q", in.Path)
	}
	if len(in.Description) > 1000 {
		return awserr.New(awserr.ErrInvalidInput, "Description: at most 1000 characters, got %d", len(in.Description))
	}
	if d := in.MaxSessionDuration; d != nil && (*d < 3600 || *d > 43200) {
		return awserr.New(awserr.ErrInvalidInput, "MaxSessionDuration: 3600 to 43200 seconds, got %d", *d)
	}
	if len(in.Tags) > 50 {
		return awserr.New(awserr.ErrInvalidInput, "Tags: at most 50, got %d", len(in.Tags))
	}
	return nil
}

// checkPolicyDocument requires a policy document that is a JSON object.
func checkPolicyDocument(field, doc string) error {
	if doc == "" {
		return awserr.New(awserr.ErrInvalidInput, "%s: required", field)
	}
	if len(doc) > 131072 {
		return awserr.New(awserr.ErrInvalidInput, "%s: at most 131072 characters, got %d", field, len(doc))
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		return awserr.New(awserr.ErrMalformedPolicyDocument, "%s: not a JSON policy document: %v", field, err)
	}
	return nil
}

// newID is an IAM unique id: prefix (AROA for a role) and 17 characters.
func newID(prefix string) string {
	const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	b := make([]byte, 17)
	rand.Read(b)
	for i := range b {
		b[i] = chars[int(b[i])%len(chars)]
	}
	return prefix + string(b)
}

func iamCreateRole(rq *request, in *createRoleInput) (any, error) {
	kv, err := rq.iamRoles()
	if err != nil {
		return nil, err
	}
	r := &iamRole{Path: in.Path, RoleName: in.RoleName, RoleId: newID("AROA"),
		Arn:        "arn:aws:iam::" + rq.h.rn.Engine.AccountID() + ":role" + in.Path + in.RoleName,
		CreateDate: rq.h.rn.Engine.Clock.Now().UTC().Truncate(time.Second), AssumeRolePolicyDocument: in.AssumeRolePolicyDocument,
		Description: in.Description, MaxSessionDuration: 3600, Tags: in.Tags}
	if in.MaxSessionDuration != nil {
		r.MaxSessionDuration = *in.MaxSessionDuration
	}
	b, _ := json.Marshal(r)
	if _, err := kv.Create(rq.ctx, roleKey(in.RoleName), b); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return nil, awserr.New(awserr.ErrEntityAlreadyExists, "Role with name %s already exists.", in.RoleName)
		}
		return nil, err
	}
	return roleResult{Role: r.xml()}, nil
}

func iamGetRole(rq *request, in *roleNameInput) (any, error) {
	r, err := rq.role(in.RoleName)
	if err != nil {
		return nil, err
	}
	return roleResult{Role: r.xml()}, nil
}

func iamDeleteRole(rq *request, in *roleNameInput) (any, error) {
	kv, err := rq.iamRoles()
	if err != nil {
		return nil, err
	}
	r, rev, err := getRole(rq.ctx, kv, in.RoleName)
	if err != nil {
		return nil, err
	}
	if len(r.AttachedPolicies) > 0 || len(r.RolePolicies) > 0 {
		return nil, awserr.New(awserr.ErrDeleteConflict, "Cannot delete entity, must detach all policies first.")
	}
	return nil, kv.Delete(rq.ctx, roleKey(in.RoleName), jetstream.LastRevision(rev))
}

type rolePolicyArnInput struct {
	roleNameInput
	PolicyArn string
}

func (in *rolePolicyArnInput) readForm(f *qform) {
	in.roleNameInput.readForm(f)
	in.PolicyArn = f.get("PolicyArn")
}

func (in *rolePolicyArnInput) check() error {
	if err := in.roleNameInput.check(); err != nil {
		return err
	}
	if !strings.HasPrefix(in.PolicyArn, "arn:") || !strings.Contains(in.PolicyArn, ":policy/") {
		return awserr.New(awserr.ErrInvalidInput, "ARN %s is not valid.", in.PolicyArn)
	}
	return nil
}

func iamAttachRolePolicy(rq *request, in *rolePolicyArnInput) (any, error) {
	name := in.PolicyArn[strings.LastIndexByte(in.PolicyArn, '/')+1:]
	return nil, rq.updateRole(in.RoleName, func(r *iamRole) error {
		if slices.ContainsFunc(r.AttachedPolicies, func(p attachedPolicy) bool { return p.PolicyArn == in.PolicyArn }) {
			return nil
		}
		if len(r.AttachedPolicies) >= maxAttachedPolicies {
			return awserr.New(awserr.ErrIAMLimitExceeded, "Cannot exceed quota for PoliciesPerRole: %d", maxAttachedPolicies)
		}
		r.AttachedPolicies = append(r.AttachedPolicies, attachedPolicy{PolicyName: name, PolicyArn: in.PolicyArn})
		return nil
	})
}

func iamDetachRolePolicy(rq *request, in *rolePolicyArnInput) (any, error) {
	return nil, rq.updateRole(in.RoleName, func(r *iamRole) error {
		i := slices.IndexFunc(r.AttachedPolicies, func(p attachedPolicy) bool { return p.PolicyArn == in.PolicyArn })
		if i < 0 {
			return awserr.New(awserr.ErrNoSuchEntity, "Policy %s was not found.", in.PolicyArn)
		}
		r.AttachedPolicies = slices.Delete(r.AttachedPolicies, i, i+1)
		return nil
	})
}

type listAttachedRolePoliciesInput struct {
	roleNameInput
	PathPrefix string
}

func (in *listAttachedRolePoliciesInput) readForm(f *qform) {
	in.roleNameInput.readForm(f)
	in.PathPrefix = f.get("PathPrefix")
}

type attachedPoliciesResult struct {
	AttachedPolicies []attachedPolicy `xml:"AttachedPolicies>member"`
	IsTruncated      bool
}

func iamListAttachedRolePolicies(rq *request, in *listAttachedRolePoliciesInput) (any, error) {
	r, err := rq.role(in.RoleName)
	if err != nil {
		return nil, err
	}
	out := attachedPoliciesResult{AttachedPolicies: []attachedPolicy{}}
	for _, p := range r.AttachedPolicies {
		// arn:aws:iam::aws:policy/<path><name>: the path is what follows "policy".
		path := p.PolicyArn[strings.Index(p.PolicyArn, ":policy")+len(":policy"):]
		if strings.HasPrefix(path, in.PathPrefix) {
			out.AttachedPolicies = append(out.AttachedPolicies, p)
		}
	}
	return out, nil
}

type rolePolicyInput struct {
	roleNameInput
	PolicyName, PolicyDocument string
}

func (in *rolePolicyInput) readForm(f *qform) {
	in.roleNameInput.readForm(f)
	in.PolicyName, in.PolicyDocument = f.get("PolicyName"), f.get("PolicyDocument")
}

func (in *rolePolicyInput) check() error {
	if err := in.roleNameInput.check(); err != nil {
		return err
	}
	if !policyNameRE.MatchString(in.PolicyName) {
		return awserr.New(awserr.ErrInvalidInput, "PolicyName: 1 to 128 characters of [\\w+=,.@-] required, got %q", in.PolicyName)
	}
	return nil
}

func iamPutRolePolicy(rq *request, in *rolePolicyInput) (any, error) {
	if err := checkPolicyDocument("PolicyDocument", in.PolicyDocument); err != nil {
		return nil, err
	}
	return nil, rq.updateRole(in.RoleName, func(r *iamRole) error {
		if r.RolePolicies == nil {
			r.RolePolicies = map[string]string{}
		}
		r.RolePolicies[in.PolicyName] = in.PolicyDocument
		return nil
	})
}

func iamDeleteRolePolicy(rq *request, in *rolePolicyInput) (any, error) {
	return nil, rq.updateRole(in.RoleName, func(r *iamRole) error {
		if _, ok := r.RolePolicies[in.PolicyName]; !ok {
			return awserr.New(awserr.ErrNoSuchEntity, "The role policy with name %s cannot be found.", in.PolicyName)
		}
		delete(r.RolePolicies, in.PolicyName)
		return nil
	})
}

type getRolePolicyResult struct {
	RoleName, PolicyName, PolicyDocument string
}

func iamGetRolePolicy(rq *request, in *rolePolicyInput) (any, error) {
	r, err := rq.role(in.RoleName)
	if err != nil {
		return nil, err
	}
	doc, ok := r.RolePolicies[in.PolicyName]
	if !ok {
		return nil, awserr.New(awserr.ErrNoSuchEntity, "The role policy with name %s cannot be found.", in.PolicyName)
	}
	return getRolePolicyResult{RoleName: r.RoleName, PolicyName: in.PolicyName, PolicyDocument: url.PathEscape(doc)}, nil
}
