package recovery

// Archive: a DLQ's messages to a file, with the records its pointers stand
// for; ReadArchive.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/stream"
	"github.com/runnel-dev/runnel/table"
)

// ArchivedMessage is one line of an archive file: the message as it was
// (enough to send it again with the same body and attributes) and, when
// the stream still holds them, the records a pointer stands for.
type ArchivedMessage struct {
	Queue             string                                 `json:"queue"`
	QueueArn          string                                 `json:"queueArn"`
	ArchivedAt        time.Time                              `json:"archivedAt"`
	MessageId         string                                 `json:"messageId"`
	MD5OfBody         string                                 `json:"md5OfBody"`
	Body              string                                 `json:"body"`
	Attributes        map[string]string                      `json:"attributes,omitempty"`
	MessageAttributes map[string]queue.MessageAttributeValue `json:"messageAttributes,omitempty"`
	// Kind and Condition classify the body (see Classify).
	Kind      string `json:"kind"`
	Condition string `json:"condition,omitempty"`
	ErrorType string `json:"errorType,omitempty"`
	// Resolved is what the body stands for (Resolve): the stream records of
	// a pointer (as far as still retained), the payload of an async record.
	Resolved *Resolved `json:"resolved,omitempty"`
	// Note says what could not be resolved (records past retention, ...).
	Note string `json:"note,omitempty"`
}

// ArchiveOptions tune Archive.
type ArchiveOptions struct {
	// Out is the file to write (JSON Lines). It must not exist.
	Out string
	// Delete deletes the archived messages from the queue once the file
	// is written and fsynced. Without it they are made visible again.
	Delete bool
	// Limit archives at most this many messages (0: all visible ones).
	Limit int
	// Visibility is how long (s) messages stay hidden while the archive is
	// written (default 300).
	Visibility int
	// Progress, if set, is called with the messages archived so far and
	// the queue's visible count at the start.
	Progress func(done, total int64)
	// Tables resolves DynamoDB stream on-failure records
	// (DDBStreamBatchInfo) from their tables' change logs; nil leaves
	// them unresolved, noted.
	Tables *table.Service
	// Mappings filters an on-failure record's range by its mapping's
	// FilterCriteria (Sources.Mappings); nil archives the whole range,
	// noted as unfiltered.
	Mappings *mapping.Service
}

// ArchiveResult says what Archive did.
type ArchiveResult struct {
	Queue    string
	Out      string
	Archived int
	// Resolved counts pointer/envelope/async messages resolved into their
	// events; Unresolved those archived with a note.
	Resolved   int
	Unresolved int
	Deleted    int
	// DeleteFailed lists message ids archived but not deleted (they stay
	// in the queue, so they are in the file and in the queue).
	DeleteFailed []string `json:",omitempty"`
}

// Archive writes the visible messages of a queue to a JSON Lines file, one
// ArchivedMessage per line, resolving pointers whose records are still
// retained (streams may be nil: nothing is resolved then). The file is
// fsynced before anything is deleted; with Delete, exactly the messages
// written are deleted, by the receipt handles of this archive's receives.
// On an error before the file is complete, nothing is deleted and the
// messages become visible again.
func Archive(ctx context.Context, queues *queue.Service, streams *stream.Service, name string, o ArchiveOptions) (res *ArchiveResult, err error) {
	name = queueName(name)
	if o.Out == "" {
		return nil, errors.New("archive: no output file")
	}
	if o.Visibility <= 0 {
		o.Visibility = 300
	}
	url, err := queues.GetQueueURL(ctx, name)
	if err != nil {
		return nil, err
	}
	attrs, err := queues.GetQueueAttributes(ctx, url, []string{queue.AttrApproximateNumberOfMessages, queue.AttrQueueArn, queue.AttrFifoQueue})
	if err != nil {
		return nil, err
	}
	fifo := attrs[queue.AttrFifoQueue] == "true"
	total := int64(atoi(attrs[queue.AttrApproximateNumberOfMessages]))
	if o.Limit > 0 {
		total = min(total, int64(o.Limit))
	}
	f, err := os.OpenFile(o.Out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	res = &ArchiveResult{Queue: name, Out: o.Out}
	type taken struct{ id, handle string }
	var handles []taken
	written := map[string]bool{}
	defer func() {
		// Whatever is not deleted becomes visible again.
		var rest []string
		for _, h := range handles {
			rest = append(rest, h.handle)
		}
		release(queues, url, rest)
	}()
	enc := json.NewEncoder(f)
	fail := func(e error) (*ArchiveResult, error) {
		f.Close()
		return res, e
	}
	// deleteHandles deletes the messages of hs (written and fsynced).
	deleteHandles := func(hs []taken) error {
		for len(hs) > 0 {
			n := min(len(hs), queue.MaxBatchEntries)
			batch := hs[:n]
			out, err := queues.DeleteMessageBatch(ctx, url, queue.DeleteEntries(batch, func(h taken) string { return h.handle }))
			if err != nil {
				return err
			}
			res.Deleted += len(out.Successful)
			for _, fl := range out.Failed {
				res.DeleteFailed = append(res.DeleteFailed, batch[atoi(fl.Id)].id)
			}
			hs = hs[n:]
		}
		return nil
	}
	for o.Limit == 0 || res.Archived < o.Limit {
		n := queue.MaxBatchEntries
		if o.Limit > 0 {
			n = min(n, o.Limit-res.Archived)
		}
		ms, err := receive(ctx, queues, url, n, o.Visibility)
		if err != nil {
			return fail(err)
		}
		if len(ms) == 0 {
			break
		}
		for _, m := range ms {
			handles = append(handles, taken{m.MessageId, m.ReceiptHandle})
			if written[m.MessageId] {
				continue // visible again after a long archive: already written
			}
			line := archiveLine(ctx, Sources{Streams: streams, Tables: o.Tables, Mappings: o.Mappings}, name, attrs[queue.AttrQueueArn], m)
			switch {
			case line.Resolved != nil && line.Note == "":
				res.Resolved++
			case line.Kind != KindUnknown && line.Kind != KindLegacyDLQ:
				res.Unresolved++
			}
			if err := enc.Encode(line); err != nil {
				return fail(err)
			}
			written[m.MessageId] = true
			res.Archived++
			if o.Progress != nil {
				o.Progress(int64(res.Archived), total)
			}
		}
		if fifo && o.Delete {
			// A FIFO group's later messages cannot be received while its
			// first ones are held: write, fsync and delete each batch
			// before the next receive. Before, the archive stopped after a
			// group's first batch and reported success.
			if err := f.Sync(); err != nil {
				return fail(err)
			}
			if err := deleteHandles(handles); err != nil {
				return fail(err)
			}
			handles = nil
		}
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return res, err
	}
	if d, err := os.Open(filepath.Dir(o.Out)); err == nil {
		d.Sync()
		d.Close()
	}
	if fifo && !o.Delete && (o.Limit == 0 || res.Archived < o.Limit) && int64(res.Archived) < total {
		// The file holds each group's first messages only: the others
		// cannot be received while these are held, and are not deleted.
		return res, fmt.Errorf("archive: FIFO queue %s: %d of its %d visible messages written (a group's later messages cannot be received while its first ones are held); archive a FIFO queue with Delete (--delete), which takes each batch out once written", name, res.Archived, total)
	}
	if !o.Delete {
		return res, nil
	}
	// The file is on disk: delete exactly what it holds.
	if err := deleteHandles(handles); err != nil {
		return res, err
	}
	handles = nil
	return res, nil
}

func archiveLine(ctx context.Context, src Sources, name, arn string, m queue.Message) ArchivedMessage {
	v := Classify(m)
	line := ArchivedMessage{Queue: name, QueueArn: arn, ArchivedAt: time.Now().UTC(), MessageId: m.MessageId,
		MD5OfBody: queue.MD5OfBody(m.Body), Body: m.Body, Attributes: m.Attributes, MessageAttributes: m.MessageAttributes,
		Kind: v.Kind, Condition: v.Condition, ErrorType: v.ErrorType}
	switch v.Kind {
	case KindUnknown, KindLegacyDLQ:
		return line // the body is the event itself
	}
	if src.Streams == nil && v.Kind == KindStreamBatch {
		line.Note = "not resolved: no stream service; the pointer is in the body"
		return line
	}
	r, err := ResolveFrom(ctx, src, []byte(m.Body))
	switch {
	case errors.Is(err, ErrPastRetention):
		line.Resolved = r
		line.Note = err.Error() + "; the pointer is in the body"
	case err != nil:
		line.Note = "not resolved: " + err.Error() + "; the pointer is in the body"
	default:
		line.Resolved = r
	}
	return line
}

// ReadArchive reads an archive file written by Archive.
func ReadArchive(path string) ([]ArchivedMessage, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []ArchivedMessage
	for i, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		var a ArchivedMessage
		if err := json.Unmarshal([]byte(l), &a); err != nil {
			return out, fmt.Errorf("%s:%d: %w", path, i+1, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// queueName returns the name of a queue given by name, URL or ARN.
func queueName(s string) string {
	if n, ok := queue.NameFromARN(s); ok {
		return n
	}
	if i := strings.LastIndex(s, "/"); i >= 0 {
		return s[i+1:]
	}
	return s
}

func queueNameOrEmpty(s string) string {
	if s == "" {
		return ""
	}
	return queueName(s)
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }
