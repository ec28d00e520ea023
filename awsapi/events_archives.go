package awsapi

// EventBridge's archives and replays: CreateArchive, DescribeArchive,
// ListArchives, DeleteArchive, StartReplay, DescribeReplay, ListReplays,
// CancelReplay. UpdateArchive is not served.
// https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_StartReplay.html

import (
	"time"

	"github.com/runnel-dev/runnel/eventbus"
)

type createArchiveInput struct {
	ArchiveName    string
	EventSourceArn string
	Description    string
	EventPattern   string
	RetentionDays  int
}

func eventsCreateArchive(rq *request, in *createArchiveInput) (any, error) {
	a, err := rq.h.rn.Events.CreateArchive(rq.ctx, eventbus.Archive{ArchiveName: in.ArchiveName, EventSourceArn: in.EventSourceArn,
		Description: in.Description, EventPattern: in.EventPattern, RetentionDays: in.RetentionDays})
	if err != nil {
		return nil, err
	}
	return map[string]any{"ArchiveArn": a.ArchiveArn, "State": a.State, "CreationTime": epoch(time.UnixMilli(a.Created))}, nil
}

type archiveRef struct{ ArchiveName string }

func archiveOut(a *eventbus.Archive) any {
	return map[string]any{"ArchiveName": a.ArchiveName, "ArchiveArn": a.ArchiveArn, "EventSourceArn": a.EventSourceArn,
		"Description": a.Description, "EventPattern": a.EventPattern, "State": a.State, "RetentionDays": a.RetentionDays,
		"EventCount": a.EventCount, "SizeBytes": a.SizeBytes, "CreationTime": epoch(time.UnixMilli(a.Created))}
}

func eventsDescribeArchive(rq *request, in *archiveRef) (any, error) {
	return answer(archiveOut)(rq.h.rn.Events.DescribeArchive(rq.ctx, in.ArchiveName))
}

func eventsDeleteArchive(rq *request, in *archiveRef) (any, error) {
	return nil, rq.h.rn.Events.DeleteArchive(rq.ctx, in.ArchiveName)
}

type listArchivesInput struct {
	listInput
	EventSourceArn string
}

// eventsListArchives lists archives with their EventCount, as
// DescribeArchive reads it (API_ListArchives' Archive has EventCount; it
// was 0 here).
func eventsListArchives(rq *request, in *listArchivesInput) (any, error) {
	return eventsPage(rq.h.rn.Events.ListArchives(in.NamePrefix, in.EventSourceArn), &in.listInput, "Archives", func(a *eventbus.Archive) any {
		if d, err := rq.h.rn.Events.DescribeArchive(rq.ctx, a.ArchiveName); err == nil {
			a.EventCount = d.EventCount
		}
		return archiveOut(a)
	})
}

type startReplayInput struct {
	ReplayName     string
	Description    string
	EventSourceArn string
	EventStartTime epoch
	EventEndTime   epoch
	Destination    eventbus.ReplayDestination
}

func eventsStartReplay(rq *request, in *startReplayInput) (any, error) {
	r, err := rq.h.rn.Events.StartReplay(rq.ctx, eventbus.Replay{ReplayName: in.ReplayName, Description: in.Description,
		EventSourceArn: in.EventSourceArn, EventStartTime: time.Time(in.EventStartTime), EventEndTime: time.Time(in.EventEndTime),
		Destination: in.Destination})
	if err != nil {
		return nil, err
	}
	return map[string]any{"ReplayArn": r.ReplayArn, "State": r.State, "ReplayStartTime": epoch(r.ReplayStartTime)}, nil
}

type replayRef struct{ ReplayName string }

// replayOut is a replay with its times as epoch seconds (zero times left
// out).
func replayOut(r *eventbus.Replay) any {
	out := map[string]any{"ReplayName": r.ReplayName, "ReplayArn": r.ReplayArn, "Description": r.Description,
		"EventSourceArn": r.EventSourceArn, "Destination": r.Destination, "State": r.State, "StateReason": r.StateReason}
	for k, t := range map[string]time.Time{"EventStartTime": r.EventStartTime, "EventEndTime": r.EventEndTime,
		"EventLastReplayedTime": r.EventLastReplayedTime, "ReplayStartTime": r.ReplayStartTime, "ReplayEndTime": r.ReplayEndTime} {
		if !t.IsZero() {
			out[k] = epoch(t)
		}
	}
	return out
}

func eventsDescribeReplay(rq *request, in *replayRef) (any, error) {
	return answer(replayOut)(rq.h.rn.Events.DescribeReplay(rq.ctx, in.ReplayName))
}

func eventsCancelReplay(rq *request, in *replayRef) (any, error) {
	r, err := rq.h.rn.Events.CancelReplay(rq.ctx, in.ReplayName)
	if err != nil {
		return nil, err
	}
	return map[string]any{"ReplayArn": r.ReplayArn, "State": r.State}, nil
}

type listReplaysInput struct {
	listInput
	State          string
	EventSourceArn string
}

func eventsListReplays(rq *request, in *listReplaysInput) (any, error) {
	rs, err := rq.h.rn.Events.ListReplays(rq.ctx, in.NamePrefix, in.State, in.EventSourceArn)
	if err != nil {
		return nil, err
	}
	return eventsPage(rs, &in.listInput, "Replays", func(r *eventbus.Replay) any { return replayOut(r) })
}
