package variability

import (
	"io"
	"math"
	"strconv"

	"github.com/palsched/pal/internal/quote"
)

// MeasurementColumns are the columns of a measurement file, required ones
// first. Any other column is refused, so that a misspelt optional column
// ("temp" for "temp_c") is not silently dropped.
var MeasurementColumns = []string{"node", "gpu_index", "gpu_uuid", "model", "iter_time_s", "sm_clock_mhz", "power_w", "temp_c"}

// measureRequired is how many of MeasurementColumns every file must have.
const measureRequired = 5

// MeasurementFormat documents the measurement CSV for help texts.
const MeasurementFormat = `One row per benchmark run on one GPU; '#' lines are comments; header
names are case-insensitive; columns in any order; no other columns:
  node          Kubernetes node name, or the simulator's node index when
                every row's node is an integer (then GPU_ID = node x
                GPUs per node + gpu_index, as --cluster numbers GPUs)
  gpu_index     the GPU's device index on its node (0, 1, ...)
  gpu_uuid      the GPU's UUID (GPU-...), or empty; one position, one UUID
  model         the benchmarked application; its class comes from the
                model table (--models) or pal classify's output (--classes)
  iter_time_s   seconds per iteration (> 0; larger = slower)
  sm_clock_mhz  optional: SM clock during the run (empty = not measured)
  power_w       optional: board power during the run
  temp_c        optional: GPU temperature during the run
Repetitions (several rows for one GPU and model) are expected.`

// Measurement is one benchmark run on one GPU.
type Measurement struct {
	Node     string
	GPUIndex int
	UUID     string
	Model    string
	IterTime float64
	// SMClock, Power and Temp are NaN when the file has no such column
	// or leaves the field empty.
	SMClock, Power, Temp float64
	// Line is the row's line in the file, for errors found later.
	Line int
}

// Measurements is a measurement file.
type Measurements struct {
	Name string
	Rows []Measurement
}

// ReadMeasurements reads a measurement CSV (MeasurementFormat).
func ReadMeasurements(name string, r io.Reader) (*Measurements, error) {
	t, err := openCSV(name, r, MeasurementColumns)
	if err != nil {
		return nil, err
	}
	cols, err := t.Cols(MeasurementColumns[:measureRequired]...)
	if err != nil {
		return nil, err
	}
	nodeCol, idxCol, uuidCol, modelCol, timeCol := cols[0], cols[1], cols[2], cols[3], cols[4]
	opt := [3]int{t.OptCol("sm_clock_mhz"), t.OptCol("power_w"), t.OptCol("temp_c")}
	m := &Measurements{Name: name}
	for t.Next() {
		row := Measurement{Line: t.Line(), SMClock: math.NaN(), Power: math.NaN(), Temp: math.NaN()}
		if row.Node = t.Text(nodeCol); row.Node == "" {
			return nil, t.Errorf(nodeCol, "empty (want a node name or index)")
		}
		if row.GPUIndex, err = t.Int(idxCol); err != nil {
			return nil, err
		}
		if row.GPUIndex > maxGPUIndex {
			return nil, t.Errorf(idxCol, "%d is more GPUs than a node has (at most %d)", row.GPUIndex, maxGPUIndex)
		}
		row.UUID = t.Text(uuidCol)
		if row.Model = t.Text(modelCol); row.Model == "" {
			return nil, t.Errorf(modelCol, "empty (want the benchmarked model)")
		}
		if row.IterTime, err = t.Positive(timeCol); err != nil {
			return nil, err
		}
		for k, dst := range []*float64{&row.SMClock, &row.Power, &row.Temp} {
			c := opt[k]
			if c < 0 || t.Text(c) == "" {
				continue
			}
			v, err := t.Float(c)
			if err != nil {
				return nil, err
			}
			if k < 2 && v < 0 {
				return nil, t.Errorf(c, "%s must not be negative", quote.Value(t.Text(c)))
			}
			*dst = v
		}
		m.Rows = append(m.Rows, row)
	}
	if err := t.Err(); err != nil {
		return nil, err
	}
	if len(m.Rows) == 0 {
		return nil, &InputError{File: name, Msg: "no data rows"}
	}
	return m, nil
}

// maxGPUIndex bounds gpu_index so that node x GPUs-per-node + index
// cannot overflow or size a huge table from one stray value.
const maxGPUIndex = 1023

// maxNodeIndex bounds an integer node for the same reason.
const maxNodeIndex = 1 << 20

// intNode parses a node that is a simulator node index.
func intNode(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 0 && n <= maxNodeIndex
}
