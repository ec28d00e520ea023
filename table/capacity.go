package table

import "github.com/runnel-dev/runnel/table/expr"

// ConsumedCapacity is the capacity a call used, as DynamoDB reports it
// when asked (ReturnConsumedCapacity TOTAL, or INDEXES, which adds the
// table's own share; runnel counts no share for secondary indexes). Units follow
// DynamoDB's on-demand arithmetic: a write is one unit per KB (1024
// bytes, rounded up) of the larger of the old and new item; a read is
// one unit per 4 KB of the items read (rounded up, at least one), half of
// that when not strongly consistent.
type ConsumedCapacity struct {
	TableName     string    `json:"TableName"`
	CapacityUnits float64   `json:"CapacityUnits"`
	Table         *Capacity `json:"Table,omitempty"`
	// LocalSecondaryIndexes and GlobalSecondaryIndexes: the units read
	// from an index, by its name (INDEXES).
	LocalSecondaryIndexes  map[string]*Capacity `json:"LocalSecondaryIndexes,omitempty"`
	GlobalSecondaryIndexes map[string]*Capacity `json:"GlobalSecondaryIndexes,omitempty"`
}

// Capacity is the units of one part of a call (INDEXES).
type Capacity struct {
	CapacityUnits float64 `json:"CapacityUnits"`
}

// ReturnConsumedCapacity settings.
const (
	CapacityTotal   = "TOTAL"
	CapacityIndexes = "INDEXES"
)

// capacity is the ConsumedCapacity to report under mode (nil: none).
func capacity(mode, table string, units float64) *ConsumedCapacity {
	switch mode {
	case CapacityTotal:
		return &ConsumedCapacity{TableName: table, CapacityUnits: units}
	case CapacityIndexes:
		return &ConsumedCapacity{TableName: table, CapacityUnits: units, Table: &Capacity{CapacityUnits: units}}
	}
	return nil
}

// asked reports whether mode asks for the ConsumedCapacity (the units,
// which cost the items' sizes, are counted only then).
func asked(mode string) bool { return mode == CapacityTotal || mode == CapacityIndexes }

// writeCapacity is the ConsumedCapacity of a write that replaced old by
// nw, under mode (nil: none asked).
func writeCapacity(mode, table string, old, nw Item) *ConsumedCapacity {
	if !asked(mode) {
		return nil
	}
	return capacity(mode, table, writeUnits(old, nw))
}

// writeUnits are the units of a write that replaced old by nw.
func writeUnits(old, nw Item) float64 {
	n := max(expr.ItemSize(old), expr.ItemSize(nw))
	return float64(max(1, (n+1023)/1024))
}

// readUnits are the units of reading size bytes.
func readUnits(size int, consistent bool) float64 {
	u := float64(max(1, (size+4095)/4096))
	if !consistent {
		u /= 2
	}
	return u
}
