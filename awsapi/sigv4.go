package awsapi

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
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
)

// authError is the error for a refused signature, in the service's
// words: the JSON APIs' (Kinesis, DynamoDB) or SQS's.
func authError(p protocol, why authFailure, msg string) *awserr.Error {
	errs := [...]*awserr.Error{awserr.ErrMissingAuthenticationToken, awserr.ErrUnrecognizedClient, awserr.ErrInvalidSignature}
	if p == protoSQSJSON || p == protoSQSQuery || p == protoSNS || p == protoSNSJSON {
		errs = [...]*awserr.Error{awserr.ErrSQSMissingAuthenticationToken, awserr.ErrInvalidClientTokenID, awserr.ErrSignatureDoesNotMatch}
	}
	return awserr.New(errs[why], "%s", msg)
}

// verify checks the request's SigV4 signature against opts.Auth: it signs
// a copy of the request holding only the headers the client signed, with
// the secret of the client's access key, using aws-sdk-go-v2's signer, and
// compares the signatures.
func (h *Handler) verify(r *http.Request, body []byte, p protocol) error {
	authz := r.Header.Get("Authorization")
	if authz == "" {
		return authError(p, authMissing, "Request is missing Authentication Token")
	}
	sig, ok := parseAuthorization(authz)
	if !ok {
		return authError(p, authSig, "Authorization header is not a valid AWS4-HMAC-SHA256 signature.")
	}
	secret, ok := h.opts.Auth[sig.accessKey]
	if !ok {
		return authError(p, authKey, "The security token included in the request is invalid.")
	}
	amzDate := r.Header.Get("X-Amz-Date")
	t, err := time.Parse("20060102T150405Z", amzDate)
	if err != nil || !strings.HasPrefix(amzDate, sig.date) {
		return authError(p, authSig, "X-Amz-Date is missing or does not match the credential scope.")
	}
	if d := time.Since(t); d > maxClockSkew || d < -maxClockSkew {
		return authError(p, authSig, "Signature expired: "+amzDate+" is more than 15 minutes from the server's time.")
	}
	payloadHash := r.Header.Get("X-Amz-Content-Sha256")
	if payloadHash == "" {
		sum := sha256.Sum256(body)
		payloadHash = hex.EncodeToString(sum[:])
	}
	u := &url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
	if u.Path == "" {
		u.Path = "/"
	}
	cp, err := http.NewRequest(r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return authError(p, authSig, "request URL: "+err.Error())
	}
	cp.Host = r.Host
	cp.ContentLength = 0
	for _, name := range sig.signedHeaders {
		switch name {
		case "host":
		case "content-length":
			cp.ContentLength = int64(len(body))
		default:
			if vs, ok := r.Header[http.CanonicalHeaderKey(name)]; ok {
				cp.Header[http.CanonicalHeaderKey(name)] = vs
			}
		}
	}
	creds := aws.Credentials{AccessKeyID: sig.accessKey, SecretAccessKey: secret, SessionToken: cp.Header.Get("X-Amz-Security-Token")}
	if err := v4.NewSigner().SignHTTP(r.Context(), creds, cp, payloadHash, sig.service, sig.region, t); err != nil {
		return authError(p, authSig, "signing: "+err.Error())
	}
	want, ok := parseAuthorization(cp.Header.Get("Authorization"))
	if !ok || !hmac.Equal([]byte(want.signature), []byte(sig.signature)) {
		return authError(p, authSig, "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.")
	}
	return nil
}
