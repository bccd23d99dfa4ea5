// Package cli is the command line every outflow binary shares: -h/--help
// that lists the environment variables the binary reads (each with its
// default and one line of meaning) and its flags, --version from the build
// information, and exit statuses by Go's convention: 0 success (and after
// -h or --version), 1 the work failed, 2 a usage or configuration error.
//
// -h and --version answer before anything else runs, so they never touch a
// database or the network, whatever the environment says. A configuration
// error ([Config]) prints as plain lines on stderr, one per problem, not as
// a log record: it is addressed to whoever starts the process.
package cli
