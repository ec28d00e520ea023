package awsapi

// The credentials runnel issues itself, which verify (sigv4.go) accepts
// with Options.Auth's: the session credentials of STS AssumeRole, stored
// in the KV bucket stsSessionsBucket so that every node of a cluster
// accepts them until their Expiration (then ExpiredToken, as AWS
// answers), and removed by JetStream sessionRemovalMargin after it (a
// per-key TTL); and the process functions' (functionCredentials).

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// stsSessionsBucket holds AssumeRole's session credentials, key = the
// access key id.
const stsSessionsBucket = "runnel_sts_sessions"

// stsSession is a stored session: the secret (verify signs with it), the
// token's SHA-256 (a request must carry the token), when it expires, and
// whose it is (the assumed role's ARN and id, role id ":" session name,
// which GetCallerIdentity answers).
type stsSession struct {
	SecretAccessKey string
	TokenSHA256     string
	Expiration      time.Time
	Arn             string
	AssumedRoleId   string `json:",omitempty"`
}

// sessionKeyRE is an access key id AssumeRole issues (newID("ASIA")[:20]),
// the only ones looked up in stsSessionsBucket.
var sessionKeyRE = regexp.MustCompile(`^ASIA[A-Z2-7]{16}$`)

const (
	// sessionRemovalMargin is how long a session stays stored after its
	// Expiration (answering ExpiredToken, as AWS answers an expired
	// token) before JetStream removes it; a key presented after that is
	// unknown (InvalidClientTokenId). Its TTL is counted on the
	// JetStream server's clock, its expiry on the engine's: the margin
	// also covers a difference between the two, and an engine clock
	// that is fake (tests) still decides expiry alone.
	//
	// Trap: sessions were stored without a TTL and stayed in the bucket
	// for ever, one for every AssumeRole.
	sessionRemovalMargin = 24 * time.Hour
	// sessionMarkerTTL is how long the bucket keeps the delete marker a
	// removal leaves (its LimitMarkerTTL, which allows per-key TTLs).
	sessionMarkerTTL = time.Hour
)

// sessionBucket opens stsSessionsBucket with per-key TTLs allowed
// (LimitMarkerTTL), creating it, or changing a bucket made without them
// (an older runnel's). Not Engine.Bucket: that one would open it without
// TTLs, a change JetStream refuses once they are allowed.
func (h *Handler) sessionBucket(ctx context.Context) (jetstream.KeyValue, error) {
	e := h.rn.Engine
	cfg := jetstream.KeyValueConfig{Bucket: stsSessionsBucket, Storage: jetstream.FileStorage, Replicas: e.Replicas(), History: 1, LimitMarkerTTL: sessionMarkerTTL}
	kv, err := e.EnsureBucket(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if st, err := kv.Status(ctx); err == nil && st.LimitMarkerTTL() == 0 {
		// An existing bucket a cluster node opened without changing it
		// (Engine.ensure only creates there): allow TTLs.
		bs, ok := st.(*jetstream.KeyValueBucketStatus)
		if !ok {
			return kv, nil
		}
		sc := bs.StreamInfo().Config
		sc.AllowMsgTTL, sc.SubjectDeleteMarkerTTL, sc.AllowRollup = true, sessionMarkerTTL, true
		if _, err := e.UpdateStream(ctx, sc); err != nil {
			return nil, err
		}
	}
	return kv, nil
}

// storeSession records session credentials before AssumeRole returns
// them, with a TTL of their duration (by the engine's clock) and
// sessionRemovalMargin, and drops this node's cached sessions that have
// expired.
func (h *Handler) storeSession(ctx context.Context, key, secret, token string, exp time.Time, arn, roleID string) error {
	kv, err := h.sessionBucket(ctx)
	if err != nil {
		return err
	}
	now := h.rn.Engine.Clock.Now()
	b, _ := json.Marshal(stsSession{SecretAccessKey: secret, TokenSHA256: tokenHash(token), Expiration: exp, Arn: arn, AssumedRoleId: roleID})
	ttl := exp.Sub(now) + sessionRemovalMargin
	if r := ttl % time.Second; r > 0 {
		ttl += time.Second - r // whole seconds, never before the engine's clock says the session is gone
	}
	if _, err = kv.Create(ctx, key, b, jetstream.KeyTTL(ttl)); err != nil {
		return err
	}
	h.sessions.Range(func(k, v any) bool {
		if !now.Before(v.(*stsSession).Expiration) {
			h.sessions.Delete(k) // read again from the bucket if presented
		}
		return true
	})
	return nil
}

func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// credentialSecret returns the secret of access key id key, whose
// request carries session token token: Options.Auth's; the process
// functions' (functionCredentials); a session AssumeRole issued (its
// token required, refused once expired by the engine's clock with
// ExpiredToken, and as an unknown key sessionRemovalMargin later). msg is
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
// session never changes once issued, so a cached one is as good). It
// reads from the bucket stream's leader: a session issued through
// another node is there at once. A session sessionRemovalMargin past its
// Expiration by the engine's clock is gone, whether JetStream has removed
// it yet or not (its TTL runs on the server's clock). Errors:
// jetstream.ErrKeyNotFound for a key never issued, or gone.
func (h *Handler) session(ctx context.Context, key string) (*stsSession, error) {
	gone := func(s *stsSession) bool {
		return !h.rn.Engine.Clock.Now().Before(s.Expiration.Add(sessionRemovalMargin))
	}
	if s, ok := h.sessions.Load(key); ok {
		if !gone(s.(*stsSession)) {
			return s.(*stsSession), nil
		}
		h.sessions.Delete(key)
		return nil, jetstream.ErrKeyNotFound
	}
	m, err := h.rn.Engine.LeaderLastMsg(ctx, "KV_"+stsSessionsBucket, "$KV."+stsSessionsBucket+"."+key)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, jetstream.ErrKeyNotFound
	}
	if err != nil {
		return nil, err
	}
	if m.Header.Get("KV-Operation") != "" || m.Header.Get("Nats-Marker-Reason") != "" {
		return nil, jetstream.ErrKeyNotFound // deleted, or removed by its TTL
	}
	var s stsSession
	if err := json.Unmarshal(m.Data, &s); err != nil {
		return nil, err
	}
	if gone(&s) {
		return nil, jetstream.ErrKeyNotFound
	}
	h.sessions.Store(key, &s)
	return &s, nil
}

// callerSession is the session whose credentials signed the request
// (in the Authorization header or a presigned URL's query), with its
// session token; nil for any other credentials, an unknown or gone
// session, or another token. Without Options.Auth the signature itself
// is not checked, as for every request.
func (rq *request) callerSession() *stsSession {
	r := rq.r
	key, token := "", r.Header.Get("X-Amz-Security-Token")
	if sig, ok := parseAuthorization(r.Header.Get("Authorization")); ok {
		key = sig.accessKey
	} else if q := r.URL.Query(); q.Get("X-Amz-Credential") != "" {
		key, _, _ = strings.Cut(q.Get("X-Amz-Credential"), "/")
		token = q.Get("X-Amz-Security-Token")
	}
	if !sessionKeyRE.MatchString(key) {
		return nil
	}
	s, err := rq.h.session(rq.ctx, key)
	if err != nil || subtle.ConstantTimeCompare([]byte(tokenHash(token)), []byte(s.TokenSHA256)) != 1 || !strings.Contains(s.Arn, ":assumed-role/") {
		return nil
	}
	return s
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
