package idempotency

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// maxRetries is how often an inconsistent state is retried after the
// first try (Powertools' MAX_RETRIES).
const maxRetries = 2

// Wrap returns handler made idempotent: the payload (the handler's input,
// marshalled to JSON unless it is a json.RawMessage or []byte) gives the
// key, and a repeat returns the stored result without calling handler.
// In and Out may be any JSON types: json.RawMessage, a struct, an
// events type. A stored result is decoded into Out with encoding/json, so
// Out must round-trip through JSON (unexported fields are lost; an Out of
// type any comes back as map[string]any).
//
// The key's handler name defaults to handler's Go name (Config.Name).
// Wrap returns an error wrapping ErrInvalidConfig for a bad Config. The
// errors of the returned handler are documented on Do.
//
//	h, err := idempotency.Wrap(store, idempotency.Config{}, func(ctx context.Context, ev json.RawMessage) (json.RawMessage, error) {...})
func Wrap[In, Out any](store Store, cfg Config, handler func(context.Context, In) (Out, error)) (func(context.Context, In) (Out, error), error) {
	if cfg.Name == "" {
		cfg.Name = funcName(handler)
	}
	c, err := cfg.compile()
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, in In) (Out, error) {
		return run(ctx, store, c, in, func(ctx context.Context) (Out, error) { return handler(ctx, in) })
	}, nil
}

// Do runs fn at most once per payload: the unit-of-work form for one
// record of a batch. payload is what identifies the work (a record, a
// message, a struct; JSON-marshalled unless json.RawMessage or []byte);
// fn does it. A repeat returns fn's stored result, decoded into T.
//
// The key's handler name defaults to fn's Go name, which for a closure is
// fragile: set cfg.Name (see Config.Name).
//
// Errors: fn's own error, unchanged (the record was deleted, so a retry
// runs fn again); ErrAlreadyInProgress; ErrValidationMismatch;
// ErrNoIdempotencyKey (with RaiseOnNoIdempotencyKey); ErrInconsistentState;
// ErrPersistence wrapping the Store's error; ErrResultNotStored (a repeat
// of a call whose result was too large to store); ErrInvalidConfig. A
// panic in fn deletes the record and panics on.
//
// Trap: a result whose record would be over MaxRecordBytes (DynamoDB's
// 400 KB item limit; the result's JSON is most of it) cannot be stored.
// Powertools' update then fails and leaves the record INPROGRESS, so once
// its in-progress expiry passes a repeat runs fn a second time. runnel
// stores the record COMPLETED without the result instead (a marker that
// it was too large, logged as a WARN naming the key and the size): this
// call returns fn's result, a repeat returns ErrResultNotStored and never
// runs fn again. Keep results small (an id, a status), or use Do for the
// side effect and read the large output from where fn put it.
func Do[T any](ctx context.Context, store Store, cfg Config, payload any, fn func(context.Context) (T, error)) (T, error) {
	if cfg.Name == "" {
		cfg.Name = funcName(fn)
	}
	c, err := cfg.compile()
	if err != nil {
		var zero T
		return zero, err
	}
	return run(ctx, store, c, payload, fn)
}

// call is one idempotent call being processed.
type call struct {
	c          *compiled
	store      Store
	id         string
	validation string
}

func run[T any](ctx context.Context, store Store, c *compiled, payload any, fn func(context.Context) (T, error)) (T, error) {
	var zero T
	cl := &call{c: c, store: store}
	var (
		keyData any
		data    any
		err     error
	)
	if c.KeyFunc == nil || c.validation != nil {
		if data, err = toJSONValue(payload); err != nil {
			return zero, err
		}
	}
	switch {
	case c.KeyFunc != nil:
		// Judged and hashed as JSON, as a JMESPath result is: a struct
		// whose fields are all omitted, a pointer to "", or the text
		// "null" is no key, not one key that every such event shares.
		if keyData, err = c.KeyFunc(payload); err == nil {
			keyData, err = toJSONValue(keyData)
		}
	case c.key != nil:
		keyData, err = c.key.Search(data)
	default:
		keyData = data
	}
	if err != nil {
		return zero, fmt.Errorf("idempotency: key of the payload: %w", err)
	}
	if missingKey(keyData) {
		if c.RaiseOnNoIdempotencyKey {
			return zero, fmt.Errorf("%w (jmespath %q)", ErrNoIdempotencyKey, c.EventKeyJMESPath)
		}
		c.Logger.WarnContext(ctx, "idempotency: no idempotency key value found; running without persistence and validation",
			"jmespath", c.EventKeyJMESPath, "handler", c.Name)
		return fn(ctx)
	}
	h, err := Hash(keyData)
	if err != nil {
		return zero, fmt.Errorf("idempotency: hash the key: %w", err)
	}
	cl.id = functionName(ctx, c.FunctionName) + "." + c.Name + "#" + h
	if c.validation != nil {
		v, err := c.validation.Search(data)
		if err != nil {
			return zero, fmt.Errorf("idempotency: validation part of the payload: %w", err)
		}
		if cl.validation, err = Hash(v); err != nil {
			return zero, fmt.Errorf("idempotency: hash the validation part: %w", err)
		}
	}
	for i := 0; ; i++ {
		v, err := attempt(ctx, cl, fn)
		// Only the store's own inconsistency (attempt's errStoreState) is
		// tried again: a handler's error that wraps ErrInconsistentState
		// (a nested Do) is the handler's answer, not a reason to run it
		// again.
		if errors.As(err, new(errStoreState)) && i < maxRetries {
			c.Logger.DebugContext(ctx, "idempotency: inconsistent state; retrying", "id", cl.id, "err", err)
			continue
		}
		return v, err
	}
}

// attempt is Powertools' _process_idempotency: put INPROGRESS, and on
// conflict act on the existing record.
func attempt[T any](ctx context.Context, cl *call, fn func(context.Context) (T, error)) (T, error) {
	var zero T
	now := cl.c.Clock.Now()
	rec := Record{
		ID:         cl.id,
		Status:     StatusInProgress,
		Expiration: now.Add(cl.c.ExpiresAfter).Unix(),
		Validation: cl.validation,
	}
	if dl, ok := ctx.Deadline(); ok {
		rec.InProgressExpiration = dl.UnixMilli()
	} else {
		rec.InProgressExpiration = now.Add(cl.c.ExpiresAfter).UnixMilli()
	}
	err := cl.store.Put(ctx, rec, now)
	if err == nil {
		return execute(ctx, cl, rec.InProgressExpiration, fn)
	}
	var exists *ExistsError
	if !errors.As(err, &exists) {
		return zero, fmt.Errorf("%w: save in-progress record %s: %w", ErrPersistence, cl.id, err)
	}
	old := exists.Record
	if old == nil {
		if old, err = cl.store.Get(ctx, cl.id); errors.Is(err, ErrRecordNotFound) {
			return zero, storeState("record %s was deleted between put and get", cl.id)
		} else if err != nil {
			return zero, fmt.Errorf("%w: get record %s: %w", ErrPersistence, cl.id, err)
		}
	}
	if cl.c.validation != nil && old.Validation != cl.validation {
		return zero, fmt.Errorf("%w: %s", ErrValidationMismatch, cl.id)
	}
	now = cl.c.Clock.Now()
	switch old.StatusAt(now) {
	case StatusExpired:
		return zero, storeState("record %s expired between put and get", cl.id)
	case StatusInProgress:
		if old.InProgressExpiration != 0 && old.InProgressExpiration < now.UnixMilli() {
			return zero, storeState("record %s is in progress past its in-progress expiry", cl.id)
		}
		return zero, fmt.Errorf("%w: %s", ErrAlreadyInProgress, cl.id)
	case StatusCompleted:
		var out T
		if size, ok := notStoredSize(old.Data); ok {
			return zero, fmt.Errorf("%w: %s (its JSON was %d bytes)", ErrResultNotStored, cl.id, size)
		}
		if len(old.Data) > 0 {
			if err := json.Unmarshal(old.Data, &out); err != nil {
				return zero, fmt.Errorf("idempotency: stored result of %s does not decode into %T: %w", cl.id, out, err)
			}
		}
		return out, nil
	}
	return zero, storeState("record %s has unknown status %q", cl.id, old.Status)
}

// bookkeepingTimeout bounds the Update or Delete after the handler, which
// run even when the call's context is done (a timed-out handler must
// still release its key).
const bookkeepingTimeout = 10 * time.Second

// execute runs fn and saves its outcome: COMPLETED with the result, or
// the record deleted on error or panic. held is the in_progress_expiration
// of the record attempt put: both writes apply only while the record is
// still that one (Store.Update, Store.Delete). A handler that outlived
// its in-progress expiry may find the key taken over by a retry; its
// result is then returned unsaved and its error or panic leaves the
// retry's record, each logged with the record's id.
func execute[T any](ctx context.Context, cl *call, held int64, fn func(context.Context) (T, error)) (v T, err error) {
	finished := false
	release := func(bctx context.Context, why string) error {
		derr := cl.store.Delete(bctx, cl.id, held)
		if errors.Is(derr, ErrRecordChanged) {
			cl.c.Logger.WarnContext(ctx, "idempotency: record not released after "+why+": another execution holds it (this one outlived its in-progress expiry)", "id", cl.id)
			return nil
		}
		return derr
	}
	defer func() {
		if finished {
			return
		}
		// fn panicked: release the key, then panic on.
		p := recover()
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
		defer cancel()
		if derr := release(bctx, "a panic"); derr != nil {
			cl.c.Logger.ErrorContext(ctx, "idempotency: delete record after panic", "id", cl.id, "err", derr)
		}
		if p != nil { // nil: runtime.Goexit, not a panic
			panic(p)
		}
	}()
	v, err = fn(ctx)
	finished = true
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
	defer cancel()
	if err != nil {
		if derr := release(bctx, "the handler's error"); derr != nil {
			return v, errors.Join(err, fmt.Errorf("%w: delete record %s: %w", ErrPersistence, cl.id, derr))
		}
		return v, err
	}
	data, merr := json.Marshal(v)
	if merr != nil {
		// The work is done but cannot be recorded: release the key so the
		// caller's retry is not locked out, and say why.
		_ = release(bctx, "an unrecordable result")
		return v, fmt.Errorf("idempotency: result of type %T is not JSON: %w", v, merr)
	}
	done := Record{
		ID:         cl.id,
		Status:     StatusCompleted,
		Expiration: cl.c.Clock.Now().Add(cl.c.ExpiresAfter).Unix(),
		Data:       data,
		Validation: cl.validation,
	}
	if size := recordBytes(done); size > MaxRecordBytes {
		// Stored, the update would fail (an item over 400 KB) and leave the
		// record INPROGRESS: a repeat after its in-progress expiry would run
		// fn again. Store it COMPLETED with a marker instead of the result.
		cl.c.Logger.WarnContext(ctx, "idempotency: result too large to store; the record is saved COMPLETED without it, and a repeat returns ErrResultNotStored",
			"id", cl.id, "resultBytes", len(data), "recordBytes", size, "maxRecordBytes", MaxRecordBytes)
		done.Data = notStoredMarker(len(data))
	}
	if uerr := cl.store.Update(bctx, done, held); errors.Is(uerr, ErrRecordChanged) {
		// The work is done; the retry holding the key saves its own
		// result. Returning an error here would make the caller retry
		// work that has been done.
		cl.c.Logger.WarnContext(ctx, "idempotency: result not saved: another execution holds the record (this one outlived its in-progress expiry)", "id", cl.id)
	} else if uerr != nil {
		return v, fmt.Errorf("%w: save completed record %s: %w", ErrPersistence, cl.id, uerr)
	}
	return v, nil
}

// MaxRecordBytes is the largest record Do stores with its result: 400 KB
// (409,600 bytes), DynamoDB's item size limit, counted as DynamoDB counts
// an item (attribute names plus values; see recordBytes). A COMPLETED
// record over it is stored without its result (ErrResultNotStored).
const MaxRecordBytes = 400 * 1024

// numberBytes is the most a DynamoDB number attribute's value takes (38
// significant digits: 21 bytes).
const numberBytes = 21

// recordBytes is the size of r as a DynamoDB item of a Store that keeps
// Powertools' attributes (the INPROGRESS record's in_progress_expiration
// stays after Update), numbers counted at their largest.
func recordBytes(r Record) int {
	n := len(AttrID) + len(r.ID) + len(AttrStatus) + len(r.Status) + len(AttrData) + len(r.Data) +
		len(AttrExpiration) + numberBytes + len(AttrInProgressExpiration) + numberBytes
	if r.Validation != "" {
		n += len(AttrValidation) + len(r.Validation)
	}
	return n
}

// notStoredPrefix starts the data of a COMPLETED record whose result was
// too large to store. It is not JSON, so no stored result can be taken
// for it.
const notStoredPrefix = "!runnel-idempotency: result not stored, bytes="

func notStoredMarker(size int) []byte {
	return []byte(notStoredPrefix + strconv.Itoa(size))
}

// notStoredSize reports whether data is the marker of a result too large
// to store, and the result's size.
func notStoredSize(data []byte) (int, bool) {
	rest, ok := strings.CutPrefix(string(data), notStoredPrefix)
	if !ok {
		return 0, false
	}
	n, _ := strconv.Atoi(rest)
	return n, true
}
