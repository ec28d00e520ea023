package queue

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/engine"
)

// Message move tasks outlive the process that runs them. SQS keeps a
// started task until it ends ("Gets the most recent message movement
// tasks (up to 10) under a specific source queue",
// API_ListMessageMoveTasks); runnel's tasks used to live in the memory of
// the process serving the queues, so a restart, a failover or a CLI
// process giving the queues back made a running task vanish: the DLQ kept
// the rest of its messages, ListMessageMoveTasks answered [] and `runnel
// dlq redrive` waited for ever.
//
// Each source queue's tasks (up to 10, most recent first) are stored in
// the bucket moveTasksBucket under the queue's name, written at the
// task's start, after each batch that moved messages, and at its end.
// Only the process holding the queues writes (mayAct). Each time a
// process takes the queues (lease.OwnerConfig.Acquired) it reads them
// back: a task stored RUNNING is resumed, with its TaskHandle, its count
// moved so far and its limit (only messages sent before its start move);
// one stored CANCELLING ends CANCELLED. A process that closes or loses the
// queues stops its tasks without storing an end.
//
// The trap: a batch moved after the last stored progress (a crash between
// the move and its write) is counted again by nobody: the resumed task's
// ApproximateNumberOfMessagesMoved misses it, and a batch whose copies
// were stored but whose removal from the DLQ was not is moved twice
// (at least once, as every SQS move).

// moveTasksBucket holds each source queue's move tasks.
const moveTasksBucket = "runnel_sqs_move_tasks"

// storedMoveTask is a move task as stored.
type storedMoveTask struct {
	MessageMoveTask
	Handle  string `json:"handle"`            // the TaskHandle, also once the task ended
	Limit   uint64 `json:"limit"`             // moveTask.limit
	QueueID string `json:"queueId,omitempty"` // the source queue's id: a queue of the same name created since is another
}

// saveTasks stores source queue name's tasks as they are now. A process
// that no longer holds the queues stores nothing.
func (s *Service) saveTasks(ctx context.Context, name string) error {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	if !s.mayAct() {
		return nil
	}
	s.mu.Lock()
	list := slices.Clone(s.bySrc[name])
	s.mu.Unlock()
	if len(list) == 0 {
		// The source was deleted (forgetTasks): its tasks go with it.
		if err := s.moveTasks.Purge(ctx, name); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return err
		}
		return nil
	}
	out := make([]storedMoveTask, 0, len(list))
	for _, t := range list {
		t.mu.Lock()
		out = append(out, storedMoveTask{MessageMoveTask: t.info, Handle: t.handle, Limit: t.limit, QueueID: t.srcID})
		t.mu.Unlock()
	}
	b, _ := json.Marshal(out)
	_, err := s.moveTasks.Put(ctx, name, b)
	return err
}

// forgetTasks drops source queue name's tasks, here and stored (at
// DeleteQueue): a queue created again under the name must not list them,
// nor resume one against its own messages. A running task of the deleted
// queue fails at its next batch.
func (s *Service) forgetTasks(ctx context.Context, name string) {
	s.mu.Lock()
	for _, t := range s.bySrc[name] {
		delete(s.tasks, t.handle)
	}
	delete(s.bySrc, name)
	s.mu.Unlock()
	if err := s.saveTasks(ctx, name); err != nil {
		s.log.Warn("queue: cannot delete the stored message move tasks of a deleted queue", "queue", name, "err", err)
	}
}

// resumeTasks is called each time this process takes the queues: it
// reads the stored tasks back in the background; the move task calls wait
// for it (waitTasksLoaded).
func (s *Service) resumeTasks() {
	ch := make(chan struct{})
	s.tasksLoaded.Store(&ch)
	s.tasksWG.Add(1)
	go func() {
		defer s.tasksWG.Done()
		defer close(ch)
		s.loadTasks(s.bg)
	}()
}

// waitTasksLoaded waits until the stored tasks are read back.
func (s *Service) waitTasksLoaded(ctx context.Context) error {
	ch := s.tasksLoaded.Load()
	if ch == nil {
		return nil
	}
	select {
	case <-*ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// loadTasks reads every source's stored tasks, replaces this process's
// lists with them, resumes the running ones and ends the cancelling ones.
func (s *Service) loadTasks(ctx context.Context) {
	stored := map[string][]storedMoveTask{}
	err := engine.LoadJSON(ctx, s.moveTasks, func(name string, v []storedMoveTask, err error) {
		if err != nil {
			s.log.Warn("queue: a stored list of message move tasks does not decode; skipped", "queue", name, "err", err)
			return
		}
		stored[name] = v
	})
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("queue: cannot read the stored message move tasks; running ones are not resumed", "err", err)
		}
		return
	}
	for name, list := range stored {
		tasks := make([]*moveTask, 0, len(list))
		var resume []*moveTask
		ended := false
		for _, st := range list {
			t := &moveTask{info: st.MessageMoveTask, handle: st.Handle, limit: st.Limit, srcID: st.QueueID,
				cancel: make(chan struct{}), done: make(chan struct{})}
			switch st.Status {
			case MoveTaskRunning:
				resume = append(resume, t)
			case MoveTaskCancelling:
				t.info.Status, t.info.TaskHandle = MoveTaskCancelled, ""
				ended = true
				close(t.done)
			default:
				close(t.done)
			}
			tasks = append(tasks, t)
		}
		s.mu.Lock()
		for _, old := range s.bySrc[name] {
			delete(s.tasks, old.handle)
		}
		s.bySrc[name] = tasks
		for _, t := range resume {
			s.tasks[t.handle] = t
		}
		s.mu.Unlock()
		for _, t := range resume {
			src, err := s.queue(ctx, name)
			if err == nil && t.srcID != "" && src.id != t.srcID {
				err = errors.New("the queue was deleted (and a queue of its name created) while the task was stopped")
			}
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				t.mu.Lock()
				t.info.Status, t.info.FailureReason, t.info.TaskHandle = MoveTaskFailed, "source queue: "+err.Error(), ""
				t.mu.Unlock()
				close(t.done)
				ended = true
				continue
			}
			s.log.Info("queue: resuming a message move task", "queue", name, "moved", t.info.ApproximateNumberOfMessagesMoved,
				"to_move", t.info.ApproximateNumberOfMessagesToMove)
			s.tasksWG.Add(1)
			go s.runMove(t, src, name, t.info.DestinationArn, t.info.MaxNumberOfMessagesPerSecond, t.limit)
		}
		if ended {
			if err := s.saveTasks(ctx, name); err != nil && ctx.Err() == nil {
				s.log.Warn("queue: cannot store the end of a message move task", "queue", name, "err", err)
			}
		}
	}
}
