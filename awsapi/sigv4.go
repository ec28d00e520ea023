package awsapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/runnel-dev/runnel/awserr"
)

// maxClockSkew is how far a request's X-Amz-Date may be from now, as AWS
// allows.
const maxClockSkew = 15 * time.Minute

// sigV4 is a parsed "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=...,
// Signature=..." header.
type sigV4 struct {
	accessKey, date, region, service string
	signedHeaders                    []string
	signature                        string
}

func parseAuthorization(h string) (sigV4, bool) {
	var s sigV4
	rest, ok := strings.CutPrefix(h, "AWS4-HMAC-SHA256 ")
	if !ok {
		return s, false
	}
	for _, part := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Credential":
			f := strings.Split(v, "/")
			if len(f) != 5 || f[4] != "aws4_request" {
				return s, false
			}
			s.accessKey, s.date, s.region, s.service = f[0], f[1], f[2], f[3]
		case "SignedHeaders":
			s.signedHeaders = strings.Split(v, ";")
		case "Signature":
			s.signature = v
		}
	}
	return s, s.accessKey != "" && s.signature != "" && len(s.signedHeaders) > 0
}

// authFailure is why a signature is refused.
type authFailure int

const (
	authMissing authFailure = iota // no Authorization header
	authKey                        // an access key not in Options.Auth
	authSig                        // a signature that does not match
	authExpired                    // session credentials past their expiration
)

// authError is the error for a refused signature, in the service's
// words: the JSON APIs' (Kinesis, DynamoDB, CloudWatch Logs,
// EventBridge: UnrecognizedClientException, InvalidSignatureException,
// 400) or the query services' (SQS, SNS, IAM, STS: InvalidClientTokenId,
// SignatureDoesNotMatch, MissingAuthenticationToken, 403, IAM's and STS's
// Common Errors pages).
//
// Trap: IAM and STS once answered in the JSON APIs' words, with HTTP 400,
// which their clients (botocore's query parser, the AWS CLI) do not know.
func authError(p protocol, why authFailure, msg string) *awserr.Error {
	errs := [...]*awserr.Error{awserr.ErrMissingAuthenticationToken, awserr.ErrUnrecognizedClient, awserr.ErrInvalidSignature, awserr.ErrExpiredTokenException}
	if queryAuth(p) {
		errs = [...]*awserr.Error{awserr.ErrSQSMissingAuthenticationToken, awserr.ErrInvalidClientTokenID, awserr.ErrSignatureDoesNotMatch, awserr.ErrExpiredToken}
	}
	return awserr.New(errs[why], "%s", msg)
}

// queryAuth reports the protocols whose signature errors are the query
// services' (SQS's, SNS's, IAM's, STS's), whatever their wire format.
func queryAuth(p protocol) bool {
	switch p {
	case protoSQSJSON, protoSQSQuery, protoSNS, protoSNSJSON, protoIAM, protoSTS:
		return true
	}
	return false
}

// verify checks the request's SigV4 signature against the credentials
// runnel knows (credentialSecret: Options.Auth's, the sessions STS
// AssumeRole issued, the process functions'): it computes the signature
// of the request as the client did (canonicalRequest) and compares. A
// signature comes in the Authorization header or, presigned, in the
// query (X-Amz-Algorithm, X-Amz-Credential, X-Amz-Date, X-Amz-Expires,
// X-Amz-SignedHeaders, X-Amz-Signature; the payload UNSIGNED-PAYLOAD),
// as create-signed-request.html and sigv4-query-string-auth describe.
//
// Trap: verify once re-signed a copy of the request with aws-sdk-go-v2's
// signer, which leaves out User-Agent, X-Amzn-Trace-Id, Expect and
// Transfer-Encoding even when the client signed them (the AWS SDK for
// Java v1 and the KCL sign user-agent), so correct signatures were
// refused; and it required an Authorization header, so every presigned
// URL (STS GetCallerIdentity's, `aws eks get-token`'s, Vault's) was
// refused as unsigned. The canonical headers are exactly the
// SignedHeaders the client lists, whatever they are.
func (h *Handler) verify(r *http.Request, body []byte, p protocol) error {
	q := r.URL.Query()
	var sig sigV4
	var amzDate, token string
	presigned := r.Header.Get("Authorization") == "" && q.Get("X-Amz-Algorithm") != ""
	if presigned {
		if q.Get("X-Amz-Algorithm") != "AWS4-HMAC-SHA256" {
			return authError(p, authSig, "X-Amz-Algorithm must be AWS4-HMAC-SHA256.")
		}
		f := strings.Split(q.Get("X-Amz-Credential"), "/")
		if len(f) != 5 || f[4] != "aws4_request" || f[0] == "" {
			return authError(p, authSig, "X-Amz-Credential is not <access key>/<date>/<region>/<service>/aws4_request.")
		}
		sig = sigV4{accessKey: f[0], date: f[1], region: f[2], service: f[3],
			signedHeaders: strings.Split(q.Get("X-Amz-SignedHeaders"), ";"), signature: q.Get("X-Amz-Signature")}
		amzDate, token = q.Get("X-Amz-Date"), q.Get("X-Amz-Security-Token")
	} else {
		authz := r.Header.Get("Authorization")
		if authz == "" {
			return authError(p, authMissing, "Request is missing Authentication Token")
		}
		var ok bool
		if sig, ok = parseAuthorization(authz); !ok {
			return authError(p, authSig, "Authorization header is not a valid AWS4-HMAC-SHA256 signature.")
		}
		amzDate, token = r.Header.Get("X-Amz-Date"), r.Header.Get("X-Amz-Security-Token")
	}
	secret, why, msg := h.credentialSecret(r.Context(), sig.accessKey, token)
	if msg != "" {
		return authError(p, why, msg)
	}
	t, err := time.Parse("20060102T150405Z", amzDate)
	if err != nil || !strings.HasPrefix(amzDate, sig.date) || len(sig.date) != 8 {
		return authError(p, authSig, "X-Amz-Date is missing or does not match the credential scope.")
	}
	now := h.rn.Engine.Clock.Now().UTC()
	const stamp = "20060102T150405Z"
	if t.After(now.Add(maxClockSkew)) {
		return authError(p, authSig, "Signature not yet current: "+amzDate+" is still later than "+now.Add(maxClockSkew).Format(stamp)+" ("+now.Format(stamp)+" + 15 min.)")
	}
	payloadHashes := []string{hashHex(body)}
	if presigned {
		expires, err := strconv.Atoi(q.Get("X-Amz-Expires"))
		if err != nil || expires < 1 || expires > maxPresignExpires {
			return authError(p, authSig, "X-Amz-Expires must be a number of seconds from 1 to 604800.")
		}
		if end := t.Add(time.Duration(expires) * time.Second); now.After(end) {
			return authError(p, authSig, "Signature expired: "+end.Format(stamp)+" is now earlier than "+now.Format(stamp)+" (X-Amz-Date "+amzDate+" + X-Amz-Expires "+strconv.Itoa(expires)+" sec.)")
		}
		payloadHashes = []string{unsignedPayload, payloadHashes[0]}
	} else if t.Before(now.Add(-maxClockSkew)) {
		return authError(p, authSig, "Signature expired: "+amzDate+" is now earlier than "+now.Add(-maxClockSkew).Format(stamp)+" ("+now.Format(stamp)+" - 15 min.)")
	}
	if c := r.Header.Get("X-Amz-Content-Sha256"); c != "" && c != payloadHashes[0] && !(presigned && c == unsignedPayload) {
		return authError(p, authSig, "The provided 'x-amz-content-sha256' header does not match what was computed.")
	}
	key := signingKey(secret, sig.date, sig.region, sig.service)
	scope := sig.date + "/" + sig.region + "/" + sig.service + "/aws4_request"
	for _, ph := range payloadHashes {
		cr := canonicalRequest(r, q, sig.signedHeaders, len(body), ph, presigned)
		sts := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hashHex([]byte(cr))
		want := hex.EncodeToString(hmacSHA256(key, []byte(sts)))
		if hmac.Equal([]byte(want), []byte(sig.signature)) {
			return nil
		}
	}
	return authError(p, authSig, "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.")
}

// maxPresignExpires is the longest X-Amz-Expires, seven days.
const maxPresignExpires = 604800

// unsignedPayload is the payload hash of a presigned request.
const unsignedPayload = "UNSIGNED-PAYLOAD"

// canonicalRequest is SigV4's canonical request of r: the method, the
// path URI-encoded (again: the path as sent is encoded once already,
// and every service but S3 encodes it twice), the query sorted and
// encoded (without X-Amz-Signature when presigned), exactly the headers
// named in signed, in that order, with their values trimmed and their
// inner runs of spaces made one, the signed list, and the payload's
// hash.
func canonicalRequest(r *http.Request, q url.Values, signed []string, bodyLen int, payloadHash string, presigned bool) string {
	var b strings.Builder
	b.WriteString(r.Method + "\n")
	path := r.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	b.WriteString(uriEncode(path, false) + "\n")
	var pairs [][2]string
	for k, vs := range q {
		if presigned && k == "X-Amz-Signature" {
			continue
		}
		for _, v := range vs {
			pairs = append(pairs, [2]string{uriEncode(k, true), uriEncode(v, true)})
		}
	}
	sort.Slice(pairs, func(i, j int) bool {
		return pairs[i][0] < pairs[j][0] || pairs[i][0] == pairs[j][0] && pairs[i][1] < pairs[j][1]
	})
	for i, kv := range pairs {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(kv[0] + "=" + kv[1])
	}
	b.WriteString("\n")
	for _, name := range signed {
		var vs []string
		switch name {
		case "host":
			vs = []string{r.Host}
		case "content-length":
			if vs = r.Header.Values("Content-Length"); len(vs) == 0 {
				vs = []string{strconv.Itoa(bodyLen)}
			}
		case "transfer-encoding":
			vs = r.TransferEncoding
		default:
			vs = r.Header.Values(name)
		}
		b.WriteString(name + ":")
		for i, v := range vs {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strings.Join(strings.Fields(v), " "))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n" + strings.Join(signed, ";") + "\n" + payloadHash)
	return b.String()
}

// uriEncode is SigV4's URI encoding: every byte but the unreserved
// characters (A-Z a-z 0-9 - _ . ~) as %XY, and "/" too when slash.
func uriEncode(s string, slash bool) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' || c == '/' && !slash {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

// signingKey is SigV4's key: HMAC("AWS4"+secret, date), then the region,
// the service and "aws4_request".
func signingKey(secret, date, region, service string) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), []byte(date))
	k = hmacSHA256(k, []byte(region))
	k = hmacSHA256(k, []byte(service))
	return hmacSHA256(k, []byte("aws4_request"))
}

func hmacSHA256(key, data []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(data)
	return m.Sum(nil)
}

func hashHex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
