package experiment

import (
	"strings"
	"testing"

	"github.com/palsched/pal/cluster"
)

// Node events read in time order, by node name; anything else is an
// error naming the file, a short one whatever the input.
func FuzzReadNodeEvents(f *testing.F) {
	f.Add("time_s,node,event\n0,node-0,down\n60,node-0,up\n")
	f.Add("event,node,time_s\nup,node-3,1e3\ndown,node-1,1e3\n")
	f.Add("time_s,node,event\n5,node-9,down\n")
	f.Add("time_s,node,event\n5,node-1,sideways\n3,node-1,up\n")
	f.Add("time_s,node,event\nNaN,node-1,down\n")
	c, err := cluster.New(4, 2)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in string) {
		evs, err := parseNodeEvents("f.csv", strings.NewReader(in), c)
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "f.csv") || len(msg) > 1024 {
				t.Fatalf("error of %d bytes, or not naming the file: %.300s", len(msg), msg)
			}
			return
		}
		for i, e := range evs {
			if !(e.T >= 0) || e.T > 1e308 || e.Node < 0 || e.Node >= c.NumNodes() || (i > 0 && e.T < evs[i-1].T) {
				t.Fatalf("event %d accepted: %+v", i, e)
			}
		}
	})
}
