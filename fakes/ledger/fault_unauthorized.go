package ledger

// Unauthorized refuses a tools/call with 401 Unauthorized and a
// WWW-Authenticate challenge, as a server does whose client's access token
// expired mid-session; the tool does not run. A client may re-authenticate
// and send the call again.
type Unauthorized struct{}

// unauthorizedChallenge is the WWW-Authenticate header of an unauthorized
// answer (RFC 6750 section 3).
const unauthorizedChallenge = `Bearer error="invalid_token", error_description="The access token expired"`

func (u *Unauthorized) apply(p *plan) {
	if p.unauthorized == nil {
		p.unauthorized = u
	}
}
