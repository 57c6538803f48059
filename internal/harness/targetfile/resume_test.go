package targetfile

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/harness/target"
)

// TestResumeField reads a client's resume as its command is read (its
// templates checked, its secret-named env values masked) and refuses a
// resume without a command, a template a command may not use, and a
// proxy's resume without start.
func TestResumeField(t *testing.T) {
	spec, err := parseTargetEnv(t, `kind: client
command: [agent, "{{prompt}}"]
resume: {command: [agent, --continue, "{{run_dir}}"], env: {API_TOKEN: "${TOKEN}"}}
`, map[string]string{"TOKEN": "resume-secret-99"})
	if err != nil {
		t.Fatal(err)
	}
	c := spec.(target.ClientSpec)
	want := &target.Resume{Command: []string{"agent", "--continue", "{{run_dir}}"}, Env: map[string]string{"API_TOKEN": "resume-secret-99"}}
	if diff := cmp.Diff(want, c.Resume); diff != "" {
		t.Errorf("resume (-want +got):\n%s", diff)
	}
	if !target.NewClient(c).Traits().Resumes {
		t.Error("a client with resume does not resume")
	}
	if !strings.Contains(strings.Join(c.Secrets, " "), "resume-secret-99") {
		t.Errorf("the resume's secret-named env value is not among the secrets %v", c.Secrets)
	}
	tests := []struct {
		name, src, wantErr string
	}{
		{"no command", "kind: client\ncommand: [agent]\nresume: {env: {A: b}}\n", "resume"},
		{"unknown template", "kind: client\ncommand: [agent]\nresume: {command: [agent, \"{{port}}\"]}\n", "port"},
		{"proxy without start", "kind: proxy\nurl: http://127.0.0.1:4000\nfakes: {upstream_addr: 127.0.0.1:1, mcp_addr: 127.0.0.1:2}\nresume: {command: [litellm]}\n", "resume needs start"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseTargetEnv(t, tt.src, nil)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v; want one containing %q", err, tt.wantErr)
			}
		})
	}
}
