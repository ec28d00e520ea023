package recovery

import "encoding/json"

// KindEvent is an EventBridge event, the body of a rule target's
// dead-letter message (package target): the event itself.
const KindEvent = "eventbridge-event"

// resolveEvent recognizes an EventBridge event envelope (version, id,
// detail-type, source, detail) and returns it as the payload.
func resolveEvent(body []byte) (*Resolved, bool) {
	var ev struct {
		Version    *string         `json:"version"`
		ID         string          `json:"id"`
		DetailType *string         `json:"detail-type"`
		Source     string          `json:"source"`
		Detail     json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &ev) != nil || ev.Version == nil || ev.ID == "" || ev.DetailType == nil || ev.Source == "" || len(ev.Detail) == 0 {
		return nil, false
	}
	return &Resolved{Kind: KindEvent, Payload: json.RawMessage(body), Condition: "DeadLettered"}, true
}
