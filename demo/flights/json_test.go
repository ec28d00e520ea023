package flights

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// parseJSONStd is the plain encoding/json struct decoding of a record (which,
// unlike ParseJSON, matches member names case-insensitively and accepts
// single-digit hours): the cheapest way to decode one, benchmarked against
// ParseJSON.
func parseJSONStd(b []byte) (Flight, bool, error) {
	var v struct {
		Date        *string `json:"date"`
		Delay       *int64  `json:"delay"`
		Distance    *int64  `json:"distance"`
		Origin      *string `json:"origin"`
		Destination *string `json:"destination"`
		Poison      *bool   `json:"poison"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return Flight{}, false, err
	}
	if v.Date == nil || v.Delay == nil || v.Distance == nil || v.Origin == nil || v.Destination == nil {
		return Flight{}, false, errors.New("missing field")
	}
	t, err := time.Parse(dateLayout, *v.Date)
	if err != nil {
		return Flight{}, false, err
	}
	return Flight{t.UnixMicro(), *v.Delay, *v.Distance, *v.Origin, *v.Destination}, v.Poison != nil && *v.Poison, nil
}

// parseJSONRef is the fuzzing oracle: encoding/json with ParseJSON's exact
// rules (case-sensitive names, last duplicate wins, null only for poison,
// strict date layout).
func parseJSONRef(b []byte) (Flight, bool, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return Flight{}, false, err
	}
	var f Flight
	var date string
	for _, x := range []struct {
		name string
		dst  any
	}{{"date", &date}, {"delay", &f.Delay}, {"distance", &f.Distance}, {"origin", &f.Origin}, {"destination", &f.Destination}} {
		raw, ok := m[x.name]
		if !ok || string(raw) == "null" {
			return Flight{}, false, errors.New("missing " + x.name)
		}
		if err := json.Unmarshal(raw, x.dst); err != nil {
			return Flight{}, false, err
		}
	}
	t, err := time.Parse(dateLayout, date)
	if err != nil || t.Format(dateLayout) != date {
		return Flight{}, false, errors.New("bad date")
	}
	f.Date = t.UnixMicro()
	var poison bool
	if raw, ok := m["poison"]; ok {
		if err := json.Unmarshal(raw, &poison); err != nil {
			return Flight{}, false, err
		}
	}
	return f, poison, nil
}

// TestAppendJSONMatchesSample: AppendJSON reproduces every object of
// flights-20k.json byte for byte, and ParseJSON decodes each one to the
// values encoding/json and time.Parse give.
func TestAppendJSONMatchesSample(t *testing.T) {
	raw, flights := loadSample(t)
	var buf []byte
	for i, f := range flights {
		buf = f.AppendJSON(buf[:0])
		if !bytes.Equal(buf, raw[i]) {
			t.Fatalf("row %d: AppendJSON = %s, file has %s", i, buf, raw[i])
		}
		got, poison, err := ParseJSON(raw[i])
		if err != nil || poison || got != f {
			t.Fatalf("row %d: ParseJSON(%s) = %+v, %v, %v; want %+v", i, raw[i], got, poison, err, f)
		}
	}
	if want := `{"date":"2001/01/01 00:47","delay":66,"distance":1750,"origin":"DTW","destination":"LAS"}`; string(raw[0]) != want {
		t.Errorf("sample starts with %s", raw[0])
	}
}

func TestRoundTrip(t *testing.T) {
	d := func(s string) int64 {
		tm, err := time.Parse(dateLayout, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixMicro()
	}
	for _, f := range []Flight{
		{d("2001/01/01 00:47"), 66, 1750, "DTW", "LAS"},
		{d("2001/07/01 00:00"), -1116, 21, "ORD", "MDW"},
		{d("2000/02/29 23:59"), math.MinInt64, math.MaxInt64, "", ""},
		{d("1969/12/31 23:59"), 0, 0, "a\"b\\c\n\t\x01/", "ünïcødé \u2028 😀"},
		{d("0000/01/01 00:00"), 1, -1, "X", "Y"},
		{d("9999/12/31 23:59"), 1, -1, "X", "Y"},
	} {
		for _, poison := range []bool{false, true} {
			var b []byte
			if poison {
				b = f.AppendJSONPoison(nil)
			} else {
				b = f.AppendJSON(nil)
			}
			if !json.Valid(b) {
				t.Fatalf("invalid JSON %s", b)
			}
			for name, parse := range map[string]func([]byte) (Flight, bool, error){"ParseJSON": ParseJSON, "std": parseJSONStd} {
				got, gotPoison, err := parse(b)
				if err != nil || got != f || gotPoison != poison {
					t.Errorf("%s(%s) = %+v, %v, %v; want %+v, %v", name, b, got, gotPoison, err, f, poison)
				}
			}
		}
	}
	f := Flight{Origin: "ORD", Destination: "JFK"}
	if got, want := string(f.AppendJSONPoison([]byte("x"))), `x{"date":"1970/01/01 00:00","delay":0,"distance":0,"origin":"ORD","destination":"JFK","poison":true}`; got != want {
		t.Errorf("AppendJSONPoison = %s, want %s", got, want)
	}
	// Invalid UTF-8 is replaced, as encoding/json does.
	bad := Flight{Origin: "A\xffB"}
	got, _, err := ParseJSON(bad.AppendJSON(nil))
	var want string
	if jerr := json.Unmarshal([]byte(`"A`+"\xff"+`B"`), &want); jerr != nil || err != nil || got.Origin != want || want != "A\uFFFDB" {
		t.Errorf("invalid UTF-8: %q, %v; want %q (%v)", got.Origin, err, want, jerr)
	}
}

// TestDateFormat compares AppendJSON's calendar arithmetic with the time
// package, including before 1970 and sub-minute values (truncated), and
// checks that parseDate reads the dates back.
func TestDateFormat(t *testing.T) {
	lo := time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	hi := time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC).UnixMicro()
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200_000; i++ {
		us := lo + r.Int64N(hi-lo)
		if i%2 == 0 {
			us -= us % microsPerMinute // whole minutes must round-trip
		}
		tm := time.UnixMicro(us).UTC()
		want := tm.Format(dateLayout)
		got := string(appendDate(nil, us))
		if got != want {
			t.Fatalf("appendDate(%d) = %s, want %s", us, got, want)
		}
		back, err := parseDate(got)
		if wantBack := tm.Truncate(time.Minute).UnixMicro(); err != nil || back != wantBack {
			t.Fatalf("parseDate(%s) = %d, %v; want %d", got, back, err, wantBack)
		}
	}
}

func TestParseJSONCases(t *testing.T) {
	base := Flight{time.Date(2001, 1, 1, 0, 47, 0, 0, time.UTC).UnixMicro(), 66, 1750, "DTW", "LAS"}
	ok := []struct {
		in     string
		want   Flight
		poison bool
	}{
		{` { "destination" : "LAS" , "origin":"DTW","distance":1750,"delay":66,"date":"2001/01/01 00:47"}` + "\n\t\r ", base, false},
		{`{"date":"2001/01/01 00:47","delay":66,"distance":1750,"origin":"DTW","destination":"LAS","poison":true}`, base, true},
		{`{"poison":true,"date":"2001/01/01 00:47","delay":66,"distance":1750,"origin":"DTW","destination":"LAS","poison":false}`, base, false},
		{`{"date":"2001/01/01 00:47","delay":66,"distance":1750,"origin":"DTW","destination":"LAS","poison":null}`, base, false},
		{`{"date":"2001/01/01 00:47","delay":1,"delay":66,"distance":1750,"origin":"D\u0054W","destination":"L\/AS","x":{"a":[1,-2.5e+3,"s",true,null,{}],"b":[]}}`,
			Flight{base.Date, 66, 1750, "DTW", "L/AS"}, false},
		{`{"d\u0061te":"2001/01/01 00:47","delay":-0,"distance":-9223372036854775808,"origin":"\ud83d\ude00","destination":"\ud800x"}`,
			Flight{base.Date, 0, math.MinInt64, "😀", "\ufffdx"}, false},
		{`{"date":"2000/02/29 23:59","delay":9223372036854775807,"distance":0,"origin":"","destination":""}`,
			Flight{time.Date(2000, 2, 29, 23, 59, 0, 0, time.UTC).UnixMicro(), math.MaxInt64, 0, "", ""}, false},
	}
	for _, tc := range ok {
		got, poison, err := ParseJSON([]byte(tc.in))
		if err != nil || got != tc.want || poison != tc.poison {
			t.Errorf("ParseJSON(%s) = %+v, %v, %v; want %+v, %v", tc.in, got, poison, err, tc.want, tc.poison)
		}
		if rf, rp, err := parseJSONRef([]byte(tc.in)); err != nil || rf != tc.want || rp != tc.poison {
			t.Errorf("oracle disagrees on %s: %+v, %v, %v", tc.in, rf, rp, err)
		}
	}
	good := `{"date":"2001/01/01 00:47","delay":66,"distance":1750,"origin":"DTW","destination":"LAS"}`
	bad := []string{
		``, `null`, `[]`, `{}`, `{"date":"2001/01/01 00:47"}`, good + `x`, good + `{}`, good[:len(good)-1],
		strings.Replace(good, `"delay":66`, `"delay":66.0`, 1),
		strings.Replace(good, `"delay":66`, `"delay":6e1`, 1),
		strings.Replace(good, `"delay":66`, `"delay":066`, 1),
		strings.Replace(good, `"delay":66`, `"delay":"66"`, 1),
		strings.Replace(good, `"delay":66`, `"delay":null`, 1),
		strings.Replace(good, `"delay":66`, `"delay":-`, 1),
		strings.Replace(good, `"delay":66`, `"delay":9223372036854775808`, 1),
		strings.Replace(good, `"delay":66`, `"delay":-9223372036854775809`, 1),
		strings.Replace(good, `"delay":66`, `"delay":99999999999999999999`, 1),
		strings.Replace(good, `"origin":"DTW"`, `"origin":DTW`, 1),
		strings.Replace(good, `"origin":"DTW"`, `"origin":"D`+"\x01"+`W"`, 1),
		strings.Replace(good, `"origin":"DTW"`, `"origin":"D\xW"`, 1),
		strings.Replace(good, `"origin":"DTW"`, `"origin":"D\u00"`, 1),
		strings.Replace(good, `2001/01/01 00:47`, `2001/02/29 00:47`, 1),
		strings.Replace(good, `2001/01/01 00:47`, `2001/13/01 00:47`, 1),
		strings.Replace(good, `2001/01/01 00:47`, `2001/01/01 24:00`, 1),
		strings.Replace(good, `2001/01/01 00:47`, `2001/01/01 00:60`, 1),
		strings.Replace(good, `2001/01/01 00:47`, `2001/01/01 0:47`, 1),
		strings.Replace(good, `2001/01/01 00:47`, `2001-01-01 00:47`, 1),
		strings.Replace(good, `2001/01/01 00:47`, `2001/01/01 00:47:00`, 1),
		strings.Replace(good, `2001/01/01 00:47`, `2001/0a/01 00:47`, 1),
		strings.Replace(good, `"LAS"}`, `"LAS",}`, 1),
		strings.Replace(good, `"LAS"}`, `"LAS","poison":1}`, 1),
		strings.Replace(good, `"LAS"}`, `"LAS","x":[1,]}`, 1),
		strings.Replace(good, `"LAS"}`, `"LAS","x":tru}`, 1),
		strings.Replace(good, `"LAS"}`, `"LAS","x":01}`, 1),
		strings.Replace(good, `"LAS"}`, `"LAS","x":1.}`, 1),
		strings.Replace(good, `,`, ` `, 1),
		strings.Replace(good, `:`, ` `, 1),
	}
	for _, in := range bad {
		if f, _, err := ParseJSON([]byte(in)); err == nil || !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseJSON(%s) = %+v, %v; want ErrSyntax", in, f, err)
		}
	}
}

func benchFlights(b *testing.B) ([]Flight, [][]byte) {
	raw, flights := loadSample(b)
	enc := make([][]byte, len(raw))
	for i := range raw {
		enc[i] = raw[i]
	}
	return flights, enc
}

func BenchmarkAppendJSON(b *testing.B) {
	flights, _ := benchFlights(b)
	buf := make([]byte, 0, 256)
	var n int
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		buf = flights[i%len(flights)].AppendJSON(buf[:0])
		n += len(buf)
	}
	b.SetBytes(int64(n / max(b.N, 1)))
}

func BenchmarkParseJSON(b *testing.B) {
	_, enc := benchFlights(b)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, _, err := ParseJSON(enc[i%len(enc)]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseJSONStd measures the encoding/json alternative.
func BenchmarkParseJSONStd(b *testing.B) {
	_, enc := benchFlights(b)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, _, err := parseJSONStd(enc[i%len(enc)]); err != nil {
			b.Fatal(err)
		}
	}
}

// TestParseJSONConcurrent parses from several goroutines (run with -race).
func TestParseJSONConcurrent(t *testing.T) {
	raw, flights := loadSample(t)
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func() {
			for i := g; i < len(raw); i += 4 {
				f, _, err := ParseJSON(raw[i])
				if err == nil && f != flights[i] {
					err = errors.New("mismatch at " + string(raw[i]))
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
