package function

// Function URL configurations: a fixed, random URL id per function (or
// alias) that runnel's endpoint serves (awsapi/lambda_url_serve.go).
// Stored in KV bucket "runnel_function_urls", key "<function>" or
// "<function>.<alias>"; deleted with the function or the alias.
// https://docs.aws.amazon.com/lambda/latest/dg/urls-configuration.html
// https://docs.aws.amazon.com/lambda/latest/api/API_CreateFunctionUrlConfig.html

import (
	"context"
	"crypto/rand"
	"slices"
	"strings"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/engine"
)

const urlsBucket = "runnel_function_urls"

// Function URL auth types and invoke modes.
const (
	URLAuthNone    = "NONE"
	URLAuthIAM     = "AWS_IAM"
	InvokeBuffered = "BUFFERED"
)

// URLConfig is a function URL's configuration (API_FunctionUrlConfig,
// without the URL itself, which depends on the endpoint's address).
type URLConfig struct {
	// URLID is the URL's host label: 32 characters of [a-z0-9], fixed
	// for the URL's life.
	URLID string
	// FunctionName and Qualifier ("" or an alias) are what it invokes;
	// FunctionArn is their ARN.
	FunctionName, Qualifier, FunctionArn string
	// AuthType: NONE (anyone) or AWS_IAM (a signed request). Required.
	AuthType string
	// Cors: the CORS headers the URL answers with (nil: none).
	Cors *URLCors `json:",omitempty"`
	// InvokeMode: BUFFERED (the default; RESPONSE_STREAM is refused).
	InvokeMode string
	// CreationTime and LastModifiedTime: ISO 8601.
	CreationTime, LastModifiedTime string
}

// URLCors is a function URL's CORS configuration (API_Cors): origins,
// methods and headers allowed (at most 100 each, methods 6; "*" for
// any), headers exposed, MaxAge in seconds (0..86400, default 0), and
// AllowCredentials (default false).
type URLCors struct {
	AllowCredentials                                        *bool    `json:",omitempty"`
	AllowHeaders, AllowMethods, AllowOrigins, ExposeHeaders []string `json:",omitempty"`
	MaxAge                                                  *int     `json:",omitempty"`
}

// URLUpdate is UpdateFunctionUrlConfig's change: nil fields are kept.
type URLUpdate struct {
	AuthType, InvokeMode *string
	Cors                 *URLCors
}

func urlKey(name, qualifier string) string {
	if qualifier == "" {
		return name
	}
	return name + "." + qualifier
}

// checkURLTarget checks function name and qualifier (none, $LATEST or an
// alias; a version number is refused as Lambda refuses it) and returns
// the qualifier to store.
func (s *Service) checkURLTarget(name, qualifier string) (string, error) {
	if qualifier == Latest {
		qualifier = ""
	}
	if versionRE.MatchString(qualifier) {
		return "", awserr.New(awserr.ErrInvalidParameterValue, "Qualifier: %s is a version; a function URL is on the function ($LATEST) or an alias", qualifier)
	}
	if _, err := s.docKey(name, qualifier); err != nil {
		return "", err
	}
	return qualifier, nil
}

func (s *Service) checkURL(c *URLConfig) error {
	switch c.AuthType {
	case URLAuthNone, URLAuthIAM:
	default:
		return awserr.New(awserr.ErrInvalidParameterValue, "AuthType: %q must be NONE or AWS_IAM", c.AuthType)
	}
	if c.InvokeMode == "" {
		c.InvokeMode = InvokeBuffered
	}
	if c.InvokeMode != InvokeBuffered {
		return awserr.New(awserr.ErrInvalidParameterValue, "InvokeMode: %q is not supported by runnel: only BUFFERED", c.InvokeMode)
	}
	return nil
}

// CreateURLConfig creates the URL of function name (qualifier: of an
// alias). Errors: ResourceNotFound, ResourceConflict when it has one,
// InvalidParameterValue for AuthType, InvokeMode or a version qualifier.
func (s *Service) CreateURLConfig(ctx context.Context, name, qualifier string, c URLConfig) (*URLConfig, error) {
	q, err := s.checkURLTarget(name, qualifier)
	if err != nil {
		return nil, err
	}
	if err := s.checkURL(&c); err != nil {
		return nil, err
	}
	s.docMu.Lock()
	defer s.docMu.Unlock()
	c.FunctionName, c.Qualifier, c.FunctionArn = name, q, s.QualifiedARN(name, q)
	c.URLID = strings.ToLower(rand.Text()[:26]) + strings.ToLower(rand.Text()[:6])
	c.CreationTime = s.eng.Clock.Now().UTC().Format("2006-01-02T15:04:05.000000Z")
	c.LastModifiedTime = c.CreationTime
	if _, err := s.urlkv.Create(ctx, urlKey(name, q), mustJSON(c)); err != nil {
		return nil, awserr.New(awserr.ErrResourceConflict, "Failed to create function url config for [functionArn = %s]. Error message:  FunctionUrlConfig exists for this Lambda function", c.FunctionArn)
	}
	s.urlIDs.Store(c.URLID, urlKey(name, q))
	return &c, nil
}

// GetURLConfig returns the URL of function name (or of its alias), or
// ResourceNotFound ("The resource you requested does not exist.").
func (s *Service) GetURLConfig(ctx context.Context, name, qualifier string) (*URLConfig, error) {
	q, err := s.checkURLTarget(name, qualifier)
	if err != nil {
		return nil, err
	}
	var c URLConfig
	if ok, err := loadDoc(ctx, s.urlkv, urlKey(name, q), &c); err != nil || !ok {
		return nil, cmpErr(err, awserr.New(awserr.ErrResourceNotFound, "The resource you requested does not exist."))
	}
	return &c, nil
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// UpdateURLConfig changes the URL of function name (errors as Get and
// Create).
func (s *Service) UpdateURLConfig(ctx context.Context, name, qualifier string, u URLUpdate) (*URLConfig, error) {
	s.docMu.Lock()
	defer s.docMu.Unlock()
	c, err := s.GetURLConfig(ctx, name, qualifier)
	if err != nil {
		return nil, err
	}
	setPtr(&c.AuthType, u.AuthType)
	setPtr(&c.InvokeMode, u.InvokeMode)
	if u.Cors != nil {
		c.Cors = u.Cors
	}
	if err := s.checkURL(c); err != nil {
		return nil, err
	}
	c.LastModifiedTime = s.eng.Clock.Now().UTC().Format("2006-01-02T15:04:05.000000Z")
	if _, err := s.urlkv.Put(ctx, urlKey(name, c.Qualifier), mustJSON(c)); err != nil {
		return nil, awserr.New(awserr.ErrService, "store function url: %v", err)
	}
	return c, nil
}

// DeleteURLConfig deletes the URL of function name (or of its alias).
func (s *Service) DeleteURLConfig(ctx context.Context, name, qualifier string) error {
	c, err := s.GetURLConfig(ctx, name, qualifier)
	if err != nil {
		return err
	}
	s.urlIDs.Delete(c.URLID)
	return s.urlkv.Purge(ctx, urlKey(name, c.Qualifier))
}

// ListURLConfigs returns the URLs of function name and its aliases.
func (s *Service) ListURLConfigs(name string) ([]URLConfig, error) {
	if _, err := s.docKey(name, ""); err != nil {
		return nil, err
	}
	return s.urlConfigs(name), nil
}

func (s *Service) urlConfigs(name string) []URLConfig {
	var out []URLConfig
	engine.LoadJSON(context.Background(), s.urlkv, func(key string, c URLConfig, err error) {
		if err == nil && (name == "" || c.FunctionName == name) {
			out = append(out, c)
		}
	})
	slices.SortFunc(out, func(a, b URLConfig) int { return strings.Compare(a.FunctionArn, b.FunctionArn) })
	return out
}

// URLByID returns the configuration of the URL whose id is id, or false.
func (s *Service) URLByID(ctx context.Context, id string) (*URLConfig, bool) {
	key, ok := s.urlIDs.Load(id)
	if !ok {
		return nil, false
	}
	var c URLConfig
	if ok, err := loadDoc(ctx, s.urlkv, key.(string), &c); err != nil || !ok || c.URLID != id {
		return nil, false
	}
	return &c, true
}

// loadURLs fills the index of URL ids (NewService).
func (s *Service) loadURLs() {
	for _, c := range s.urlConfigs("") {
		s.urlIDs.Store(c.URLID, urlKey(c.FunctionName, c.Qualifier))
	}
}

// purgeURLs deletes the URLs of function name (qualifier "": all of
// them, else its alias qualifier's).
func (s *Service) purgeURLs(ctx context.Context, name, qualifier string) {
	for _, c := range s.urlConfigs(name) {
		if qualifier == "" || c.Qualifier == qualifier {
			s.urlIDs.Delete(c.URLID)
			s.urlkv.Purge(ctx, urlKey(name, c.Qualifier))
		}
	}
}
