package mapping

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
)

// One mapping per (event source, function).
//
// Lambda refuses a second mapping of the same EventSourceArn to the same
// function with 409 ResourceConflictException, naming the existing
// mapping's UUID (messages quoted in DataBiosphere/azul#3399,
// aws/serverless-application-model#1320, hashicorp/terraform-provider-aws#33352;
// localstack#9996 added the same check). The function is compared by its
// qualified ARN: fn, fn:1 and fn:alias are three functions for this rule.
//
// Within a process the rule is checked against the loaded configurations;
// across the processes of a cluster, by a claim: the bucket
// "runnel_mapping_claims" holds, under a key derived from the pair, the
// UUID of the mapping that has it, written with a create-only put (a
// compare-and-set). Of two processes creating the same pair at once, one
// gets the claim and the other a 409.

// claimStaleAfter is how old (server wall clock) a claim must be before a
// create may take it over from a mapping that does not exist or no longer
// has the pair: a process that crashed between claiming and storing its
// mapping, or after an update moved its mapping off the pair but before
// it released the claim. Younger claims are a create or update in flight
// elsewhere and answer 409.
var claimStaleAfter = time.Minute

// beforeClaim, when set (tests only), runs in CreateEventSourceMapping
// between the local check and the claim.
var beforeClaim func()

// claimKey is the claims bucket's key of the pair (source, function ARN).
func claimKey(source, functionArn string) string {
	h := sha256.Sum256([]byte(source + "\x00" + functionArn))
	return "pair_" + hex.EncodeToString(h[:])
}

// conflict is Lambda's ResourceConflictException for a pair that mapping
// holder already has; functionName is the FunctionName as given.
func conflict(cfg *Config, holder string) error {
	if cfg.sourceKind() == sourceQueue {
		return awserr.New(awserr.ErrResourceConflict, "An event source mapping with SQS arn (\" %s \") and function (\" %s \") already exists. Please update or delete the existing mapping with UUID %s",
			cfg.EventSourceArn, cfg.FunctionName, holder)
	}
	return awserr.New(awserr.ErrResourceConflict, "The event source arn (\" %s \") and function (\" %s \") provided mapping already exists. Please update or delete the existing mapping with UUID %s",
		cfg.EventSourceArn, cfg.FunctionName, holder)
}

// conflictLocked returns the 409 when a mapping other than cfg.UUID,
// among those this process has loaded, has cfg's source and function
// (cfg.FunctionArn resolved).
func (s *Service) conflictLocked(cfg *Config) error {
	for _, c := range s.configs {
		if c.UUID != cfg.UUID && c.EventSourceArn == cfg.EventSourceArn && c.FunctionArn == cfg.FunctionArn {
			return conflict(cfg, c.UUID)
		}
	}
	return nil
}

// claimPair records, cluster-wide, that mapping cfg.UUID has the pair
// (cfg.EventSourceArn, cfg.FunctionArn), or returns the 409 naming the
// mapping that has it. A stale claim (claimStaleAfter) is taken over by
// compare-and-set.
func (s *Service) claimPair(ctx context.Context, cfg *Config) error {
	key := claimKey(cfg.EventSourceArn, cfg.FunctionArn)
	for range 10 {
		_, err := s.claims.Create(ctx, key, []byte(cfg.UUID))
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return awserr.New(awserr.ErrService, "claim mapping pair: %v", err)
		}
		e, err := s.claims.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // released meanwhile
		}
		if err != nil {
			return awserr.New(awserr.ErrService, "claim mapping pair: %v", err)
		}
		holder := string(e.Value())
		if holder == cfg.UUID {
			return nil
		}
		if s.holdsPair(ctx, holder, cfg) || time.Since(e.Created()) < claimStaleAfter {
			return conflict(cfg, holder)
		}
		if _, err := s.claims.Update(ctx, key, []byte(cfg.UUID), e.Revision()); err == nil {
			return nil
		}
		// Another process changed the claim meanwhile: look again.
	}
	return awserr.New(awserr.ErrService, "claim mapping pair: contended")
}

// holdsPair tells whether the stored mapping id has cfg's source and
// function.
func (s *Service) holdsPair(ctx context.Context, id string, cfg *Config) bool {
	e, err := s.kv.Get(ctx, id)
	if err != nil {
		return false
	}
	var c Config
	if json.Unmarshal(e.Value(), &c) != nil {
		return false
	}
	return c.EventSourceArn == cfg.EventSourceArn && c.FunctionArn == cfg.FunctionArn
}

// releasePair removes mapping id's claim of the pair (source,
// functionArn), if it still has it. Errors (a claim changed meanwhile
// included) are logged: a claim left behind goes stale (claimStaleAfter).
func (s *Service) releasePair(ctx context.Context, id, source, functionArn string) {
	key := claimKey(source, functionArn)
	e, err := s.claims.Get(ctx, key)
	if err != nil || string(e.Value()) != id {
		return
	}
	if err := s.claims.Delete(ctx, key, jetstream.LastRevision(e.Revision())); err != nil {
		s.eng.Logger.Warn("mapping pair claim not released", "mapping", id, "err", err)
	}
}
