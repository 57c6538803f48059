package process

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestProcessEnv: a target's process gets the allow-listed variables and
// those pass_env names, never the others (credentials among them), with the
// loopback kept off any proxy.
func TestProcessEnv(t *testing.T) {
	parent := []string{
		"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C", "TMPDIR=/tmp/u", "Path=C:\\bin",
		"GITHUB_TOKEN=ghp_secret_value_1", "AWS_SECRET_ACCESS_KEY=aws-secret-value", "GEMINI_API_KEY=short",
		"HTTP_PROXY=http://proxy:3128", "GOPATH=/go", "MY_TOKEN=passed-token-value",
	}
	tests := []struct {
		name string
		pass []string
		want []string
	}{
		{
			name: "the allow-list",
			want: []string{"HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C", "NO_PROXY=127.0.0.1,localhost,::1", "PATH=/usr/bin", "Path=C:\\bin", "TMPDIR=/tmp/u", "no_proxy=127.0.0.1,localhost,::1"},
		},
		{
			name: "with pass_env",
			pass: []string{"GOPATH", "MY_TOKEN", "UNSET_VAR"},
			want: []string{"GOPATH=/go", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C", "MY_TOKEN=passed-token-value", "NO_PROXY=127.0.0.1,localhost,::1", "PATH=/usr/bin", "Path=C:\\bin", "TMPDIR=/tmp/u", "no_proxy=127.0.0.1,localhost,::1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Env(parent, tt.pass)
			slices.Sort(got)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("Env (-want +got):\n%s", d)
			}
		})
	}
}

// TestHome: a client's home and temporary directory are its run's
// directory, so it reads none of the user's credentials and leaves nothing
// in the machine's temporary directory; pass_env keeps the user's.
func TestHome(t *testing.T) {
	parent := []string{"PATH=/usr/bin", "HOME=/home/u", "TMPDIR=/tmp/u"}
	tests := []struct {
		name string
		pass []string
		want []string
	}{
		{
			name: "in the run's directory",
			want: []string{"HOME=/run/d", "PATH=/usr/bin", "TEMP=/run/d", "TMP=/run/d", "TMPDIR=/run/d", "USERPROFILE=/run/d"},
		},
		{
			name: "the user's temporary directory passed",
			pass: []string{"TMPDIR"},
			want: []string{"HOME=/run/d", "PATH=/usr/bin", "TMPDIR=/tmp/u", "USERPROFILE=/run/d"},
		},
		{
			name: "the user's home passed",
			pass: []string{"HOME"},
			want: []string{"HOME=/home/u", "PATH=/usr/bin", "TEMP=/run/d", "TMP=/run/d", "TMPDIR=/run/d"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Home(slices.Clone(parent), tt.pass, "/run/d")
			slices.Sort(got)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("Home (-want +got):\n%s", d)
			}
		})
	}
}
