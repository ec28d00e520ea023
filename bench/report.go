package bench

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/runnel-dev/runnel/internal/procstat"
)

// The report: the machine, peak memory, and the Markdown table.

// --- machine and memory --------------------------------------------------

// Machine describes the host: GOOS/GOARCH, CPUs, Go version, CPU model.
func Machine() string {
	s := fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	if m := cpuModel(); m != "" {
		s += ", " + m
	}
	return s
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// PeakRSSMiB is the process's peak resident set in MiB (Linux; 0
// elsewhere).
func PeakRSSMiB() float64 { return procstat.PeakRSSMiB() }

// Markdown renders the report as a table with the ratios, for
// docs/benchmarks/streams.md.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Machine: %s\n\n", r.Machine)
	b.WriteString("| scenario | records | seconds | records/s | how |\n")
	b.WriteString("|---|---:|---:|---:|---|\n")
	for _, s := range r.Scenarios {
		fmt.Fprintf(&b, "| %s | %d | %.2f | %s | %s |\n", s.Name, s.Records, s.Seconds, group(s.RecordsPerS), s.Note)
	}
	b.WriteString("\n| ratio | value |\n|---|---:|\n")
	for _, k := range []string{"mapping/consume-ack", "mapping/consume-noack", "put/publish", "queue/workqueue", "sns-fanout/publish", "sns-fanout-raw/publish", "putevents-sqs/publish"} {
		if v, ok := r.Ratios[k]; ok {
			fmt.Fprintf(&b, "| %s | %.0f%% |\n", k, 100*v)
		}
	}
	fmt.Fprintf(&b, "\nPeak RSS (VmHWM) of the process: %.0f MiB\n", r.PeakRSSMiB)
	return b.String()
}

// group formats a rate with thousands separators: 153,210.
func group(v float64) string {
	s := strconv.FormatInt(int64(v+0.5), 10)
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}
