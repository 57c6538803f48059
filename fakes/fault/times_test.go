package fault

import (
	"encoding/json"
	"testing"

	"github.com/goccy/go-yaml"
)

func TestTimesFires(t *testing.T) {
	tests := []struct {
		name  string
		times Times
		want  []bool // occurrences 1..5
	}{
		{"always", Always, []bool{true, true, true, true, true}},
		{"once", Once, []bool{true, false, false, false, false}},
		{"count 2", Times{Count: 2}, []bool{true, true, false, false, false}},
		{"nth 3", Times{Nth: 3}, []bool{false, false, true, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, w := range tt.want {
				if got := tt.times.Fires(i + 1); got != w {
					t.Errorf("Fires(%d) = %v, want %v", i+1, got, w)
				}
			}
		})
	}
}

func TestTimesDecode(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		want    Times
		wantErr bool
	}{
		{"always", "times: always", Always, false},
		{"once", "times: once", Once, false},
		{"count", "times: 3", Times{Count: 3}, false},
		{"nth", "times: {nth: 2}", Times{Nth: 2}, false},
		{"zero", "times: 0", Times{}, true},
		{"fraction", "times: 1.5", Times{}, true},
		{"word", "times: twice", Times{}, true},
		{"nth string", "times: nth:2", Times{}, true},
		{"bad key", "times: {every: 2}", Times{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v struct {
				Times Times `yaml:"times" json:"times"`
			}
			err := yaml.Unmarshal([]byte(tt.yaml), &v)
			if (err != nil) != tt.wantErr {
				t.Fatalf("yaml err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && v.Times != tt.want {
				t.Errorf("got %+v, want %+v", v.Times, tt.want)
			}
			if err != nil {
				return
			}
			b, err := json.Marshal(v.Times)
			if err != nil {
				t.Fatal(err)
			}
			var back Times
			if err := json.Unmarshal(b, &back); err != nil || back != tt.want {
				t.Errorf("JSON round trip of %s gave %+v, %v", b, back, err)
			}
		})
	}
}

func TestParseTimes(t *testing.T) {
	for in, want := range map[string]Times{"always": Always, "once": Once, "4": {Count: 4}, "nth:2": {Nth: 2}} {
		got, err := ParseTimes(in)
		if err != nil || got != want {
			t.Errorf("ParseTimes(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if got.String() != in {
			t.Errorf("String() = %q, want %q", got.String(), in)
		}
	}
	for _, in := range []string{"0", "-1", "nth:0", "nth:x", "often"} {
		if _, err := ParseTimes(in); err == nil {
			t.Errorf("ParseTimes(%q) gave no error", in)
		}
	}
}

func TestDurationDecode(t *testing.T) {
	var v struct {
		D Duration `yaml:"d" json:"d"`
	}
	if err := yaml.Unmarshal([]byte("d: 250ms"), &v); err != nil || v.D.D().Milliseconds() != 250 {
		t.Fatalf("got %v, %v", v.D, err)
	}
	for _, bad := range []string{"d: 5", "d: soon", "d: -1s"} {
		if err := yaml.Unmarshal([]byte(bad), &v); err == nil {
			t.Errorf("%q decoded without error", bad)
		}
	}
	b, _ := json.Marshal(v.D)
	if string(b) != `"250ms"` {
		t.Errorf("JSON = %s", b)
	}
}
