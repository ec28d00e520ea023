package table

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/stream"
	"github.com/runnel-dev/runnel/table/expr"
)

// Transaction limits (API_TransactWriteItems).
const (
	// MaxTransactItems is the most actions in one TransactWriteItems.
	MaxTransactItems = 100
	// MaxTransactBytes is the most item data in one transaction, 4 MB.
	MaxTransactBytes = 4 << 20
	// TokenWindow is how long a ClientRequestToken is remembered after its
	// transaction completed: 10 minutes.
	TokenWindow = 10 * time.Minute
	// MaxTokenLength is the longest ClientRequestToken, 36 characters.
	MaxTokenLength = 36
)

// ConditionCheck checks a condition on an item without writing it.
type ConditionCheck struct {
	TableName string `json:"TableName"`
	Key       Item   `json:"Key"`
	WriteExpr
}

// TransactPut is a PutItem inside a transaction.
type TransactPut struct {
	TableName string `json:"TableName"`
	Item      Item   `json:"Item"`
	WriteExpr
}

// TransactUpdate is an UpdateItem inside a transaction.
type TransactUpdate struct {
	TableName        string `json:"TableName"`
	Key              Item   `json:"Key"`
	UpdateExpression string `json:"UpdateExpression"`
	WriteExpr
}

// TransactDelete is a DeleteItem inside a transaction.
type TransactDelete struct {
	TableName string `json:"TableName"`
	Key       Item   `json:"Key"`
	WriteExpr
}

// TransactWriteItem is one action: exactly one of the four is set.
type TransactWriteItem struct {
	ConditionCheck *ConditionCheck `json:"ConditionCheck,omitempty"`
	Put            *TransactPut    `json:"Put,omitempty"`
	Update         *TransactUpdate `json:"Update,omitempty"`
	Delete         *TransactDelete `json:"Delete,omitempty"`
}

// TransactWriteItemsInput is TransactWriteItems' request.
type TransactWriteItemsInput struct {
	TransactItems []TransactWriteItem `json:"TransactItems"`
	// ClientRequestToken makes the call idempotent for TokenWindow after it
	// completes (1..36 characters). Empty: no idempotency (the AWS SDKs
	// fill in a random token).
	ClientRequestToken string `json:"ClientRequestToken,omitempty"`
}

// CancellationReason is one action's outcome in a cancelled transaction:
// Code "None" for actions that were fine.
type CancellationReason struct {
	Code    string `json:"Code"`
	Message string `json:"Message,omitempty"`
	Item    Item   `json:"Item,omitempty"`
}

// TransactionCanceledError is returned when a transaction changed
// nothing: Reasons has one entry per action, in TransactItems order.
// errors.Is(err, awserr.ErrTransactionCanceled) matches it.
type TransactionCanceledError struct {
	Reasons []CancellationReason
}

func (e *TransactionCanceledError) Error() string {
	return "TransactionCanceledException: " + e.Message()
}

// Message is DynamoDB's message for the cancellation.
func (e *TransactionCanceledError) Message() string {
	codes := make([]string, len(e.Reasons))
	for i, r := range e.Reasons {
		codes[i] = r.Code
	}
	return "Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(codes, ", ") + "]"
}

// Is matches awserr.ErrTransactionCanceled.
func (e *TransactionCanceledError) Is(target error) bool {
	return target == awserr.ErrTransactionCanceled
}

// txRecord is a transaction's commit record in RUNNEL_TXLOG.
type txRecord struct {
	ID      string     `json:"id"`
	Token   string     `json:"token,omitempty"`
	Hash    string     `json:"hash,omitempty"`
	TimeMs  int64      `json:"t"`
	Changes []txChange `json:"changes"`
}

type txChange struct {
	Table        string `json:"table"` // table name
	Log          string `json:"log"`
	PartitionKey string `json:"pk"`
	ExplicitHash string `json:"hk"`
	Data         []byte `json:"data"`
}

// TransactWriteItems applies up to 100 actions on distinct items, of one
// or several tables, all or nothing (API_TransactWriteItems): every
// condition is checked with the items locked, and either every write is
// applied or none is.
//
// Errors: ValidationException (no actions or more than 100, an action
// with not exactly one operation, two actions on one item: "Transaction
// request cannot include multiple operations on one item", more than 4 MB,
// an empty string or binary value for a table or secondary index key:
// "One or more parameter values are not valid. ... Key: pk");
// TransactionCanceledError with one reason per action
// (ConditionalCheckFailed, ValidationError) when a condition fails, or
// when a key is of the wrong type (checked after every
// ValidationException above: reason ValidationError, a Put's "One or more
// parameter values were invalid: Type mismatch for key pk expected: S
// actual: N", a Key's "The provided key element does not match the
// schema", the other actions None; transact_keys.go);
// ClientRequestToken rules: the same token within TokenWindow after the
// first call completed returns success and changes nothing;
// IdempotentParameterMismatchException if the parameters differ;
// TransactionInProgressException while the first call is still running.
//
// A transaction that meets an item held by another TransactWriteItems in
// progress is cancelled at once, that action's reason TransactionConflict
// (the others None), as in DynamoDB; it does not wait. A single
// PutItem, UpdateItem or DeleteItem in progress on one of its items is
// waited for (it is short).
func (s *Service) TransactWriteItems(ctx context.Context, in TransactWriteItemsInput) error {
	if remote, err := s.forward(ctx, "TransactWriteItems", in, nil); remote {
		return err
	}
	n := len(in.TransactItems)
	if n < 1 || n > MaxTransactItems {
		return awserr.New(awserr.ErrValidation, "1 validation error detected: Value '%d' at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to %d and greater than or equal to 1", n, MaxTransactItems)
	}
	if len(in.ClientRequestToken) > MaxTokenLength {
		return awserr.New(awserr.ErrValidation, "1 validation error detected: Value '%s' at 'clientRequestToken' failed to satisfy constraint: Member must have length less than or equal to %d", in.ClientRequestToken, MaxTokenLength)
	}
	ops, err := s.prepareTransaction(in.TransactItems)
	if err != nil {
		return err
	}
	var hash string
	if in.ClientRequestToken != "" {
		b, _ := json.Marshal(in.TransactItems)
		sum := sha256.Sum256(b)
		hash = hex.EncodeToString(sum[:])
		done, err := s.tokens.begin(in.ClientRequestToken, hash)
		if err != nil || done {
			return err
		}
	}
	committed, err := s.runTransaction(ctx, ops, in.ClientRequestToken, hash)
	if !committed && errors.As(err, new(errUnknownOutcome)) {
		return err // the commit's resolver ends the token (settleCommit)
	}
	if in.ClientRequestToken != "" {
		var pending []string
		if committed && err != nil { // some changes may not be applied yet
			pending = changedItems(ops)
		}
		s.tokens.end(in.ClientRequestToken, committed, pending)
	}
	return err
}

// changedItems is the itemIDs of the items ops change (not a
// ConditionCheck's).
func changedItems(ops []*op) []string {
	var ids []string
	for _, o := range ops {
		if o.next != nil {
			ids = append(ids, o.itemID())
		}
	}
	return ids
}

func (s *Service) prepareTransaction(items []TransactWriteItem) ([]*op, error) {
	ops := make([]*op, len(items))
	seen := map[string]int{}
	// reasons: set when an action's key is of the wrong type (or, for a
	// Key, missing or with other attributes): the transaction is then
	// cancelled, once every action passed its other checks.
	var reasons []CancellationReason
	for i, it := range items {
		set := 0
		var o *op
		var err error
		var kc txKeyCheck
		field := fmt.Sprintf("transactItems.%d", i+1)
		if c := it.ConditionCheck; c != nil {
			set++
			var t *Table
			if t, err = s.table(c.TableName); err == nil {
				if c.ConditionExpression == "" {
					return nil, validation("%s.conditionCheck.conditionExpression: must not be empty", field)
				}
				kc = checkTxKey(t, c.Key, true)
				o, err = s.deleteOp(t, kc.use, c.WriteExpr)
				if o != nil {
					o.next = nil
				}
			}
		}
		if p := it.Put; p != nil {
			set++
			var t *Table
			if t, err = s.table(p.TableName); err == nil {
				kc = checkTxKey(t, p.Item, false)
				o, err = s.putOp(t, kc.use, p.WriteExpr)
				err = itemKeyMismatch(err)
				if err == nil {
					// An empty string or binary for an index key is
					// refused up front; a wrong type cancels (op.prepare).
					err = emptyIndexKey(t, p.Item)
				}
			}
		}
		if u := it.Update; u != nil {
			set++
			var t *Table
			if t, err = s.table(u.TableName); err == nil {
				kc = checkTxKey(t, u.Key, true)
				o, _, err = s.updateOp(t, kc.use, u.UpdateExpression, u.WriteExpr)
			}
		}
		if d := it.Delete; d != nil {
			set++
			var t *Table
			if t, err = s.table(d.TableName); err == nil {
				kc = checkTxKey(t, d.Key, true)
				o, err = s.deleteOp(t, kc.use, d.WriteExpr)
			}
		}
		switch {
		case set == 0:
			return nil, validation("The action or operation requested is invalid. Verify that the action is typed correctly.")
		case set > 1:
			return nil, validation("%s: exactly one of ConditionCheck, Put, Update or Delete must be set", field)
		}
		if err != nil {
			return nil, err
		}
		if kc.err != nil {
			return nil, kc.err
		}
		if kc.reason != "" {
			if reasons == nil {
				reasons = make([]CancellationReason, len(items))
				for j := range reasons {
					reasons[j].Code = "None"
				}
			}
			reasons[i] = CancellationReason{Code: "ValidationError", Message: kc.reason}
			continue // o is the stand-in's: no item of its own
		}
		id := o.itemID()
		if _, dup := seen[id]; dup {
			return nil, validation("Transaction request cannot include multiple operations on one item")
		}
		seen[id] = i
		ops[i] = o
	}
	if reasons != nil {
		return nil, &TransactionCanceledError{Reasons: reasons}
	}
	return ops, nil
}

// runTransaction locks the items, checks every condition, writes the
// commit record, then the changes. committed reports whether the commit
// record was written (the transaction then happens, whatever err says).
func (s *Service) runTransaction(ctx context.Context, ops []*op, token, hash string) (committed bool, err error) {
	ids := make([]string, len(ops))
	for i, o := range ops {
		ids[i] = o.itemID()
	}
	if conflicts := s.held.claim(ids); conflicts != nil {
		return false, conflictCancel(len(ops), conflicts)
	}
	defer s.held.release(ids)
	if s.unsure.busy(ids) != nil {
		return false, errHeldUnsure()
	}
	defer lockItems(ops)()
	if s.unsure.busy(ids) != nil { // a write that held a stripe went unsure
		return false, errHeldUnsure()
	}

	reasons := make([]CancellationReason, len(ops))
	changes := make([]*pending, len(ops))
	failed := false
	for i, o := range ops {
		reasons[i].Code = "None"
		_, p, err := o.prepare(ctx)
		var ccf *ConditionalCheckFailedError
		var ae *awserr.Error
		switch {
		case errors.As(err, &ccf):
			failed = true
			reasons[i] = CancellationReason{Code: "ConditionalCheckFailed", Message: "The conditional request failed", Item: ccf.Item}
		case errors.As(err, &ae) && ae.Code == awserr.ErrValidation.Code:
			failed = true
			reasons[i] = CancellationReason{Code: "ValidationError", Message: ae.Message}
		case err != nil:
			return false, err
		}
		changes[i] = p
	}
	if failed {
		return false, &TransactionCanceledError{Reasons: reasons}
	}
	rec := txRecord{ID: nuid.Next(), Token: token, Hash: hash, TimeMs: s.eng.Clock.Now().UnixMilli()}
	byTable := map[*Table][]*pending{}
	var order []*Table
	for _, p := range changes {
		if p == nil {
			continue
		}
		p.change.Txn, p.change.TxnIndex = rec.ID, len(rec.Changes)
		e, err := p.logEntry()
		if err != nil {
			return false, err
		}
		rec.Changes = append(rec.Changes, txChange{Table: p.t.tableName, Log: p.t.logName, PartitionKey: e.PartitionKey, ExplicitHash: p.k.explicitHash(), Data: e.Data})
		if byTable[p.t] == nil {
			order = append(order, p.t)
		}
		byTable[p.t] = append(byTable[p.t], p)
	}
	size := 0
	for _, c := range rec.Changes {
		size += len(c.Data)
	}
	if size > MaxTransactBytes {
		return false, validation("Transaction size has exceeded the maximum allowed size of 4 MB")
	}
	// From the commit record until every change is applied, no index
	// snapshot is taken (snapshot.go): one that covers the commit record
	// holds all of the transaction's changes. While its outcome, or a
	// change of it, is being resolved, its tables write no snapshot
	// (Table.unresolved, resolveCounted).
	s.snapGate.RLock()
	defer s.snapGate.RUnlock()
	// The commit point: once this record is acknowledged the transaction
	// happens, even if the process dies before the changes below land.
	// Its id is its message id: published again while its outcome is
	// unknown, it is stored once (resolve.go).
	b, _ := json.Marshal(&rec)
	if lost, err := s.publishCommit(ctx, rec.ID, b, true); err != nil {
		if !lost {
			return false, awserr.New(awserr.ErrService, "transaction commit: %v", err)
		}
		// It may have landed: its items are held until a resolver learns
		// it, and then writes its changes; the token stays in progress
		// until then (a retry with it: TransactionInProgressException).
		s.resolveCounted(order, ids, s.settleCommit(rec.ID, b, token, order, byTable))
		return false, errUnknownOutcome{awserr.New(awserr.ErrService, "transaction %s: the commit's outcome is not known yet (%v); runnel keeps trying to learn it: retry", rec.ID, err)}
	}
	late, err := s.applyCommitted(ctx, rec.ID, order, byTable)
	if err != nil {
		return true, err
	}
	return true, late
}

// applyCommitted writes and applies the changes of committed transaction
// id, by table. late is errLeaseEnded when they were acknowledged after
// this process's lease on the tables ended (applied here all the same).
// Changes that did not land are written by a resolver, their items held
// until then (resolve.go); err then reports it (retryable: a retry with
// the transaction's token is answered from the token cache, a write of
// an item held is refused until its change is applied).
func (s *Service) applyCommitted(ctx context.Context, id string, order []*Table, byTable map[*Table][]*pending) (late, err error) {
	var retry []*pending
	// The tables' changes are written at once, not one table after
	// another: the caller holds snapGate, which a snapshot waits for while
	// every write waits for it, and a table's write whose answer is lost
	// takes up to stream.ResolveWithin.
	results := make([][]error, len(order))
	encErrs := make([]error, len(order))
	var wg sync.WaitGroup
	for i, t := range order {
		wg.Go(func() { results[i], encErrs[i] = t.appendEachGated(ctx, byTable[t]) })
	}
	wg.Wait()
	for ti, t := range order {
		errs, encErr := results[ti], encErrs[ti]
		if encErr != nil {
			// No resolver will write them: no snapshot of these tables
			// until they open again (the open completes the commit).
			for _, t := range order {
				t.unresolved.Add(1)
			}
			return nil, awserr.New(awserr.ErrService, "transaction %s committed, applying it failed: %v", id, encErr)
		}
		for i, e := range errs {
			switch {
			case e == nil:
			case errors.As(e, new(leaseEnded)):
				late = e // applied here; the other changes too
			case errors.As(e, new(errUnknownOutcome)):
				err = e // its own resolver holds its item
			default:
				retry = append(retry, byTable[t][i]) // not stored: written again
				err = e
			}
		}
	}
	if len(retry) > 0 {
		ids := make([]string, len(retry))
		for i, p := range retry {
			ids[i] = s.itemID(p.t, p.k)
		}
		var tables []*Table
		for _, p := range retry {
			if !slices.Contains(tables, p.t) {
				tables = append(tables, p.t)
			}
		}
		s.resolveCounted(tables, ids, s.settleChanges(id, retry))
	}
	if err != nil {
		return late, awserr.New(awserr.ErrService, "transaction %s committed; some of its changes are not applied yet (%v); runnel is writing them: retry", id, err)
	}
	return late, nil
}

// settleChanges is the resolver of committed changes that were not
// stored: it writes them again until each is applied or of unknown
// outcome (then its own resolver holds it).
func (s *Service) settleChanges(id string, ps []*pending) func(ctx context.Context) bool {
	return func(ctx context.Context) bool {
		if !s.mayAct() {
			return false
		}
		var left []*pending
		byTable := map[*Table][]*pending{}
		var order []*Table
		for _, p := range ps {
			if byTable[p.t] == nil {
				order = append(order, p.t)
			}
			byTable[p.t] = append(byTable[p.t], p)
		}
		for _, t := range order {
			if t.gone() {
				continue // deleted, or dropped with the lease: the next holder completes it
			}
			unlock := lockPending(byTable[t])
			errs, err := t.appendEach(ctx, byTable[t])
			unlock()
			if err != nil {
				left = append(left, byTable[t]...)
				continue
			}
			for i, e := range errs {
				if e != nil && !errors.As(e, new(errUnknownOutcome)) && !errors.As(e, new(leaseEnded)) {
					left = append(left, byTable[t][i])
				}
			}
		}
		if len(left) > 0 {
			s.eng.Logger.Warn("committed transaction: changes still not written", "transaction", id, "changes", len(left))
			ps = left
			return false
		}
		s.eng.Logger.Info("committed transaction: changes written", "transaction", id)
		return true
	}
}

// settleCommit is the resolver of a transaction whose commit record's
// outcome is unknown: it publishes the record again with its id until
// JetStream answers, then writes the changes under their items' stripes
// (the record is stored: the transaction happens) and ends the token. It
// waits while mayAct is false. When the tables were dropped with the
// lease (the next holder completes the transaction if its record is
// stored) it lets go without publishing and frees the token if it is
// still in progress here; a table deleted meanwhile only loses its own
// changes.
func (s *Service) settleCommit(id string, b []byte, token string, order []*Table, byTable map[*Table][]*pending) func(ctx context.Context) bool {
	holding := s.holding.Load()
	return func(ctx context.Context) bool {
		if s.holding.Load() != holding {
			s.tokens.abandon(token)
			return true
		}
		if !s.mayAct() {
			return false
		}
		if lost, err := s.publishCommit(ctx, id, b, false); err != nil {
			s.eng.Logger.Warn("transaction commit of unknown outcome: still unknown", "transaction", id, "lost", lost, "err", err)
			return false
		}
		if s.holding.Load() != holding {
			// Stored, but the tables are another holding's now: its
			// holder completes it from the transaction log.
			s.tokens.abandon(token)
			return true
		}
		if !s.mayAct() {
			return false // stored; published again (a duplicate) next time
		}
		s.eng.Logger.Info("transaction commit of unknown outcome: stored", "transaction", id)
		var live []*Table
		var all []*pending
		for _, t := range order {
			if !t.gone() {
				live = append(live, t)
				all = append(all, byTable[t]...)
			}
		}
		unlock := lockPending(all)
		s.snapGate.RLock()
		_, err := s.applyCommitted(ctx, id, live, byTable)
		s.snapGate.RUnlock()
		unlock()
		var pending []string
		if err != nil {
			s.eng.Logger.Warn("committed transaction: changes not all applied yet", "transaction", id, "err", err)
			for _, p := range all {
				pending = append(pending, s.itemID(p.t, p.k))
			}
		}
		if token != "" {
			s.tokens.end(token, true, pending)
		}
		return true
	}
}

// recoverTransactions appends the changes of committed transactions that
// are missing from the logs (the process stopped between the commit
// record and the last change), and reloads the token cache.
func (s *Service) recoverTransactions(ctx context.Context, seen txnSeen) error {
	info, err := s.txlog.Info(ctx)
	if err != nil {
		return err
	}
	if info.State.Msgs == 0 {
		return nil
	}
	cons, err := s.eng.JS.OrderedConsumer(ctx, txlogStream, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return err
	}
	last := info.State.LastSeq
	remaining := info.State.Msgs
	repaired := 0
	for remaining > 0 {
		// Ask for no more than there are, so Fetch returns at once.
		msgs, err := cons.Fetch(int(min(remaining, 256)), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return err
		}
		n := 0
		var seq uint64
		for m := range msgs.Messages() {
			n++
			remaining--
			md, _ := m.Metadata()
			seq = md.Sequence.Stream
			var rec txRecord
			if err := json.Unmarshal(m.Data(), &rec); err != nil {
				return fmt.Errorf("table: bad transaction record %d: %w", seq, err)
			}
			if rec.Token != "" {
				s.tokens.load(rec.Token, rec.Hash, time.UnixMilli(rec.TimeMs))
			}
			for i, c := range rec.Changes {
				if seen[rec.ID][i] {
					continue
				}
				t, err := s.table(c.Table)
				if err != nil || t.logName != c.Log {
					continue // the table was deleted since
				}
				if t.coversTransaction(seq) {
					continue // applied before the table's index snapshot
				}
				ch, err := DecodeChange(c.Data)
				if err != nil {
					return err
				}
				k, err := t.schema.keyOf(ch.Keys, true)
				if err != nil {
					return err
				}
				p := &pending{t: t, k: k, change: *ch}
				if ch.NewImage != nil {
					// The item's size, as every write counts it (newChange);
					// before, the encoded change's length (keys and both
					// images) inflated TableSizeBytes and the 1 MB pages.
					p.size = int32(expr.ItemSize(ch.NewImage))
					p.exp = t.ttlOf(ch.NewImage)
				}
				out, err := s.logs.PutRecords(ctx, c.Log, []stream.PutRecordsRequestEntry{{Data: c.Data, PartitionKey: c.PartitionKey, ExplicitHashKey: c.ExplicitHash}})
				if err != nil || out.FailedRecordCount > 0 {
					return fmt.Errorf("table: complete transaction %s: %v", rec.ID, err)
				}
				sh, pos, err := stream.DecodeSequenceNumber(t.numbering, out.Records[0].SequenceNumber)
				if err != nil {
					return err
				}
				t.apply(p, uint16(sh), pos)
				repaired++
			}
		}
		if err := msgs.Error(); err != nil {
			return err
		}
		if n == 0 || seq >= last {
			break
		}
	}
	if repaired > 0 {
		s.eng.Logger.Warn("completed committed transactions whose changes were not all written before the last stop", "changes", repaired)
	}
	return nil
}

// tokenCache remembers ClientRequestTokens: in progress, or completed
// with the hash of their parameters, for TokenWindow.
type tokenCache struct {
	clock clockwork.Clock
	// busy reports whether any of the items is held by a write of
	// unknown outcome (Service.unsure).
	busy  func(ids []string) bool
	mu    sync.Mutex
	m     map[string]*tokenState
	swept time.Time
}

type tokenState struct {
	hash    string
	running bool
	done    time.Time
	// pending: the items of a committed transaction whose changes were
	// not all applied when it ended (their resolvers hold them, unsure).
	// Until none is held the token is still in progress: a retry must
	// not hear success before the transaction can be read whole.
	pending []string
}

func newTokenCache(c clockwork.Clock, busy func(ids []string) bool) *tokenCache {
	return &tokenCache{clock: c, busy: busy, m: map[string]*tokenState{}}
}

// begin claims token for a call with parameters hash. done is true when
// an identical call completed within the window (nothing to do).
func (c *tokenCache) begin(token, hash string) (done bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	if now.Sub(c.swept) > time.Minute { // forget expired tokens
		c.swept = now
		for k, st := range c.m {
			if !st.running && now.Sub(st.done) > TokenWindow {
				delete(c.m, k)
			}
		}
	}
	st, ok := c.m[token]
	if ok && !st.running && now.Sub(st.done) > TokenWindow {
		ok = false
	}
	switch {
	case !ok:
		c.m[token] = &tokenState{hash: hash, running: true}
		return false, nil
	case st.pending != nil && c.busy(st.pending):
		// Committed, its changes not all applied yet: in progress
		// (TransactionInProgressException) until they are.
		fallthrough
	case st.running:
		return false, awserr.New(awserr.ErrTransactionInProgress, "The transaction with the given request token is already in progress.")
	case st.hash != hash:
		return false, awserr.New(awserr.ErrIdempotentParameterMismatch, "The request uses the same client token as a previous, but non-identical request.")
	}
	st.pending = nil // all applied
	return true, nil
}

// end records the outcome: a failed call frees the token. pending: the
// items of a committed transaction's changes not all applied yet.
func (c *tokenCache) end(token string, ok bool, pending []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !ok {
		delete(c.m, token)
		return
	}
	if st := c.m[token]; st != nil {
		st.running, st.done, st.pending = false, c.clock.Now(), pending
	}
}

// abandon forgets token if it is still in progress (a transaction whose
// outcome this process no longer learns); a token loaded as done since
// stays.
func (c *tokenCache) abandon(token string) {
	if token == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.m[token]; st != nil && st.running {
		delete(c.m, token)
	}
}

func (c *tokenCache) load(token, hash string, at time.Time) {
	if c.clock.Now().Sub(at) > TokenWindow {
		return
	}
	c.mu.Lock()
	c.m[token] = &tokenState{hash: hash, done: at}
	c.mu.Unlock()
}
