package stream

// Stream settings runnel stores and reports but does not act on:
// enhanced (shard-level) monitoring, which on AWS publishes CloudWatch
// metrics, and server-side encryption, which on AWS encrypts records
// with a KMS key. runnel publishes no CloudWatch metrics and encrypts
// nothing: EncryptionType KMS is a label in DescribeStream and
// DescribeStreamSummary only (records read back still say
// EncryptionType NONE, which is what they are).

import (
	"context"
	"slices"
	"strings"

	"github.com/runnel-dev/runnel/awserr"
)

// ShardLevelMetrics are the metrics of EnableEnhancedMonitoring, in
// AWS's order; "ALL" stands for all of them (API_EnhancedMetrics).
var ShardLevelMetrics = []string{"IncomingBytes", "IncomingRecords", "OutgoingBytes", "OutgoingRecords",
	"WriteProvisionedThroughputExceeded", "ReadProvisionedThroughputExceeded", "IteratorAgeMilliseconds"}

// Encryption types (API_StartStreamEncryption) and the KeyId's length.
const (
	EncryptionKMS  = "KMS"
	EncryptionNone = "NONE"
	MaxKeyIDLength = 2048
)

// MonitoringOutput is EnableEnhancedMonitoring's and
// DisableEnhancedMonitoring's result: the metrics before and after.
type MonitoringOutput struct {
	CurrentShardLevelMetrics, DesiredShardLevelMetrics []string
}

// EnableEnhancedMonitoring adds shard-level metrics to a stream's
// (1..7 names of ShardLevelMetrics, or ALL). A stream that is not ACTIVE
// is ResourceInUseException, as for every setting here (updateDesc).
func (s *Service) EnableEnhancedMonitoring(ctx context.Context, streamName string, metrics []string) (*MonitoringOutput, error) {
	return s.setMonitoring(ctx, streamName, metrics, true)
}

// DisableEnhancedMonitoring removes shard-level metrics from a stream's.
func (s *Service) DisableEnhancedMonitoring(ctx context.Context, streamName string, metrics []string) (*MonitoringOutput, error) {
	return s.setMonitoring(ctx, streamName, metrics, false)
}

func (s *Service) setMonitoring(ctx context.Context, streamName string, metrics []string, enable bool) (*MonitoringOutput, error) {
	if len(metrics) < 1 || len(metrics) > len(ShardLevelMetrics) {
		return nil, awserr.OutOfRange(awserr.ErrInvalidArgument, "ShardLevelMetrics", len(metrics), 1, len(ShardLevelMetrics))
	}
	given := map[string]bool{}
	for _, m := range metrics {
		switch {
		case m == "ALL":
			for _, a := range ShardLevelMetrics {
				given[a] = true
			}
		case slices.Contains(ShardLevelMetrics, m):
			given[m] = true
		default:
			return nil, invalidArg("1 validation error detected: Value '[%s]' at 'shardLevelMetrics' failed to satisfy constraint: Member must satisfy constraint: [Member must satisfy enum value set: [%s, ALL]]", m, strings.Join(ShardLevelMetrics, ", "))
		}
	}
	out := &MonitoringOutput{}
	err := s.updateDesc(ctx, streamName, func(d *StreamDescription) error {
		out.CurrentShardLevelMetrics = append([]string{}, d.ShardLevelMetrics...)
		var next []string
		for _, m := range ShardLevelMetrics { // AWS's order
			had := slices.Contains(d.ShardLevelMetrics, m)
			keep := had || given[m]
			if !enable {
				keep = had && !given[m]
			}
			if keep {
				next = append(next, m)
			}
		}
		d.ShardLevelMetrics = next
		out.DesiredShardLevelMetrics = append([]string{}, next...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// StartStreamEncryption records that a stream is encrypted with the KMS
// key keyID (EncryptionType must be KMS; KeyId 1..2048 characters). runnel
// encrypts nothing.
func (s *Service) StartStreamEncryption(ctx context.Context, streamName, encryptionType, keyID string) error {
	return s.setEncryption(ctx, streamName, encryptionType, keyID, EncryptionKMS)
}

// StopStreamEncryption records that a stream is no longer encrypted
// (EncryptionType KMS and the KeyId, as AWS requires them).
func (s *Service) StopStreamEncryption(ctx context.Context, streamName, encryptionType, keyID string) error {
	return s.setEncryption(ctx, streamName, encryptionType, keyID, "")
}

// setEncryption checks a Start/StopStreamEncryption request and stores
// the stream's new EncryptionType ("" for NONE).
func (s *Service) setEncryption(ctx context.Context, streamName, encryptionType, keyID, to string) error {
	if err := checkEncryption(encryptionType, keyID); err != nil {
		return err
	}
	return s.updateDesc(ctx, streamName, func(d *StreamDescription) error {
		d.EncryptionType, d.KeyID = to, keyID
		if to == "" {
			d.KeyID = ""
		}
		return nil
	})
}

func checkEncryption(encryptionType, keyID string) error {
	if encryptionType != EncryptionKMS {
		return invalidArg("EncryptionType: value %q must be KMS", encryptionType)
	}
	if len(keyID) < 1 || len(keyID) > MaxKeyIDLength {
		return awserr.OutOfRange(awserr.ErrInvalidArgument, "KeyId length", len(keyID), 1, MaxKeyIDLength)
	}
	return nil
}

// active refuses a change to a stream that is not ACTIVE.
func (s *Service) active(d *StreamDescription) error {
	if d.StreamStatus != StatusActive {
		return awserr.New(awserr.ErrResourceInUse, "Stream %s under account %s not ACTIVE, instead in state %s", d.StreamName, s.eng.AccountID(), d.StreamStatus)
	}
	return nil
}

// Encryption returns a stream's EncryptionType (NONE or KMS) and KeyId.
func (d *StreamDescription) Encryption() (encryptionType, keyID string) {
	if d.EncryptionType == "" {
		return EncryptionNone, ""
	}
	return d.EncryptionType, d.KeyID
}
