package variability

import (
	"math"
	"strings"
	"testing"
)

func TestExampleAppsReproduceTableII(t *testing.T) {
	apps, err := ExampleApps()
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewClassifier(apps, ClassifierOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.K != 3 {
		t.Fatalf("silhouette chose K=%d, want 3", c.K)
	}
	want := map[string]Class{
		"ResNet-50": ClassA, "VGG-19": ClassA, "DCGAN": ClassA, "SGEMM": ClassA,
		"BERT": ClassB, "GPT2": ClassB,
		"PointNet": ClassC, "PageRank": ClassC,
	}
	if len(c.Apps) != len(want) {
		t.Fatalf("%d apps, want %d", len(c.Apps), len(want))
	}
	for i, a := range c.Apps {
		if c.Class[i] != want[a.Name] {
			t.Errorf("%s: class %s, want %s", a.Name, c.Class[i], want[a.Name])
		}
	}
	tests := []struct {
		name     string
		dram, fu float64
		want     Class
	}{
		{"compute-heavy", 1.0, 9.5, ClassA},
		{"balanced", 5.0, 5.0, ClassB},
		{"memory-heavy", 9.0, 0.5, ClassC},
		{"idle", 0, 0, ClassB}, // nearest to the middle centroid
	}
	for _, tc := range tests {
		if got := c.Classify(tc.dram, tc.fu); got != tc.want {
			t.Errorf("%s point (%v,%v): class %s, want %s", tc.name, tc.dram, tc.fu, got, tc.want)
		}
	}
	for i := 1; i < len(c.Centroids); i++ {
		a, b := c.Centroids[i-1], c.Centroids[i]
		if math.Atan2(a[1], a[0]) < math.Atan2(b[1], b[0]) {
			t.Errorf("class %s is more compute-bound than class %s", Class(i), Class(i-1))
		}
	}
}

func TestClassifierFixedKAndEdgeCases(t *testing.T) {
	apps, err := ExampleApps()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		apps    []App
		k       int
		wantK   int
		wantErr string
	}{
		{"k=2", apps, 2, 2, ""},
		{"k=4", apps, 4, 4, ""},
		{"k=1", apps, 1, 1, ""},
		{"one app", apps[:1], 0, 1, ""},
		{"two apps", apps[:2], 0, 2, ""},
		{"duplicates", []App{{"a", 1, 1}, {"b", 1, 1}, {"c", 1, 1}}, 3, 1, ""},
		{"k too big", apps, 5, 0, "between 1 and 4"},
		{"no apps", nil, 0, 0, "no applications"},
		{"nan", []App{{"a", math.NaN(), 1}}, 0, 0, "NaN"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewClassifier(tc.apps, ClassifierOptions{K: tc.k})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.K != tc.wantK || len(c.Centroids) != tc.wantK {
				t.Fatalf("K=%d (%d centroids), want %d", c.K, len(c.Centroids), tc.wantK)
			}
			for i, cl := range c.Class {
				if int(cl) >= c.K {
					t.Errorf("app %d class %s beyond K", i, cl)
				}
			}
		})
	}
}

func TestReadAppsErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "a.csv: empty file"},
		{"no rows", "# c\napp,dram_util,fu_util\n", "a.csv: no data rows"},
		{"missing column", "app,dram_util\nx,1\n", `a.csv:1: field "fu_util": missing column`},
		{"not a number", "app,dram_util,fu_util\nx,1,2\ny,lots,2\n", `a.csv:3: field "dram_util": "lots" is not a number`},
		{"out of scale", "app,dram_util,fu_util\nx,1,85\n", `a.csv:2: field "fu_util": 85 is outside`},
		{"negative", "app,dram_util,fu_util\nx,-1,5\n", `a.csv:2: field "dram_util": -1 is outside`},
		{"empty name", "app,dram_util,fu_util\n,1,5\n", `a.csv:2: field "app": empty`},
		{"duplicate", "app,dram_util,fu_util\nx,1,5\nx,2,5\n", `a.csv:3: field "app": "x" repeats line 2`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadApps("a.csv", strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func FuzzReadApps(f *testing.F) {
	f.Add("app,dram_util,fu_util\nx,1,2\ny,5,5\nz,9,1\n", 0)
	f.Add("# c\napp,fu_util,dram_util\nx,10,0\n", 2)
	f.Add("app,dram_util,fu_util\nx,NaN,1\n", 1)
	f.Fuzz(func(t *testing.T, in string, k int) {
		apps, err := ReadApps("a.csv", strings.NewReader(in))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "a.csv") || len(err.Error()) > 1024 {
				t.Fatalf("error does not name the file, or is over 1 KiB: %.300v", err)
			}
			return
		}
		for _, a := range apps {
			if a.Name == "" || !(a.DRAM >= 0 && a.DRAM <= 10) || !(a.FU >= 0 && a.FU <= 10) {
				t.Fatalf("bad app %+v", a)
			}
		}
		k = ((k % 5) + 5) % 5
		c, err := NewClassifier(apps, ClassifierOptions{K: k, NInit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Class) != len(apps) || c.K != len(c.Centroids) || c.K < 1 || c.K > NumClasses {
			t.Fatalf("inconsistent classifier %+v", c)
		}
		for _, cl := range c.Class {
			if int(cl) >= c.K {
				t.Fatalf("class %s beyond K=%d", cl, c.K)
			}
		}
		_ = c.Classify(5, 5)
	})
}
