package eventbus

import "context"

// PutOnBus is what an event bus target's delivery does: it puts payload
// (original: the rule's event when payload is not it, else nil) on the
// bus of busArn, and returns once it is routed and archived.
func (s *Service) PutOnBus(ctx context.Context, busArn string, payload, original []byte) error {
	return s.putOnBus(ctx, busArn, payload, original)
}
