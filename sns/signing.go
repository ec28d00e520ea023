package sns

// The key that signs envelopes: one for every process on the JetStream,
// stored, so a signature verifies after a restart and whichever node
// serves the certificate.

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// signingBucket holds the signing key (key signingKey): made by the
// first process that signs, with a create-only write, so every process
// on the JetStream signs with it. (An emulator's key, stored in clear.)
const (
	signingBucket = "runnel_sns_signing"
	signingKey    = "key"
)

// Certificate paths: "/SimpleNotificationService-<hash>.pem", the hash
// being the first 16 bytes of the certificate's SHA-256 in hex, as AWS
// names each certificate by its hash
// (sns-verify-signature-of-message.html).
const (
	certPrefix = "/SimpleNotificationService-"
	certSuffix = ".pem"
)

// IsCertPath reports whether path has the form of a SigningCertURL's
// path ("/SimpleNotificationService-<hash>.pem").
func IsCertPath(path string) bool {
	return strings.HasPrefix(path, certPrefix) && strings.HasSuffix(path, certSuffix) && len(path) > len(certPrefix)+len(certSuffix)
}

// signer signs envelopes.
type signer struct {
	key  *rsa.PrivateKey
	cert []byte // PEM
	path string // SigningCertURL's path
}

// storedSigner is the signing key as the bucket stores it.
type storedSigner struct {
	Key  []byte `json:"key"`  // PKCS #8 DER
	Cert []byte `json:"cert"` // PEM
}

// signer returns the signing key, loaded (or made and stored) at its
// first use, not at New: a 2048-bit key takes a moment, which every
// short-lived CLI command would pay. An error (the JetStream
// unreachable) is not kept: the next signature tries again. A Service
// without an engine (a unit test) makes a key of its own.
func (s *Service) signer() (*signer, error) {
	s.signMu.Lock()
	defer s.signMu.Unlock()
	if s.sg != nil {
		return s.sg, nil
	}
	var (
		sg  *signer
		err error
	)
	if s.eng == nil {
		var st *storedSigner
		if st, err = newStoredSigner(); err == nil {
			sg, err = st.signer()
		}
	} else {
		ctx, cancel := context.WithTimeout(s.bg, 30*time.Second)
		defer cancel()
		sg, err = s.sharedSigner(ctx)
	}
	if err != nil {
		return nil, err
	}
	s.sg = sg
	return sg, nil
}

// sharedSigner reads the stored key, or makes one and stores it unless
// another process stored one first (which it then reads).
func (s *Service) sharedSigner(ctx context.Context) (*signer, error) {
	kv, err := s.eng.Bucket(ctx, signingBucket)
	if err != nil {
		return nil, err
	}
	for range 3 {
		e, err := kv.Get(ctx, signingKey)
		if err == nil {
			var st storedSigner
			if err := json.Unmarshal(e.Value(), &st); err != nil {
				return nil, fmt.Errorf("the stored signing key does not decode: %w", err)
			}
			return st.signer()
		}
		if !errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, err
		}
		st, err := newStoredSigner()
		if err != nil {
			return nil, err
		}
		b, _ := json.Marshal(st)
		if _, err := kv.Create(ctx, signingKey, b); err == nil {
			return st.signer()
		} else if !errors.Is(err, jetstream.ErrKeyExists) {
			return nil, err
		}
		// Another process stored its key first: read it.
	}
	return nil, errors.New("the signing key could not be stored nor read")
}

// newStoredSigner makes an RSA-2048 key and a self-signed certificate
// for it (subscribers that check signatures fetch it from
// SigningCertURL).
func newStoredSigner() (*storedSigner, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sns.amazonaws.com"},
		NotBefore: time.Unix(0, 0), NotAfter: time.Now().AddDate(20, 0, 0)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &storedSigner{Key: pk, Cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

func (st *storedSigner) signer() (*signer, error) {
	k, err := x509.ParsePKCS8PrivateKey(st.Key)
	if err != nil {
		return nil, fmt.Errorf("the stored signing key does not parse: %w", err)
	}
	key, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, errors.New("the stored signing key is not an RSA key")
	}
	block, _ := pem.Decode(st.Cert)
	if block == nil {
		return nil, errors.New("the stored signing certificate is not PEM")
	}
	h := sha256.Sum256(block.Bytes)
	return &signer{key: key, cert: st.Cert, path: certPrefix + hex.EncodeToString(h[:16]) + certSuffix}, nil
}

// SigningCertPEM is the certificate (PEM) that verifies the envelopes'
// signatures, the same for every process on the JetStream; nil when the
// signing key cannot be read.
func (s *Service) SigningCertPEM() []byte {
	sg, err := s.signer()
	if err != nil {
		s.log.Error("sns: no signing key", "err", err)
		return nil
	}
	return sg.cert
}

// SigningCert returns the certificate (PEM) served at path, a
// SigningCertURL's path ("/SimpleNotificationService-<hash>.pem"); ok is
// false for a path of no certificate (HTTP 404).
func (s *Service) SigningCert(path string) (pem []byte, ok bool) {
	sg, err := s.signer()
	if err != nil || path != sg.path {
		return nil, false
	}
	return sg.cert, true
}

// SigningCertPath is SigningCertURL's path: "/SimpleNotificationService-"
// and the first 16 bytes of the certificate's SHA-256 in hex, ".pem";
// "" when the signing key cannot be read.
func (s *Service) SigningCertPath() string {
	sg, err := s.signer()
	if err != nil {
		return ""
	}
	return sg.path
}
