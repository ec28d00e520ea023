package awsapi

// STS (query protocol, XML): who the caller is, and role sessions.
// GetCallerIdentity answers, for session credentials AssumeRole issued,
// the assumed role's session, and the account's root identity for any
// other credentials (runnel has no users; signatures are checked only
// with --auth). AssumeRole returns session credentials for a role of
// iam_roles.go, stored (sts_sessions.go): with --auth they are accepted
// until their Expiration, then refused with ExpiredToken; permissions
// are not enforced.

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"time"

	"github.com/runnel-dev/runnel/awserr"
)

type callerIdentityResult struct {
	UserId, Account, Arn string
}

// stsGetCallerIdentity answers {UserId, Account, Arn}: for the session
// credentials of AssumeRole (with their token), Arn
// arn:aws:sts::<account>:assumed-role/<role>/<session> and UserId
// <role id>:<session> (API_GetCallerIdentity.html's example; the
// session's AssumedRoleUser); for any other credentials, the account's
// root (Arn arn:aws:iam::<account>:root, UserId the account).
//
// Trap: session credentials were answered as the root identity.
func stsGetCallerIdentity(rq *request, _ *noInput) (any, error) {
	acct := rq.h.rn.Engine.AccountID()
	if s := rq.callerSession(); s != nil {
		id := s.AssumedRoleId
		if id == "" { // stored by an older runnel: its role's id, if the role is still there
			role, session, _ := strings.Cut(s.Arn[strings.Index(s.Arn, ":assumed-role/")+len(":assumed-role/"):], "/")
			if r, err := rq.role(role); err == nil {
				id = r.RoleId + ":" + session
			}
		}
		if id != "" {
			return callerIdentityResult{UserId: id, Account: acct, Arn: s.Arn}, nil
		}
	}
	return callerIdentityResult{UserId: acct, Account: acct, Arn: "arn:aws:iam::" + acct + ":root"}, nil
}

type assumeRoleInput struct {
	RoleArn, RoleSessionName string
	DurationSeconds          *int
}

func (in *assumeRoleInput) readForm(f *qform) {
	in.RoleArn, in.RoleSessionName = f.get("RoleArn"), f.get("RoleSessionName")
	in.DurationSeconds = f.intp("DurationSeconds")
}

func (in *assumeRoleInput) check() error {
	if !strings.HasPrefix(in.RoleArn, "arn:") || !strings.Contains(in.RoleArn, ":role/") {
		return awserr.New(awserr.ErrValidationError, "RoleArn: a role ARN (arn:aws:iam::<account>:role/<name>) required, got %q", in.RoleArn)
	}
	if n := len(in.RoleSessionName); n < 2 || n > 64 {
		return awserr.New(awserr.ErrValidationError, "RoleSessionName: 2 to 64 characters, got %q", in.RoleSessionName)
	}
	if d := in.DurationSeconds; d != nil && (*d < 900 || *d > 43200) {
		return awserr.New(awserr.ErrValidationError, "DurationSeconds: 900 to 43200, got %d", *d)
	}
	return nil
}

type credentials struct {
	AccessKeyId, SecretAccessKey, SessionToken, Expiration string
}

type assumedRoleUser struct{ AssumedRoleId, Arn string }

type assumeRoleResult struct {
	Credentials     credentials
	AssumedRoleUser assumedRoleUser
}

func stsAssumeRole(rq *request, in *assumeRoleInput) (any, error) {
	role, err := rq.role(in.RoleArn[strings.LastIndexByte(in.RoleArn, '/')+1:])
	if errors.Is(err, awserr.ErrNoSuchEntity) {
		// STS's words, not IAM's (NoSuchEntity, 404): it does not say
		// whether the role exists.
		return nil, awserr.New(awserr.ErrAccessDenied, "User: arn:aws:iam::%s:root is not authorized to perform: sts:AssumeRole on resource: %s", rq.h.rn.Engine.AccountID(), in.RoleArn)
	}
	if err != nil {
		return nil, err
	}
	d := 3600
	if in.DurationSeconds != nil {
		d = *in.DurationSeconds
	}
	if d > role.MaxSessionDuration {
		return nil, awserr.New(awserr.ErrValidationError, "The requested DurationSeconds exceeds the MaxSessionDuration set for this role.")
	}
	secretB := make([]byte, 30)
	rand.Read(secretB)
	tokenB := make([]byte, 120)
	rand.Read(tokenB)
	key, secret, token := newID("ASIA")[:20], base64.StdEncoding.EncodeToString(secretB), base64.StdEncoding.EncodeToString(tokenB)
	exp := rq.h.rn.Engine.Clock.Now().Add(time.Duration(d) * time.Second).UTC().Truncate(time.Second)
	arn := "arn:aws:sts::" + rq.h.rn.Engine.AccountID() + ":assumed-role/" + role.RoleName + "/" + in.RoleSessionName
	// Stored, so that verify (with Options.Auth) accepts them on every
	// node until exp (sts_sessions.go).
	if err := rq.h.storeSession(rq.ctx, key, secret, token, exp, arn, role.RoleId+":"+in.RoleSessionName); err != nil {
		return nil, err
	}
	return assumeRoleResult{
		Credentials:     credentials{AccessKeyId: key, SecretAccessKey: secret, SessionToken: token, Expiration: exp.Format(time.RFC3339)},
		AssumedRoleUser: assumedRoleUser{AssumedRoleId: role.RoleId + ":" + in.RoleSessionName, Arn: arn},
	}, nil
}
