package queue

import (
	"context"
	"time"
)

// ApproximateAgeOfOldestMessage is how long the oldest message still in
// the queue (visible, in flight or delayed) has been there, by the engine
// clock: CloudWatch's ApproximateAgeOfOldestMessage, which SQS does not
// return as a queue attribute. 0 for an empty queue. On a standard
// dead-letter queue a moved message keeps its original send time, so the
// age counts from there (as on AWS).
func (s *Service) ApproximateAgeOfOldestMessage(ctx context.Context, queueURL string) (time.Duration, error) {
	var age time.Duration
	if remote, err := s.forward(ctx, "ApproximateAgeOfOldestMessage", queueURL, &age); remote {
		return age, err
	}
	q, err := s.queue(ctx, queueURL)
	if err != nil {
		return 0, err
	}
	now := s.eng.Clock.Now().UnixMilli()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.deleted {
		return 0, q.goneErr(queueURL)
	}
	q.advance(now)
	if q.exp.len() == 0 {
		return 0, nil
	}
	return time.Duration(max(0, now-q.exp.peek().sentAt)) * time.Millisecond, nil
}
