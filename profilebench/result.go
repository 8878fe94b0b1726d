package profilebench

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/palsched/pal/internal/quote"
)

// ResultPrefix starts the one line a benchmark image prints for its run.
// A fixed word, not a format such as JSON, so that a shell script with
// printf can be a benchmark, and so that the line can be found among
// whatever else the image logs.
const ResultPrefix = "PAL_RESULT"

// ResultFormat documents the result line for help texts and errors.
const ResultFormat = `PAL_RESULT iter_time_s=SECONDS [sm_clock_mhz=MHZ] [power_w=WATTS] [temp_c=CELSIUS] [gpu_uuid=GPU-...]
  one line, fields separated by spaces, each KEY=VALUE at most once, no other keys;
  iter_time_s > 0 is required; sm_clock_mhz and power_w >= 0; temp_c any finite number`

// maxResultLine bounds one result line: a termination message is at most
// 4096 bytes anyway, and a log line longer than this is not a result.
const maxResultLine = 1024

// Result is what one run reported.
type Result struct {
	IterTime float64
	// SMClock, Power and Temp are NaN when the line leaves them out.
	SMClock, Power, Temp float64
	// UUID is the GPU's UUID as the image saw it, or empty.
	UUID string
}

// ParseResultLine reads one result line (ResultFormat). The error names
// the field that is wrong; the caller adds the pod and the line.
func ParseResultLine(line string) (Result, error) {
	r := Result{SMClock: math.NaN(), Power: math.NaN(), Temp: math.NaN()}
	if len(line) > maxResultLine {
		return r, fmt.Errorf("result line is %d bytes, more than %d", len(line), maxResultLine)
	}
	line = strings.TrimRight(line, "\r")
	fields := strings.Fields(line)
	if len(fields) == 0 || fields[0] != ResultPrefix {
		return r, fmt.Errorf("result line does not start with %s", ResultPrefix)
	}
	seen := map[string]bool{}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return r, fmt.Errorf("field %s: want KEY=VALUE", quote.Value(f))
		}
		if seen[k] {
			return r, fmt.Errorf("field %s: given twice", k)
		}
		seen[k] = true
		if k == "gpu_uuid" {
			if v == "" || strings.ContainsAny(v, ",\"") {
				return r, fmt.Errorf("field gpu_uuid=%s: want the GPU's UUID (GPU-...)", quote.Value(v))
			}
			r.UUID = v
			continue
		}
		var dst *float64
		switch k {
		case "iter_time_s":
			dst = &r.IterTime
		case "sm_clock_mhz":
			dst = &r.SMClock
		case "power_w":
			dst = &r.Power
		case "temp_c":
			dst = &r.Temp
		default:
			return r, fmt.Errorf("field %s: unknown key (want iter_time_s, sm_clock_mhz, power_w, temp_c or gpu_uuid)", quote.Text(k))
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
			return r, fmt.Errorf("field %s=%s: want a finite number", k, quote.Value(v))
		}
		switch {
		case k == "iter_time_s" && !(x > 0):
			return r, fmt.Errorf("field iter_time_s=%s: want seconds per iteration > 0", quote.Value(v))
		case (k == "sm_clock_mhz" || k == "power_w") && x < 0:
			return r, fmt.Errorf("field %s=%s: must not be negative", k, quote.Value(v))
		}
		*dst = x
	}
	if !seen["iter_time_s"] {
		return r, fmt.Errorf("field iter_time_s: missing (it is required)")
	}
	return r, nil
}

// FindResult finds the one result line in text (a termination message or
// a log) and parses it. found is false when no line starts with
// ResultPrefix; a second result line is an error, since which of two
// runs the measurement is would be a guess. line is 1-based.
func FindResult(text string) (r Result, line int, found bool, err error) {
	for i, l := range strings.Split(text, "\n") {
		t := strings.TrimLeft(l, " \t")
		if t != ResultPrefix && !strings.HasPrefix(t, ResultPrefix+" ") && !strings.HasPrefix(t, ResultPrefix+"\t") {
			continue
		}
		if found {
			return r, i + 1, true, fmt.Errorf("a second %s line (the first is line %d)", ResultPrefix, line)
		}
		found, line = true, i+1
		if r, err = ParseResultLine(t); err != nil {
			return r, line, true, err
		}
	}
	return r, line, found, nil
}
