package idempotency

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// Status of a record.
type Status string

// Record statuses. EXPIRED is not stored: see Record.StatusAt.
const (
	StatusInProgress Status = "INPROGRESS"
	StatusCompleted  Status = "COMPLETED"
	StatusExpired    Status = "EXPIRED"
)

// Attribute names of a record in a table, as Powertools' DynamoDB layer
// names them. The table's partition key is AttrID (type S); turn TTL on
// for AttrExpiration so DynamoDB (or runnel) deletes old records.
const (
	AttrID                   = "id"
	AttrExpiration           = "expiration"             // N, epoch seconds
	AttrInProgressExpiration = "in_progress_expiration" // N, epoch milliseconds
	AttrStatus               = "status"                 // S
	AttrData                 = "data"                   // S, JSON of the result
	AttrValidation           = "validation"             // S, MD5 hex of the validated payload
)

// Record is one idempotency record.
type Record struct {
	// ID is the idempotency key: "<function>.<handler>#<md5 hex>".
	ID     string
	Status Status
	// Expiration is when the record stops counting, in Unix seconds (the
	// table's TTL attribute).
	Expiration int64
	// InProgressExpiration is, for an INPROGRESS record, when the
	// execution holding it must have finished (its deadline), in Unix
	// milliseconds. 0 means not set (the attribute is absent).
	InProgressExpiration int64
	// Data is the JSON of the handler's result, for COMPLETED records.
	Data []byte
	// Validation is the MD5 hex of the payload's validated part, "" when
	// payload validation is off.
	Validation string
}

// StatusAt returns the record's status at now: StatusExpired when
// Expiration is before now (in seconds), else the stored status.
func (r *Record) StatusAt(now time.Time) Status {
	if r.Expiration < now.Unix() {
		return StatusExpired
	}
	return r.Status
}

// Store keeps idempotency records. Implementations must be safe for
// concurrent use; Put must be atomic (two concurrent Puts of one ID: at
// most one succeeds). The conformance suite in package
// idempotency/storetest checks the contract.
type Store interface {
	// Put writes r (an INPROGRESS record) unless a live record holds r.ID.
	// Exactly Powertools' condition: the write happens if no record exists,
	// or its expiration is before now (seconds), or it is INPROGRESS with
	// an in_progress_expiration before now (milliseconds). Otherwise Put
	// returns an *ExistsError, holding the existing record if the store can
	// return it in the same call.
	Put(ctx context.Context, r Record, now time.Time) error
	// Get returns the record with id, or ErrRecordNotFound. Reads must be
	// strongly consistent.
	Get(ctx context.Context, id string) (*Record, error)
	// Update sets the status, expiration, data and (when r.Validation is
	// set) validation of the record r.ID, if it is still the INPROGRESS
	// record the caller put: its status INPROGRESS and its
	// in_progress_expiration equal to held (OwnCondition). Otherwise it
	// changes nothing and returns ErrRecordChanged. How a handler's
	// success is saved.
	//
	// The trap this condition closes (Powertools updates unconditionally):
	// a handler that outlives its in-progress expiry (an in-process
	// function keeps running past its timeout) lets a retry put its own
	// INPROGRESS record; the late handler's unconditional write would
	// overwrite the retry's record while the retry still runs.
	Update(ctx context.Context, r Record, held int64) error
	// Delete removes the record id under the same condition as Update
	// (status INPROGRESS, in_progress_expiration equal to held): how a
	// handler's error or panic releases its key. A missing record is not
	// an error; a record that is no longer the caller's is left and
	// ErrRecordChanged returned (unconditionally, a late handler's error
	// would delete a running retry's record and let a third execution
	// start beside it).
	Delete(ctx context.Context, id string, held int64) error
}

// PutCondition is the condition expression of Put, with its names and
// value placeholders (#id, #expiry, #status, #in_progress_expiry; :now in
// epoch seconds, :now_in_millis, :inprogress): for stores on DynamoDB's
// expression language.
const PutCondition = "attribute_not_exists(#id) OR #expiry < :now OR " +
	"(#status = :inprogress AND attribute_exists(#in_progress_expiry) AND #in_progress_expiry < :now_in_millis)"

// PutConditionNames returns the ExpressionAttributeNames of PutCondition.
func PutConditionNames() map[string]string {
	return map[string]string{
		"#id":                 AttrID,
		"#expiry":             AttrExpiration,
		"#status":             AttrStatus,
		"#in_progress_expiry": AttrInProgressExpiration,
	}
}

// OwnCondition is the condition expression of Update and Delete: the
// record is still the INPROGRESS record its caller put. Placeholders
// #status and #in_progress_expiry (PutConditionNames has both); values
// :inprogress and :held (the caller's in_progress_expiration, epoch
// milliseconds).
const OwnCondition = "#status = :inprogress AND #in_progress_expiry = :held"

// OwnConditionNames returns the ExpressionAttributeNames of OwnCondition.
func OwnConditionNames() map[string]string {
	return map[string]string{"#status": AttrStatus, "#in_progress_expiry": AttrInProgressExpiration}
}

// UpdateExpression is the update of Update, with placeholders #data,
// #expiry, #status (and #validation, :validation when validating) and
// values :data, :expiry, :status.
func UpdateExpression(withValidation bool) (expr string, names map[string]string) {
	expr = "SET #data = :data, #expiry = :expiry, #status = :status"
	names = map[string]string{"#data": AttrData, "#expiry": AttrExpiration, "#status": AttrStatus}
	if withValidation {
		expr += ", #validation = :validation"
		names["#validation"] = AttrValidation
	}
	return expr, names
}

// DecodeRecord builds a Record from a stored item, for Store
// implementations. attr reports one attribute: its DynamoDB type letter
// ("S", "N"...) and its text, with present false when the attribute is
// absent or NULL. Numbers may be written as integers or decimals (a
// decimal is truncated). It fails, naming the attribute, when one has the
// wrong type or is not a number; store names the store in that error.
func DecodeRecord(store string, attr func(name string) (typ, text string, present bool)) (*Record, error) {
	var err error
	get := func(name, want string) string {
		typ, text, ok := attr(name)
		if !ok || err != nil {
			return ""
		}
		if typ != want {
			kind := map[string]string{"S": "a string", "N": "a number"}[want]
			err = fmt.Errorf("%s: attribute %s is not %s", store, name, kind)
			return ""
		}
		return text
	}
	intOf := func(name string) int64 {
		text := get(name, "N")
		if text == "" {
			return 0
		}
		i, perr := strconv.ParseInt(text, 10, 64)
		if perr != nil {
			f, ferr := strconv.ParseFloat(text, 64)
			if ferr != nil && err == nil {
				err = fmt.Errorf("%s: attribute %s: %w", store, name, perr)
			}
			i = int64(f)
		}
		return i
	}
	r := &Record{
		ID:                   get(AttrID, "S"),
		Status:               Status(get(AttrStatus, "S")),
		Expiration:           intOf(AttrExpiration),
		InProgressExpiration: intOf(AttrInProgressExpiration),
		Validation:           get(AttrValidation, "S"),
	}
	if d := get(AttrData, "S"); d != "" {
		r.Data = []byte(d)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}
