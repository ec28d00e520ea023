// Package stack reads a stack file: YAML that declares streams, functions
// and event source mappings with the AWS property names, and applies it to
// a runnel instance.
//
//	Streams:
//	  - StreamName: flights
//	    ShardCount: 4
//	Functions:
//	  - FunctionName: stats
//	    Handler: log          # a handler registered in this binary
//	    Timeout: 30
//	EventSourceMappings:
//	  - EventSourceArn: flights       # a stream name or its ARN
//	    FunctionName: stats
//	    StartingPosition: TRIM_HORIZON
//	    BatchSize: 500
//	    BisectBatchOnFunctionError: true
//	    MaximumRetryAttempts: 3
//	    DestinationConfig:
//	      OnFailure:
//	        Destination: flights-failed   # a stream name or its ARN
//
// Apply is idempotent: streams that exist are kept, functions are created
// or replaced, and a mapping that already joins the same stream and
// function is updated rather than duplicated.
package stack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/mapping/filter"
	"github.com/runnel-dev/runnel/stream"
)

// Stack is the content of a stack file.
type Stack struct {
	Streams             []stream.CreateStreamInput `yaml:"Streams"`
	Functions           []function.Config          `yaml:"Functions"`
	EventSourceMappings []Mapping                  `yaml:"EventSourceMappings"`
}

// Mapping is an event source mapping as written in a stack file: the
// fields of mapping.Config, where EventSourceArn and the OnFailure
// destination may also be plain stream names.
type Mapping struct {
	EventSourceArn                 string                     `yaml:"EventSourceArn"`
	FunctionName                   string                     `yaml:"FunctionName"`
	Enabled                        *bool                      `yaml:"Enabled"`
	BatchSize                      int                        `yaml:"BatchSize"`
	MaximumBatchingWindowInSeconds int                        `yaml:"MaximumBatchingWindowInSeconds"`
	ParallelizationFactor          int                        `yaml:"ParallelizationFactor"`
	StartingPosition               string                     `yaml:"StartingPosition"`
	StartingPositionTimestamp      *yamlTime                  `yaml:"StartingPositionTimestamp"`
	MaximumRetryAttempts           *int                       `yaml:"MaximumRetryAttempts"`
	MaximumRecordAgeInSeconds      *int                       `yaml:"MaximumRecordAgeInSeconds"`
	BisectBatchOnFunctionError     bool                       `yaml:"BisectBatchOnFunctionError"`
	FunctionResponseTypes          []string                   `yaml:"FunctionResponseTypes"`
	DestinationConfig              *mapping.DestinationConfig `yaml:"DestinationConfig"`
	FilterCriteria                 *filterCriteria            `yaml:"FilterCriteria"`
}

type filterCriteria struct {
	Filters []struct {
		Pattern string `yaml:"Pattern"`
	} `yaml:"Filters"`
}

// Load reads and parses a stack file. Unknown keys are errors, so a
// misspelt property does not silently take its default.
func Load(path string) (*Stack, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(b)
}

// Parse parses stack YAML.
func Parse(b []byte) (*Stack, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var s Stack
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("stack: %w", err)
	}
	return &s, nil
}

// Applied says what Apply did.
type Applied struct {
	StreamsCreated, StreamsKept      []string
	FunctionsCreated                 []string
	MappingsCreated, MappingsUpdated []string // UUIDs
}

// Apply creates what the stack declares. It stops at the first refused
// item with an error naming it (mappings[1]: InvalidParameterValueException...);
// items applied before it stay.
func Apply(ctx context.Context, rn *runnel.Runnel, s *Stack) (*Applied, error) {
	out := &Applied{}
	for i, in := range s.Streams {
		if _, err := rn.Streams.CreateStream(ctx, in); err != nil {
			if errors.Is(err, awserr.ErrResourceInUse) {
				out.StreamsKept = append(out.StreamsKept, in.StreamName)
				continue
			}
			return out, fmt.Errorf("Streams[%d] (%s): %w", i, in.StreamName, err)
		}
		out.StreamsCreated = append(out.StreamsCreated, in.StreamName)
	}
	for i, fc := range s.Functions {
		if _, err := rn.Functions.CreateFunction(ctx, fc, true); err != nil {
			return out, fmt.Errorf("Functions[%d] (%s): %w", i, fc.FunctionName, err)
		}
		out.FunctionsCreated = append(out.FunctionsCreated, fc.FunctionName)
	}
	for i, m := range s.EventSourceMappings {
		cfg := m.config(rn)
		var existing *mapping.Config
		for _, c := range rn.Mappings.ListEventSourceMappings() {
			if c.EventSourceArn == cfg.EventSourceArn && (c.FunctionName == cfg.FunctionName || c.FunctionArn == rn.Functions.ARN(cfg.FunctionName)) {
				existing = &c
				break
			}
		}
		if existing != nil {
			cfg.UUID = existing.UUID
			if _, err := rn.Mappings.UpdateEventSourceMapping(ctx, cfg); err != nil {
				return out, fmt.Errorf("EventSourceMappings[%d]: %w", i, err)
			}
			out.MappingsUpdated = append(out.MappingsUpdated, cfg.UUID)
			continue
		}
		c, err := rn.Mappings.CreateEventSourceMapping(ctx, cfg)
		if err != nil {
			return out, fmt.Errorf("EventSourceMappings[%d]: %w", i, err)
		}
		out.MappingsCreated = append(out.MappingsCreated, c.UUID)
	}
	return out, nil
}

// streamARN turns a stream name into its ARN; ARNs pass through.
func streamARN(rn *runnel.Runnel, s string) string {
	if s == "" || strings.HasPrefix(s, "arn:") {
		return s
	}
	return rn.Streams.ARN(s)
}

func (m *Mapping) config(rn *runnel.Runnel) mapping.Config {
	c := mapping.Config{
		EventSourceArn:                 streamARN(rn, m.EventSourceArn),
		FunctionName:                   m.FunctionName,
		Enabled:                        m.Enabled,
		BatchSize:                      m.BatchSize,
		MaximumBatchingWindowInSeconds: m.MaximumBatchingWindowInSeconds,
		ParallelizationFactor:          m.ParallelizationFactor,
		StartingPosition:               m.StartingPosition,
		MaximumRetryAttempts:           m.MaximumRetryAttempts,
		MaximumRecordAgeInSeconds:      m.MaximumRecordAgeInSeconds,
		BisectBatchOnFunctionError:     m.BisectBatchOnFunctionError,
		FunctionResponseTypes:          m.FunctionResponseTypes,
	}
	if m.StartingPositionTimestamp != nil {
		t := m.StartingPositionTimestamp.Time
		c.StartingPositionTimestamp = &t
	}
	if m.DestinationConfig != nil && m.DestinationConfig.OnFailure != nil {
		c.DestinationConfig = &mapping.DestinationConfig{OnFailure: &mapping.OnFailure{Destination: streamARN(rn, m.DestinationConfig.OnFailure.Destination)}}
	}
	if m.FilterCriteria != nil {
		c.FilterCriteria = &filter.Criteria{}
		for _, f := range m.FilterCriteria.Filters {
			c.FilterCriteria.Filters = append(c.FilterCriteria.Filters, filter.Pattern{Pattern: f.Pattern})
		}
	}
	return c
}
