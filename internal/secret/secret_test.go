package secret

import "testing"

func TestName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"GITHUB_TOKEN", true},
		{"AWS_SECRET_ACCESS_KEY", true},
		{"ANTHROPIC_AUTH_TOKEN", true},
		{"GEMINI_API_KEY", true},
		{"db_password", true},
		{"sig", true},
		{"PATH", false},
		{"HOME", false},
		{"api-version", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Name(tt.name); got != tt.want {
				t.Errorf("Name(%q) = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}

func TestScrub(t *testing.T) {
	secrets := []string{"hunter", "hunter2-secret", "zz"}
	tests := []struct {
		name, in, want string
	}{
		{"a secret", "x hunter y", "x *** y"},
		{"the longer secret first", "hunter2-secret", "***"},
		{"short values stay", "zz", "zz"},
		{"openai key", "key sk-proj-Ab12Cd34Ef56", "key ***"},
		{"masked key", "sk-proj-****wxyz.", "***."},
		{"a word is no key", "sk-learn-compatible", "sk-learn-compatible"},
		{"gemini key", "AIzaSyA1234567890abcdefghijklmnopqrstu", "***"},
		{"github token", "ghp_0123456789abcdefghijABCDEFGHIJ012345", "***"},
		{"github fine-grained token", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "***"},
		{"aws key id", "id=AKIAIOSFODNN7EXAMPLE;", "id=***;"},
		{"no key in words", "an AKIA word", "an AKIA word"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Scrub(tt.in, secrets, "***"); got != tt.want {
				t.Errorf("Scrub(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestBearer(t *testing.T) {
	tests := []struct {
		header string
		want   string
		ok     bool
	}{
		{"Bearer k3y", "k3y", true},
		{"bearer k3y", "k3y", true},
		{"BEARER   k3y ", "k3y", true},
		{"Basic a2V5", "", false},
		{"Bearerk3y", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		if got, ok := Bearer(tt.header); got != tt.want || ok != tt.ok {
			t.Errorf("Bearer(%q) = %q, %v; want %q, %v", tt.header, got, ok, tt.want, tt.ok)
		}
	}
}
