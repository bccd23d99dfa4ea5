package providersim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"
)

// email is one email the simulator accepted.
type email struct {
	id             string
	from           string
	to             []string
	subject        string
	tags           map[string]string
	idempotencyKey string
	created        time.Time
}

// sendEmailRequest is Resend's POST /emails body, the fields the simulator
// reads. Others (cc, bcc, reply_to, headers, attachments, scheduled_at) are
// accepted and ignored, as they change nothing a test can observe here.
type sendEmailRequest struct {
	From    string          `json:"from"`
	To      json.RawMessage `json:"to"` // a string or an array of strings
	Subject string          `json:"subject"`
	HTML    string          `json:"html"`
	Text    string          `json:"text"`
	Tags    []emailTag      `json:"tags"`
}

// emailTag is a Resend tag; outflow tags every email with order_id and kind.
type emailTag struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// tagPattern is Resend's rule for tag names and values.
var tagPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`)

// maxRecipients is Resend's limit on "to".
const maxRecipients = 50

// parseSendEmail validates a body the way Resend does, with its 422
// validation errors. It returns the recipients as a list.
func parseSendEmail(body []byte) (sendEmailRequest, []string, *response) {
	fail := func(name, format string, args ...any) (sendEmailRequest, []string, *response) {
		resp := resendError(http.StatusUnprocessableEntity, name, fmt.Sprintf(format, args...))
		return sendEmailRequest{}, nil, &resp
	}
	var req sendEmailRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return fail("validation_error", "Invalid JSON body: %v.", err)
	}
	var to []string
	if len(req.To) > 0 && !bytes.Equal(req.To, []byte("null")) {
		var one string
		if err := json.Unmarshal(req.To, &one); err == nil {
			to = []string{one}
		} else if err := json.Unmarshal(req.To, &to); err != nil {
			return fail("validation_error", "The `to` field must be a string or an array of strings.")
		}
	}
	switch {
	case req.From == "":
		return fail("missing_required_field", "Missing `from` field.")
	case len(to) == 0:
		return fail("missing_required_field", "Missing `to` field.")
	case len(to) > maxRecipients:
		return fail("validation_error", "The `to` field can have at most %d recipients.", maxRecipients)
	case req.Subject == "":
		return fail("missing_required_field", "Missing `subject` field.")
	case req.HTML == "" && req.Text == "":
		return fail("missing_required_field", "Missing `html` or `text` field.")
	}
	for _, addr := range to {
		if !strings.Contains(addr, "@") {
			return fail("validation_error", "Invalid `to` field. The email address needs to follow the `email@example.com` or `Name <email@example.com>` format.")
		}
	}
	for _, t := range req.Tags {
		if !tagPattern.MatchString(t.Name) || !tagPattern.MatchString(t.Value) {
			return fail("validation_error", "Tags should only contain ASCII letters, numbers, underscores, or dashes (tag %q=%q).", t.Name, t.Value)
		}
	}
	return req, to, nil
}

// sendEmail is POST /emails.
func (s *Simulator) sendEmail(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		writeResponse(w, resendError(http.StatusUnprocessableEntity, "validation_error", "Cannot read the body: "+err.Error()))
		return
	}
	key := r.Header.Get("Idempotency-Key")
	if len(key) > 256 {
		writeResponse(w, resendError(http.StatusBadRequest, "invalid_idempotency_key", "Idempotency key must be between 1-256 characters."))
		return
	}
	req, to, bad := parseSendEmail(body)
	if bad != nil {
		writeResponse(w, *bad)
		return
	}
	s.serveCall(w, r, call{
		operation:   OperationEmailsSend,
		proto:       resendProtocol{},
		scope:       idemScope{api: "resend", apiKey: apiKeyFrom(r), key: key},
		endpoint:    "POST /emails",
		fingerprint: jsonFingerprint(body),
		execute: func(st *store, now time.Time, _ fault) response {
			e := &email{
				id:             newUUID(),
				from:           req.From,
				to:             to,
				subject:        req.Subject,
				tags:           map[string]string{},
				idempotencyKey: key,
				created:        now,
			}
			for _, t := range req.Tags {
				e.tags[t.Name] = t.Value
			}
			st.emails = append(st.emails, e)
			s.log.Info("providersim: email sent", "id", e.id, "to", strings.Join(e.to, ","), "subject", e.subject, "idempotency_key", key)
			b, _ := json.Marshal(map[string]string{"id": e.id})
			return response{status: http.StatusOK, body: b}
		},
	})
}

// jsonFingerprint canonicalizes a JSON body (object keys sorted, spacing
// dropped), so that re-encoding the same payload is not a different request.
func jsonFingerprint(body []byte) string {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return string(body)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
