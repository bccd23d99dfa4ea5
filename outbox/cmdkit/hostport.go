package cmdkit

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// CheckHostPort refuses an address a lazily dialing client would accept
// and then never reach: it wants "host:port" with a port from 1 to 65535,
// and passes a gRPC target with a scheme (dns:///host:port,
// unix:///path) through as it is. The error says what is wrong; the
// caller names the setting.
func CheckHostPort(hostPort string) error {
	if strings.Contains(hostPort, "://") || strings.HasPrefix(hostPort, "unix:") {
		return nil
	}
	host, port, err := net.SplitHostPort(hostPort)
	if err == nil && host == "" {
		err = errors.New("no host")
	}
	if err == nil {
		if n, perr := strconv.Atoi(port); perr != nil || n < 1 || n > 65535 {
			err = fmt.Errorf("port %q is not a number from 1 to 65535", port)
		}
	}
	if err != nil {
		return fmt.Errorf("want host:port: %w", err)
	}
	return nil
}
