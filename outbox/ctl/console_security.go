package ctl

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/outflow/outflow/outbox/hostcheck"
)

// The console's cookies: the session (whose CSRF token every form carries)
// and the login, bound to the session and the token.
const (
	sessionCookie = "outflow_console_session"
	authCookie    = "outflow_console_auth"
)

// consoleCSP lets the page load its own stylesheet and nothing else: no
// script, no frame, no form to another site.
const consoleCSP = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

func randomBytes(n int) ([]byte, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("console: random: %w", err)
	}
	return b, nil
}

// visit is one request as the console's rules see it.
type visit struct {
	session string
	csrf    string
	// authed: the request presented the operator token.
	authed bool
	// identity is who acts: X-Forwarded-User alongside the token, or the
	// server's own actor.
	identity string
}

// actor is what an action records: console/<identity>.
func (v visit) actor() string { return "console/" + v.identity }

func (c *Console) sign(parts ...string) string {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(m.Sum(nil))
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// tokenDigest names the token in the login cookie without holding it.
func (c *Console) tokenDigest() string {
	d := sha256.Sum256([]byte(c.opts.Token))
	return hex.EncodeToString(d[:])
}

// ServeHTTP applies the console's rules, then its routes: the Host must be
// one of the console's names (a DNS-rebinding page names its own); every
// answer forbids framing and anything but the console's own stylesheet;
// only GET and HEAD read, and a POST must come from the console's own
// origin with the session's CSRF token.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", consoleCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	// same-origin, not no-referrer: under no-referrer a browser sends
	// "Origin: null" with the console's own forms, which crossSite refuses.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	if !hostcheck.Allowed(r.Host, c.opts.AllowedHosts) {
		http.Error(w, fmt.Sprintf("forbidden: Host %q is not a name of this console (allowed: %s; outboxctl serve --allowed-hosts)",
			r.Host, strings.Join(c.opts.AllowedHosts, ", ")), http.StatusForbidden)
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodPost:
		if why := crossSite(r); why != "" {
			http.Error(w, "forbidden: "+why+"; the console takes actions only from its own pages", http.StatusForbidden)
			return
		}
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	c.mux.ServeHTTP(w, r)
}

// crossSite says why a POST comes from another site, or "": the browser's
// Sec-Fetch-Site, else its Origin, must be the console's own.
func crossSite(r *http.Request) string {
	switch s := r.Header.Get("Sec-Fetch-Site"); s {
	case "", "same-origin", "none":
	default:
		return "a cross-site request (Sec-Fetch-Site: " + s + ")"
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if o == "null" || err != nil || !strings.EqualFold(u.Host, r.Host) {
			return "a request from the page at " + o
		}
	}
	return ""
}

// visitOf reads the request's session, starting one (a cookie) when it has
// none, and whether it presents the token.
func (c *Console) visitOf(w http.ResponseWriter, r *http.Request) visit {
	var v visit
	if ck, err := r.Cookie(sessionCookie); err == nil && len(ck.Value) == 32 {
		if _, err := hex.DecodeString(ck.Value); err == nil {
			v.session = ck.Value
		}
	}
	if v.session == "" {
		b, err := randomBytes(16)
		if err == nil {
			v.session = hex.EncodeToString(b)
			http.SetCookie(w, c.cookie(r, sessionCookie, v.session))
		}
	}
	v.csrf = c.sign("csrf", v.session)
	if c.opts.Token != "" {
		if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && equal(strings.TrimSpace(bearer), c.opts.Token) {
			v.authed = true
		}
		if ck, err := r.Cookie(authCookie); err == nil && v.session != "" && equal(ck.Value, c.sign("auth", v.session, c.tokenDigest())) {
			v.authed = true
		}
	}
	v.identity = c.env.Actor
	if u := strings.TrimSpace(r.Header.Get("X-Forwarded-User")); v.authed && u != "" {
		// Trusted only with the token: the reverse proxy that injects it
		// asserts the user.
		v.identity = u
	}
	if v.identity == "" {
		v.identity = "unknown"
	}
	return v
}

func (c *Console) cookie(r *http.Request, name, value string) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}
}

// checkForm is the rule of every POST: the form's CSRF token is the
// session's. It answers 403 and returns false otherwise.
func (c *Console) checkForm(w http.ResponseWriter, r *http.Request, v visit) bool {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form: "+err.Error(), http.StatusBadRequest)
		return false
	}
	if _, err := r.Cookie(sessionCookie); err != nil || !equal(r.PostForm.Get("csrf"), v.csrf) {
		http.Error(w, "forbidden: the form's CSRF token is missing or not this session's; reload the page and try again", http.StatusForbidden)
		return false
	}
	return true
}

// checkAction is the rule of every action: a valid form from a token
// holder. Without the token the console is read-only: 401.
func (c *Console) checkAction(w http.ResponseWriter, r *http.Request, v visit) bool {
	if !c.checkForm(w, r, v) {
		return false
	}
	if !v.authed {
		w.Header().Set("WWW-Authenticate", `Bearer realm="outflow console"`)
		msg := "unauthorized: the console is read-only without the operator token; sign in at /login or send Authorization: Bearer <" + ConsoleTokenVar + ">"
		if c.opts.Token == "" {
			msg = "unauthorized: the console is read-only: " + ConsoleTokenVar + " is not set where it runs"
		}
		http.Error(w, msg, http.StatusUnauthorized)
		return false
	}
	return true
}

// login checks the token the form carries and sets the login cookie.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	v := c.visitOf(w, r)
	if !c.checkForm(w, r, v) {
		return
	}
	if c.opts.Token == "" || !equal(r.PostForm.Get("token"), c.opts.Token) {
		c.render(w, r, v, http.StatusUnauthorized, "login", page{Title: "Sign in", Error: "That is not the operator token (" + ConsoleTokenVar + ")."})
		return
	}
	http.SetCookie(w, c.cookie(r, authCookie, c.sign("auth", v.session, c.tokenDigest())))
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// logout drops the login cookie.
func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	v := c.visitOf(w, r)
	if !c.checkForm(w, r, v) {
		return
	}
	ck := c.cookie(r, authCookie, "")
	ck.MaxAge = -1
	http.SetCookie(w, ck)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}
