package observe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/runnel-dev/runnel"
)

// Report is what /status serves and `runnel status` prints: the alarms
// and a summary of the state.
type Report struct {
	// Time is when the summary (State) was read.
	Time time.Time `json:"time"`
	// EvaluatedAt is when the alarms were last evaluated.
	EvaluatedAt time.Time `json:"evaluatedAt"`
	// InAlarm counts the alarms in ALARM.
	InAlarm int       `json:"inAlarm"`
	Alarms  []Alarm   `json:"alarms"`
	State   *Snapshot `json:"state"`
}

// Report returns the alarms as of the last evaluation (evaluating them
// first if they never were) with a fresh snapshot of the state.
func (a *Alarms) Report(ctx context.Context) *Report {
	if last, _ := a.LastEvaluation(); last.IsZero() {
		a.Evaluate(ctx)
	}
	last, _ := a.LastEvaluation()
	r := &Report{EvaluatedAt: last, Alarms: a.Alarms(), State: Take(ctx, a.rn, a.takeOptions())}
	r.Time = r.State.Time
	for _, al := range r.Alarms {
		if al.State == StateAlarm {
			r.InAlarm++
		}
	}
	return r
}

// StatusHandler serves the Report as JSON.
func StatusHandler(a *Alarms) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(a.Report(ctx))
	})
}

// Handler serves /metrics (Prometheus, with the Go and process
// collectors), /status (the Report as JSON), and the web page at / with
// its JSON endpoints under /api/ (web.go) for rn and its alarms.
// Cross-origin browser requests that change or receive anything are
// refused with 403 (see web.go).
func Handler(rn *runnel.Runnel, a *Alarms) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", MetricsHandler(Registry(NewCollector(rn, a))))
	mux.Handle("GET /status", StatusHandler(a))
	registerWeb(mux, rn, a) // / (the page) and /api/ (see web.go)
	// A page of another site must not start a redrive: a cross-origin
	// browser POST (even a "simple" one, text/plain with no preflight) is
	// refused with 403. GET /api/dlq/{queue} checks the same itself.
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		writeError(rw, http.StatusForbidden, errors.New("cross-origin request refused: "+r.Method+" "+r.URL.Path+" only from the page served here"))
	}))
	var allowed []string
	if a != nil {
		allowed = a.cfg.AllowedHosts
	}
	return loopbackHosts(cop.Handler(mux), allowed)
}

// loopbackHosts refuses, on a connection to a loopback address, a request
// whose Host is a name other than localhost, *.localhost, this machine's
// host name or one of allowed (421 Misdirected Request): DNS rebinding
// points a site's name at 127.0.0.1, so that its page's requests to "its
// own" origin reach this server and pass the same-origin checks. A
// request from another machine (a connection to a non-loopback address)
// is not checked. Trap: a reverse proxy on this machine that passes its
// own Host through needs that name in allowed (serve --http-allowed-hosts).
func loopbackHosts(h http.Handler, allowed []string) http.Handler {
	ok := map[string]bool{"localhost": true}
	if hn, err := os.Hostname(); err == nil && hn != "" {
		ok[strings.ToLower(hn)] = true
	}
	for _, a := range allowed {
		ok[strings.TrimSuffix(strings.ToLower(a), ".")] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if la, isTCP := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr); isTCP && la.IP.IsLoopback() {
			host := r.Host
			if hp, _, err := net.SplitHostPort(host); err == nil {
				host = hp
			}
			host = strings.TrimSuffix(strings.ToLower(host), ".")
			if !ok[host] && !strings.HasSuffix(host, ".localhost") && net.ParseIP(strings.Trim(host, "[]")) == nil {
				writeError(w, http.StatusMisdirectedRequest, errors.New("host "+strconv.Quote(r.Host)+" refused on a loopback connection: only localhost, an IP address, this machine's name or a name given to --http-allowed-hosts is answered (DNS rebinding)"))
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// WriteText prints the report as tables: alarms, functions, mappings
// (with iterator age per shard), queues (with depth).
func WriteText(w io.Writer, r *Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }
	p("runnel status at %s: %d of %d alarms in ALARM\n", r.Time.UTC().Format(time.RFC3339), r.InAlarm, len(r.Alarms))
	section(p, "ALARMS", "STATE\tALARM\tVALUE\tTHRESHOLD\tSINCE\tMESSAGE", "(none: no dead-letter queue, stream mapping or function to watch)",
		r.Alarms, func(a Alarm) {
			p("  %s\t%s\t%s\t%s\t%s\t%s\n", a.State, a.Name, formatValue(a.Value, a.Unit), formatValue(a.Threshold, a.Unit),
				a.Since.UTC().Format(time.RFC3339), a.Message)
		})
	s := r.State
	section(p, "FUNCTIONS", "FUNCTION\tINVOCATIONS\tERRORS\tTHROTTLES\tCONCURRENT\tCOUNTERS", "(none)", s.Functions, func(f FunctionState) {
		src := "this process"
		if !f.Live {
			src = "sum of its mappings (as published)"
		}
		p("  %s\t%d\t%d\t%d\t%d\t%s\n", f.Name, f.Invocations, f.Errors, f.Throttles, f.ConcurrentExecutions, src)
	})
	section(p, "MAPPINGS", "UUID\tSOURCE\tFUNCTION\tSTATE\tSHARD\tITERATOR AGE\tPENDING\tPROCESSED\tDISCARDED\tLAST RESULT", "(none)",
		s.Mappings, func(m MappingState) {
			state := m.State
			if !m.Live {
				if m.PublishedAt.IsZero() {
					state += " (stored)"
				} else {
					state += " (published " + m.PublishedAt.UTC().Format(time.TimeOnly) + ")"
				}
			}
			src := m.SourceKind + " " + m.Source
			if q := m.Queue; q != nil {
				p("  %s\t%s\t%s\t%s\t-\t-\t-\t%d\t%d\t%s\n", m.UUID, src, m.Function, state, q.DeletedMessages, q.MovedToDeadLetter, q.LastProcessingResult)
				return
			}
			if len(m.Shards) == 0 {
				p("  %s\t%s\t%s\t%s\t-\t-\t-\t-\t-\t\n", m.UUID, src, m.Function, state)
				return
			}
			for _, sh := range m.Shards {
				p("  %s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", m.UUID, src, m.Function, state, sh.ShardID,
					time.Duration(sh.IteratorAgeMs)*time.Millisecond, sh.PendingRecords, sh.ProcessedRecords, sh.DiscardedRecords, sh.LastProcessingResult)
			}
		})
	section(p, "QUEUES", "QUEUE\tDEPTH\tVISIBLE\tNOT VISIBLE\tDELAYED\tDEAD-LETTER", "(none)", s.Queues, func(q QueueState) {
		dlq := "no"
		if q.DeadLetter {
			dlq = "yes: " + strings.Join(q.DeadLetterFor, "; ")
		}
		p("  %s\t%d\t%d\t%d\t%d\t%s\n", q.Name, q.Depth(), q.Visible, q.NotVisible, q.Delayed, dlq)
	})
	for _, e := range s.Errors {
		p("\nnot read: %s\n", e)
	}
	return tw.Flush()
}

// section prints one table of WriteText: its title, then the header and
// a row per element, or the none line when there are no elements.
func section[E any](p func(string, ...any), title, header, none string, rows []E, row func(E)) {
	p("\n%s\n", title)
	if len(rows) == 0 {
		p("  %s\n", none)
		return
	}
	p("  %s\n", header)
	for _, r := range rows {
		row(r)
	}
}

func formatValue(v float64, unit string) string {
	switch unit {
	case "ms":
		return (time.Duration(v) * time.Millisecond).String()
	case "ratio":
		return percent(v)
	default:
		return fmt.Sprintf("%g", v)
	}
}
