package eventbus

// Archives (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-archive.html):
// CreateArchive, DescribeArchive, ListArchives, DeleteArchive. An archive
// keeps the events put on its bus that match its EventPattern (all when
// none), RetentionDays days by ingestion time on the engine's clock (0:
// for ever); replayed events are never archived.

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/mapping/filter"
)

const (
	archiveStream        = "RUNNEL_EB_ARCHIVE"
	archiveSubjectPrefix = "ebarchive."
	// hdrIngested is an archived event's ingestion time (Unix ms, engine
	// clock); hdrTime its event time.
	hdrIngested = "Runnel-Ingested"
	hdrTime     = "Runnel-Event-Time"
)

// Archive is an archive (API_DescribeArchive's fields).
type Archive struct {
	ArchiveName    string
	ArchiveArn     string
	EventSourceArn string
	Description    string `json:",omitempty"`
	EventPattern   string `json:",omitempty"`
	// RetentionDays: 0 (default) keeps events for ever.
	RetentionDays int
	State         string
	// EventCount and SizeBytes are read at Describe time.
	EventCount   int64
	SizeBytes    int64
	CreationTime time.Time `json:"-"`
	// ID names the archive's subject.
	ID      string `json:"Id"`
	Created int64
}

var archiveNameRE = regexp.MustCompile(`^[\.\-_A-Za-z0-9]{1,48}$`)

// ArchiveARN returns an archive's ARN.
func (s *Service) ArchiveARN(name string) string {
	return "arn:aws:events:" + s.eng.Region() + ":" + s.eng.AccountID() + ":archive/" + name
}

// lastSegment returns the name of a name or ARN (after the last '/').
func lastSegment(ref string) string {
	if strings.HasPrefix(ref, "arn:") {
		return ref[strings.LastIndexByte(ref, '/')+1:]
	}
	return ref
}

// CreateArchive creates an archive of a bus (API_CreateArchive). Errors:
// ErrValidation (name 1..48 of [.\-_A-Za-z0-9], RetentionDays >= 0),
// ErrInvalidEventPattern, ErrResourceNotFound (bus),
// ErrResourceAlreadyExists.
func (s *Service) CreateArchive(ctx context.Context, a Archive) (*Archive, error) {
	if !archiveNameRE.MatchString(a.ArchiveName) {
		return nil, invalid("1 validation error detected: Value '%s' at 'archiveName' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\.\\-_A-Za-z0-9]+ (1..48 characters)", a.ArchiveName)
	}
	if a.RetentionDays < 0 {
		return nil, invalid("1 validation error detected: Value '%d' at 'retentionDays' failed to satisfy constraint: Member must have value greater than or equal to 0", a.RetentionDays)
	}
	if a.EventPattern != "" {
		if _, err := filter.CompileEventPattern(a.EventPattern); err != nil {
			return nil, err
		}
	}
	bus := BusName(a.EventSourceArn)
	if _, err := s.busOf(bus); err != nil {
		return nil, err
	}
	a.EventSourceArn, a.ArchiveArn, a.State = s.ARN(bus), s.ArchiveARN(a.ArchiveName), Enabled
	a.ID, a.Created = strings.ReplaceAll(uuid.NewString(), "-", ""), s.eng.Clock.Now().UnixMilli()
	data, _ := json.Marshal(a)
	if _, err := s.archKV.Create(ctx, a.ArchiveName, data); errors.Is(err, jetstream.ErrKeyExists) {
		return nil, awserr.New(awserr.ErrResourceAlreadyExists, "Archive %s already exists.", a.ArchiveName)
	} else if err != nil {
		return nil, err
	}
	s.cacheArchive(a)
	s.wake() // its retention may start the trim timer
	return &a, nil
}

// loadArchives reads the stored archives into memory.
func (s *Service) loadArchives(ctx context.Context) error {
	return engine.LoadJSON(ctx, s.archKV, func(k string, a Archive, err error) {
		if err != nil {
			s.log.Warn("unreadable archive ignored", "archive", k, "err", err)
			return
		}
		s.cacheArchive(a)
	})
}

// cachedArchive is an archive with its compiled pattern (nil: all).
type cachedArchive struct {
	a Archive
	m *filter.Matcher
}

func (s *Service) cacheArchive(a Archive) {
	c := cachedArchive{a: a}
	if a.EventPattern != "" {
		c.m, _ = filter.CompileEventPattern(a.EventPattern)
	}
	s.mu.Lock()
	s.arch[a.ArchiveName] = c
	s.mu.Unlock()
}

// archives returns the archives (of one bus's ARN when busArn is not
// empty), in name order.
func (s *Service) archives(busArn string) []cachedArchive {
	s.mu.Lock()
	var out []cachedArchive
	for _, c := range s.arch {
		if busArn == "" || c.a.EventSourceArn == busArn {
			out = append(out, c)
		}
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].a.ArchiveName < out[j].a.ArchiveName })
	return out
}

// DescribeArchive returns an archive with its event count and size.
func (s *Service) DescribeArchive(ctx context.Context, name string) (*Archive, error) {
	a, err := s.archive1(ctx, lastSegment(name))
	if err != nil {
		return nil, err
	}
	info, err := s.archive.Info(ctx, jetstream.WithSubjectFilter(archiveSubjectPrefix+a.ID))
	if err == nil {
		a.EventCount = int64(info.State.Subjects[archiveSubjectPrefix+a.ID])
	}
	a.CreationTime = time.UnixMilli(a.Created).UTC()
	return a, nil
}

func (s *Service) archive1(ctx context.Context, name string) (*Archive, error) {
	e, err := s.archKV.Get(ctx, name)
	if err != nil {
		return nil, notFound("Archive %s does not exist.", name)
	}
	var a Archive
	if err := json.Unmarshal(e.Value(), &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// ListArchives lists archives by name prefix and source bus ARN.
func (s *Service) ListArchives(prefix, busArn string) []Archive {
	var out []Archive
	for _, c := range s.archives(busArn) {
		if a := c.a; strings.HasPrefix(a.ArchiveName, prefix) {
			a.CreationTime = time.UnixMilli(a.Created).UTC()
			out = append(out, a)
		}
	}
	return out
}

// DeleteArchive deletes an archive and its events.
func (s *Service) DeleteArchive(ctx context.Context, name string) error {
	a, err := s.archive1(ctx, lastSegment(name))
	if err != nil {
		return err
	}
	if err := s.archKV.Delete(ctx, a.ArchiveName); err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.arch, a.ArchiveName)
	s.mu.Unlock()
	return s.archive.Purge(ctx, jetstream.WithPurgeSubject(archiveSubjectPrefix+a.ID))
}

// archiveEvent stores an event in each archive of its bus that matches it.
func (s *Service) archiveEvent(ctx context.Context, bus string, ev map[string]any, raw []byte, now time.Time) error {
	for _, c := range s.archives(s.ARN(bus)) {
		a := c.a
		if c.m != nil && !c.m.Match(ev) {
			continue
		}
		t, _ := time.Parse(time.RFC3339, ev["time"].(string))
		msg := &nats.Msg{Subject: archiveSubjectPrefix + a.ID, Data: raw, Header: nats.Header{}}
		msg.Header.Set(hdrIngested, strconv.FormatInt(now.UnixMilli(), 10))
		msg.Header.Set(hdrTime, strconv.FormatInt(t.UnixMilli(), 10))
		if _, err := s.eng.JS.PublishMsg(ctx, msg); err != nil {
			return err
		}
	}
	return nil
}

// trimInterval is how often archives are trimmed to their retention.
const trimInterval = time.Hour

// retained reports whether an archive keeps its events for a limited
// time (RetentionDays > 0).
func (s *Service) retained() bool {
	for _, c := range s.archives("") {
		if c.a.RetentionDays > 0 {
			return true
		}
	}
	return false
}

// trimArchives deletes the archived events older than their archive's
// RetentionDays (by ingestion time, engine clock).
func (s *Service) trimArchives(ctx context.Context, now time.Time) {
	for _, c := range s.archives("") {
		if c.a.RetentionDays <= 0 {
			continue
		}
		cutoff := now.Add(-time.Duration(c.a.RetentionDays) * 24 * time.Hour)
		subject := archiveSubjectPrefix + c.a.ID
		if err := s.trimSubject(ctx, subject, cutoff); err != nil {
			s.log.Warn("eventbridge: archive not trimmed", "archive", c.a.ArchiveName, "err", err)
		}
	}
}

// trimSubject purges the messages of subject ingested before cutoff (in
// ingestion order: they are the first ones).
func (s *Service) trimSubject(ctx context.Context, subject string, cutoff time.Time) error {
	last, err := s.archive.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	cons, err := s.archive.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		return err
	}
	keep := uint64(0) // the first sequence to keep
	for keep == 0 {
		msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			return err
		}
		meta, err := msg.Metadata()
		if err != nil {
			return err
		}
		ing, _ := strconv.ParseInt(msg.Headers().Get(hdrIngested), 10, 64)
		switch {
		case !time.UnixMilli(ing).Before(cutoff):
			keep = meta.Sequence.Stream
		case meta.Sequence.Stream >= last.Sequence:
			keep = last.Sequence + 1
		}
	}
	return s.archive.Purge(ctx, jetstream.WithPurgeSubject(subject), jetstream.WithPurgeSequence(keep))
}
