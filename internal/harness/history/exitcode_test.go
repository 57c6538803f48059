package history

import (
	"encoding/json"
	"testing"

	"github.com/goccy/go-yaml"
)

func TestExitCode(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		want    ExitCode
		json    string
		wantErr bool
	}{
		{name: "zero", yaml: "zero", want: ExitCode{}, json: `"zero"`},
		{name: "nonzero", yaml: "nonzero", want: ExitCode{Nonzero: true}, json: `"nonzero"`},
		{name: "number", yaml: "3", want: ExitCode{Code: 3}, json: `3`},
		{name: "0 is zero", yaml: "0", want: ExitCode{}, json: `"zero"`},
		{name: "negative", yaml: "-1", wantErr: true},
		{name: "too big", yaml: "256", wantErr: true},
		{name: "word", yaml: "failure", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got ExitCode
			err := yaml.Unmarshal([]byte(tt.yaml), &got)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v, wantErr %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			b, err := json.Marshal(got)
			if err != nil || string(b) != tt.json {
				t.Errorf("JSON %s (%v), want %s", b, err, tt.json)
			}
			var back ExitCode
			if err := json.Unmarshal(b, &back); err != nil || back != got {
				t.Errorf("JSON round trip: %+v, %v", back, err)
			}
		})
	}
	if !(ExitCode{Nonzero: true}).Match(2) || (ExitCode{Nonzero: true}).Match(0) || !(ExitCode{Code: 3}).Match(3) {
		t.Error("Match")
	}
}
