package awsapi

// The credentials runnel issues itself, which verify (sigv4.go) accepts
// with Options.Auth's: the session credentials of STS AssumeRole, stored
// in the KV bucket stsSessionsBucket so that every node of a cluster
// accepts them until their Expiration (then ExpiredToken, as AWS
// answers); and the process functions' (functionCredentials).

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"regexp"
	"time"
)

// stsSessionsBucket holds AssumeRole's session credentials, key = the
// access key id.
const stsSessionsBucket = "runnel_sts_sessions"

// stsSession is a stored session: the secret (verify signs with it), the
// token's SHA-256 (a request must carry the token), when it expires, and
// whose it is.
type stsSession struct {
	SecretAccessKey string
	TokenSHA256     string
	Expiration      time.Time
	Arn             string
}

// sessionKeyRE is an access key id AssumeRole issues (newID("ASIA")[:20]),
// the only ones looked up in stsSessionsBucket.
var sessionKeyRE = regexp.MustCompile(`^ASIA[A-Z2-7]{16}$`)

// storeSession records session credentials before AssumeRole returns
// them.
func (h *Handler) storeSession(ctx context.Context, key, secret, token string, exp time.Time, arn string) error {
	kv, err := h.rn.Engine.Bucket(ctx, stsSessionsBucket)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(stsSession{SecretAccessKey: secret, TokenSHA256: tokenHash(token), Expiration: exp, Arn: arn})
	_, err = kv.Create(ctx, key, b)
	return err
}

func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// credentialSecret returns the secret of access key id key, whose
// request carries session token token: Options.Auth's; the process
// functions' (functionCredentials); a session AssumeRole issued (its
// token required, refused once expired by the engine's clock). msg is
// not empty when the key is refused, why saying how.
//
// Trap: with --auth, the sessions AssumeRole issued were refused by
// every service (only Options.Auth's keys were known), and so were the
// process functions' fixed credentials: every SDK call a function made
// back to runnel failed.
func (h *Handler) credentialSecret(ctx context.Context, key, token string) (secret string, why authFailure, msg string) {
	const invalid = "The security token included in the request is invalid."
	if s, ok := h.opts.Auth[key]; ok {
		return s, 0, ""
	}
	if fc := h.fnCreds; fc != nil && key == fc.key {
		return fc.secret, 0, ""
	}
	if !sessionKeyRE.MatchString(key) {
		return "", authKey, invalid
	}
	s, err := h.session(ctx, key)
	if err != nil {
		return "", authKey, invalid
	}
	if subtle.ConstantTimeCompare([]byte(tokenHash(token)), []byte(s.TokenSHA256)) != 1 {
		return "", authKey, invalid
	}
	if !h.rn.Engine.Clock.Now().Before(s.Expiration) {
		return "", authExpired, "The security token included in the request is expired"
	}
	return s.SecretAccessKey, 0, ""
}

// session reads the session of key, from the cache or the bucket (a
// session never changes once issued, so a cached one is as good).
func (h *Handler) session(ctx context.Context, key string) (*stsSession, error) {
	if s, ok := h.sessions.Load(key); ok {
		return s.(*stsSession), nil
	}
	kv, err := h.rn.Engine.Bucket(ctx, stsSessionsBucket)
	if err != nil {
		return nil, err
	}
	e, err := kv.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	var s stsSession
	if err := json.Unmarshal(e.Value(), &s); err != nil {
		return nil, err
	}
	h.sessions.Store(key, &s)
	return &s, nil
}

// functionCreds are the credentials runnel gives its process functions
// under Options.Auth.
type functionCreds struct{ key, secret string }

// functionCredentials makes the process functions' credentials when
// Options.Auth is set: an access key and secret of this Handler alone,
// random, kept in memory only and never stored, and returns the
// functions' endpoint carrying them as its userinfo
// (http://KEY:SECRET@host:port), which package process turns into
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_ENDPOINT_URL
// without them). A function calls the node that runs it (its
// AWS_ENDPOINT_URL), whose Handler knows them; they die with it, and the
// functions restarted by the next one get new ones.
//
// Why not the functions' fixed runnel/runnel credentials, accepted:
// they are public, so --auth would let anyone in with them. Why not one
// of the --auth keys: the operator's long-lived secret would sit in
// every function's environment, for its code to read.
func functionCredentials(endpoint string) (*functionCreds, string) {
	u, err := url.Parse(endpoint)
	if endpoint == "" || err != nil {
		return nil, endpoint
	}
	secret := make([]byte, 30)
	rand.Read(secret)
	fc := &functionCreds{key: newID("AKIA")[:20], secret: base64.RawURLEncoding.EncodeToString(secret)}
	u.User = url.UserPassword(fc.key, fc.secret)
	return fc, u.String()
}
