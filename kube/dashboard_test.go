package kube

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

const dashboardFile = "../deploy/grafana/pal-dashboard.json"

// exportedSeries lists the series names /metrics can carry, read from the
// scheduler's own registry (NewMetrics): a histogram's _bucket, _sum and
// _count, a summary's _sum and _count, everything else by its name. A
// vector with no children yet does not show in Gather, so the Metrics
// struct's collectors are also asked for their descriptions.
func exportedSeries(t *testing.T) map[string]string {
	t.Helper()
	m := NewMetrics()
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	kind := map[string]dto.MetricType{}
	for _, f := range fams {
		kind[f.GetName()] = f.GetType()
	}
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	var cs []prometheus.Collector
	v := reflect.ValueOf(m).Elem()
	for i := range v.NumField() {
		if !v.Type().Field(i).IsExported() {
			continue
		}
		if c, ok := v.Field(i).Interface().(prometheus.Collector); ok {
			cs = append(cs, c)
		}
	}
	// What a scheduler with dcgm: configured registers besides.
	cs = append(cs, newDCGMStage(defaultDCGMConfig()).collectors()...)
	for _, c := range cs {
		var typ dto.MetricType
		switch c.(type) {
		case *prometheus.HistogramVec, prometheus.Histogram:
			typ = dto.MetricType_HISTOGRAM
		case *prometheus.SummaryVec, prometheus.Summary:
			typ = dto.MetricType_SUMMARY
		case *prometheus.CounterVec, prometheus.Counter:
			typ = dto.MetricType_COUNTER
		default:
			typ = dto.MetricType_GAUGE
		}
		ch := make(chan *prometheus.Desc, 8)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			if s := fqName.FindStringSubmatch(d.String()); s != nil {
				kind[s[1]] = typ
			}
		}
	}
	series := map[string]string{}
	for name, typ := range kind {
		switch typ {
		case dto.MetricType_HISTOGRAM:
			for _, sfx := range []string{"_bucket", "_sum", "_count"} {
				series[name+sfx] = name
			}
		case dto.MetricType_SUMMARY:
			series[name], series[name+"_sum"], series[name+"_count"] = name, name, name
		default:
			series[name] = name
		}
	}
	return series
}

type dashboard struct {
	Title      string `json:"title"`
	UID        string `json:"uid"`
	Templating struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Definition string          `json:"definition"`
			Query      json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	GridPos struct{ X, Y, W, H int } `json:"gridPos"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

// grafanaVars stands in for Grafana's interval variables, which are not
// PromQL, before an expression is parsed; $job and the like only appear in
// label values (strings), which parse as they are.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

// metricNames parses a PromQL expression and returns the metric names of
// its selectors.
func metricNames(expr string) ([]string, error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(grafanaVars.Replace(expr))
	if err != nil {
		return nil, err
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
		names = append(names, name)
		return nil
	})
	return names, nil
}

// labelValuesMetric is the metric of a Grafana label_values(metric, label)
// variable query.
var labelValuesMetric = regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,`)

// Every query of the Grafana dashboard parses as PromQL and names only
// series the scheduler exports; every pal_* metric it exports is on some
// panel.
func TestDashboardQueriesNameExportedMetrics(t *testing.T) {
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	series := exportedSeries(t)
	for _, want := range []string{"pal_leader", "pal_round_duration_seconds_bucket", "process_cpu_seconds_total"} {
		if series[want] == "" { // the registry read must see something
			t.Fatalf("the registry exports no %s: %v", want, series)
		}
	}
	shown := map[string]bool{}
	check := func(where, expr string) {
		names, err := metricNames(expr)
		if err != nil {
			t.Errorf("%s: %q does not parse: %v", where, expr, err)
			return
		}
		if len(names) == 0 {
			t.Errorf("%s: %q names no metric", where, expr)
		}
		for _, n := range names {
			if series[n] == "" {
				t.Errorf("%s: %q names %s, which the scheduler does not export", where, expr, n)
			}
			shown[series[n]] = true
		}
	}

	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValuesMetric.FindStringSubmatch(v.Definition)
		if m == nil {
			t.Errorf("variable %s: definition %q is not label_values(metric, label)", v.Name, v.Definition)
			continue
		}
		if series[m[1]] == "" {
			t.Errorf("variable %s: %s is not exported", v.Name, m[1])
		}
	}

	ids := map[int]string{}
	var walk func([]panel)
	queries := 0
	walk = func(ps []panel) {
		for _, p := range ps {
			where := fmt.Sprintf("%s panel %d %q", dashboardFile, p.ID, p.Title)
			if prev, dup := ids[p.ID]; dup {
				t.Errorf("%s: id also used by %q", where, prev)
			}
			ids[p.ID] = p.Title
			if p.GridPos.X < 0 || p.GridPos.W <= 0 || p.GridPos.X+p.GridPos.W > 24 || p.GridPos.H <= 0 {
				t.Errorf("%s: gridPos %+v outside Grafana's 24 columns", where, p.GridPos)
			}
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
				t.Errorf("%s: datasource %+v, want the ${datasource} variable", where, p.Datasource)
			}
			if len(p.Targets) == 0 {
				t.Errorf("%s: no queries", where)
			}
			refs := map[string]bool{}
			for _, tg := range p.Targets {
				if refs[tg.RefID] || tg.RefID == "" {
					t.Errorf("%s: refId %q empty or repeated", where, tg.RefID)
				}
				refs[tg.RefID] = true
				check(where, tg.Expr)
				queries++
			}
		}
	}
	walk(d.Panels)

	var missing []string
	for _, name := range series {
		if strings.HasPrefix(name, "pal_") && !shown[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	missing = slices.Compact(missing)
	if len(missing) > 0 {
		t.Errorf("%s shows no panel for %q", dashboardFile, missing)
	}
	t.Logf("%d panels, %d queries, %d exported series", len(ids), queries, len(series))
}

// metricNames finds names however a selector writes them, and rejects
// what is not PromQL.
func TestMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`sum(rate(pal_bound_pods_total{job=~"$job"}[$__rate_interval]))`:                      {"pal_bound_pods_total"},
		`{__name__="pal_leader", pod="a"} == 1`:                                               {"pal_leader"},
		`max(pal_bound_pods and on (pod) (pal_leader == 1))`:                                  {"pal_bound_pods", "pal_leader"},
		`histogram_quantile(0.99, sum by (le) (rate(pal_round_duration_seconds_bucket[5m])))`: {"pal_round_duration_seconds_bucket"},
	} {
		got, err := metricNames(expr)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("metricNames(%q) = %q, %v; want %q", expr, got, err, want)
		}
	}
	for _, bad := range []string{`sum(rate(pal_bound_pods_total[5m])`, `pal_leader{`, `rate(pal_x[$job])`} {
		if _, err := metricNames(bad); err == nil {
			t.Errorf("metricNames(%q) parsed", bad)
		}
	}
}
