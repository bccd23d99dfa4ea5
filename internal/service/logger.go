package service

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/outflow/outflow/internal/telemetry"
)

// ErrorKey is the log attribute every outflow binary puts an error under,
// so one query finds the errors of all of them.
const ErrorKey = "error"

// Logging settings and their defaults.
const (
	// LogLevelEnv selects the level: debug, info, warn or error.
	LogLevelEnv = "OUTFLOW_LOG_LEVEL"
	// LogFormatEnv selects the format: text (logfmt-like) or json.
	LogFormatEnv = "OUTFLOW_LOG_FORMAT"
	// LogLevelDefault is the level when LogLevelEnv is unset.
	LogLevelDefault = "info"
	// LogFormatDefault is the format when LogFormatEnv is unset.
	LogFormatDefault = "text"
)

// NewLogger returns the binary's logger, writing to w at the level and in
// the format the environment selects; a record logged with a span in its
// context carries trace_id and span_id (telemetry.LogHandler). A malformed setting is recorded in env
// (and the default used), so the binary can refuse to start on it.
func NewLogger(w io.Writer, env *Env) *slog.Logger {
	var level slog.Level
	lv := env.String(LogLevelEnv, LogLevelDefault)
	if err := level.UnmarshalText([]byte(strings.ToUpper(lv))); err != nil {
		env.Fail(fmt.Errorf("%s=%q: want debug, info, warn or error", LogLevelEnv, lv))
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	switch format := env.String(LogFormatEnv, LogFormatDefault); format {
	case "json":
		return slog.New(telemetry.LogHandler(slog.NewJSONHandler(w, opts)))
	case "text":
	default:
		env.Fail(fmt.Errorf("%s=%q: want text or json", LogFormatEnv, format))
	}
	return slog.New(telemetry.LogHandler(slog.NewTextHandler(w, opts)))
}
