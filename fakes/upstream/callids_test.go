package upstream

import "testing"

// checkCallIDs checks that the fake recorded, for token's tool loop, the id
// of the call its answer made (what the SDK read) and the same id as the
// result its follow-up carried.
func checkCallIDs(t *testing.T, s *Server, token, callID string) {
	t.Helper()
	reqs := s.Requests(token)
	if len(reqs) != 2 {
		t.Fatalf("recorded %d requests, want 2", len(reqs))
	}
	diff(t, "answer's call ids", []string{callID}, callIDs(reqs[0]))
	diff(t, "initial's result ids", []string(nil), reqs[0].ResultIDs)
	diff(t, "follow-up's result ids", []string{callID}, reqs[1].ResultIDs)
	diff(t, "follow-up's call ids", []string(nil), callIDs(reqs[1]))
}
