package cmdkit

import (
	"net/url"
	"regexp"
	"strings"
)

// passwordKV finds the password of a keyword/value connection string
// ("host=... password=secret"), quoted or not.
var passwordKV = regexp.MustCompile(`(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// Redact returns the connection string with its password, if any, replaced
// by xxxxx: in the user information or the password parameter of a URL, or
// the password keyword of the keyword/value form. It is what messages,
// logs and help show of a DATABASE_URL.
func Redact(connString string) string {
	if !strings.HasPrefix(connString, "postgres://") && !strings.HasPrefix(connString, "postgresql://") {
		return passwordKV.ReplaceAllString(connString, "${1}xxxxx")
	}
	u, err := url.Parse(connString)
	if err != nil {
		// Unparseable: show the scheme only rather than guess where a
		// password ends.
		return connString[:strings.Index(connString, "://")+3] + "(malformed URL, not shown)"
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}
