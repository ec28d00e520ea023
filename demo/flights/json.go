package flights

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/wire/jsonstr"
)

// AppendJSON appends f as one compact JSON object to dst and returns the
// extended slice:
//
//	{"date":"2001/01/01 00:47","delay":66,"distance":1750,"origin":"DTW","destination":"LAS"}
//
// The date is f.Date formatted as "YYYY/MM/DD HH:MM" (wall clock, read as
// UTC), truncated to the minute. Strings are escaped as JSON requires
// (invalid UTF-8 becomes U+FFFD). ParseJSON gives back the same Flight for
// whole-minute dates in years 0000-9999 and valid UTF-8 strings, which
// covers every row of the data set. The output is byte-for-byte the format
// of vega-datasets' flights-20k.json. It does not allocate when dst has
// room (about 90 bytes per record).
func (f *Flight) AppendJSON(dst []byte) []byte {
	return f.appendJSON(dst, false)
}

// AppendJSONPoison is AppendJSON with the demo's poison marker added as the
// last member: {...,"destination":"LAS","poison":true}. ParseJSON reports it.
func (f *Flight) AppendJSONPoison(dst []byte) []byte {
	return f.appendJSON(dst, true)
}

func (f *Flight) appendJSON(dst []byte, poison bool) []byte {
	dst = append(dst, `{"date":"`...)
	dst = appendDate(dst, f.Date)
	dst = append(dst, `","delay":`...)
	dst = strconv.AppendInt(dst, f.Delay, 10)
	dst = append(dst, `,"distance":`...)
	dst = strconv.AppendInt(dst, f.Distance, 10)
	dst = append(dst, `,"origin":`...)
	dst = jsonstr.AppendNoHTML(dst, f.Origin)
	dst = append(dst, `,"destination":`...)
	dst = jsonstr.AppendNoHTML(dst, f.Destination)
	if poison {
		return append(dst, `,"poison":true}`...)
	}
	return append(dst, '}')
}

const (
	microsPerMinute = 60_000_000
	minutesPerDay   = 24 * 60
)

// appendDate appends micros as "YYYY/MM/DD HH:MM".
func appendDate(dst []byte, micros int64) []byte {
	minutes := floorDiv(micros, microsPerMinute)
	days := floorDiv(minutes, minutesPerDay)
	mod := minutes - days*minutesPerDay
	y, m, d := civilFromDays(days)
	if y >= 0 && y <= 9999 {
		dst = append(dst, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10))
	} else {
		dst = strconv.AppendInt(dst, y, 10)
	}
	h, mi := mod/60, mod%60
	return append(dst, '/', byte('0'+m/10), byte('0'+m%10), '/', byte('0'+d/10), byte('0'+d%10),
		' ', byte('0'+h/10), byte('0'+h%10), ':', byte('0'+mi/10), byte('0'+mi%10))
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// civilFromDays converts days since 1970-01-01 to a proleptic Gregorian
// date (H. Hinnant's algorithm).
func civilFromDays(z int64) (y, m, d int64) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	if mp < 10 {
		m = mp + 3
	} else {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

// ErrSyntax is wrapped by every error ParseJSON returns.
var ErrSyntax = errors.New("flights: bad flight JSON")

// dateLayout is the time layout of the "date" member.
const dateLayout = "2006/01/02 15:04"

// flightJSON is the wire form; pointers tell a missing member from a zero.
type flightJSON struct {
	Date        *string `json:"date"`
	Delay       *int64  `json:"delay"`
	Distance    *int64  `json:"distance"`
	Origin      *string `json:"origin"`
	Destination *string `json:"destination"`
	Poison      *bool   `json:"poison"`
}

// EachKinesisFlight parses, in order, the flight (ParseJSON) of each
// record of a Kinesis event and hands it to fn with the record and its
// shard id (the event id up to its ':'). The first record that does not
// parse fails the batch ("record <event id>: ..."), and so does the
// first poison record ("poison record <sequence number>"), before fn
// sees any later record.
func EachKinesisFlight(ev events.KinesisEvent, fn func(shard string, r events.KinesisEventRecord, f Flight)) error {
	for _, r := range ev.Records {
		f, poison, err := ParseJSON(r.Kinesis.Data)
		if err != nil {
			return fmt.Errorf("record %s: %w", r.EventID, err)
		}
		if poison {
			return errors.New("poison record " + r.Kinesis.SequenceNumber)
		}
		shard, _, _ := strings.Cut(r.EventID, ":")
		fn(shard, r, f)
	}
	return nil
}

// ParseJSON decodes one flight object as written by AppendJSON or found in
// flights-20k.json, with encoding/json (so member names match
// case-insensitively, unknown members are skipped, and for repeated members
// the last one wins). All five fields must be present and not null: "date"
// as a "YYYY/MM/DD HH:MM" string (read as UTC), "delay" and "distance" as
// integers, "origin" and "destination" as strings. The optional "poison"
// member is returned as poison.
//
// Errors wrap ErrSyntax. ParseJSON does not keep b and is safe for
// concurrent use.
func ParseJSON(b []byte) (f Flight, poison bool, err error) {
	var j flightJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return Flight{}, false, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	for _, m := range [...]struct {
		name    string
		missing bool
	}{{"date", j.Date == nil}, {"delay", j.Delay == nil}, {"distance", j.Distance == nil}, {"origin", j.Origin == nil}, {"destination", j.Destination == nil}} {
		if m.missing {
			return Flight{}, false, fmt.Errorf("%w: missing %q", ErrSyntax, m.name)
		}
	}
	if f.Date, err = parseDate(*j.Date); err != nil {
		return Flight{}, false, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	f.Delay, f.Distance, f.Origin, f.Destination = *j.Delay, *j.Distance, *j.Origin, *j.Destination
	return f, j.Poison != nil && *j.Poison, nil
}

// parseDate parses s, "YYYY/MM/DD HH:MM" with exactly those digits, into
// microseconds since the epoch, read as UTC.
func parseDate(s string) (int64, error) {
	t, err := time.Parse(dateLayout, s)
	if err != nil {
		return 0, fmt.Errorf("date %q: %v", s, err)
	}
	// time.Parse also accepts single-digit hours ("0:47").
	if t.Format(dateLayout) != s {
		return 0, fmt.Errorf("date %q: want %q", s, "YYYY/MM/DD HH:MM")
	}
	return t.UnixMicro(), nil
}
