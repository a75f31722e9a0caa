package trace

import (
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Exporter names of OTEL_TRACES_EXPORTER and OTEL_METRICS_EXPORTER.
const (
	exporterOTLP    = "otlp"
	exporterConsole = "console"
	exporterNone    = "none"
)

// defaultEndpoint is the OTLP/HTTP base URL when an otlp exporter is asked for by name
// and no endpoint variable is set, as the specification says.
const defaultEndpoint = "http://localhost:4318"

// ConfigFromEnv returns the part of a Config that the standard OpenTelemetry variables
// ask for. lookup is os.LookupEnv or a test's stand-in; console is where a console
// exporter writes (stderr: stdout belongs to the event stream).
//
//   - OTEL_SDK_DISABLED=true: nothing is exported (an explicit --trace-file still is).
//   - OTEL_TRACES_EXPORTER, OTEL_METRICS_EXPORTER: comma-separated otlp, console, none.
//     Unset, otlp is used when an endpoint variable is set, and nothing otherwise: stoke
//     does not send telemetry to localhost:4318 unasked.
//   - OTEL_EXPORTER_OTLP_ENDPOINT (a base URL: /v1/traces, /v1/metrics are appended),
//     OTEL_EXPORTER_OTLP_{TRACES,METRICS}_ENDPOINT (used as is).
//   - OTEL_EXPORTER_OTLP_[{TRACES,METRICS}_]HEADERS: key=value pairs, percent-decoded.
//   - OTEL_EXPORTER_OTLP_[{TRACES,METRICS}_]TIMEOUT: milliseconds per export.
//   - OTEL_EXPORTER_OTLP_[{TRACES,METRICS}_]PROTOCOL: http/protobuf (default) or
//     http/json; grpc is refused with an error naming those two.
//   - OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true: prompts and completions
//     are recorded on the chat spans.
//
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES are read by Setup. A malformed value is
// an error that names the variable.
func ConfigFromEnv(lookup func(string) (string, bool), console io.Writer) (Config, error) {
	get := func(name string) string {
		v, _ := lookup(name)
		return strings.TrimSpace(v)
	}
	var cfg Config
	capture, err := envBool(get, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
	if err != nil {
		return Config{}, err
	}
	cfg.CaptureContent = capture
	off, err := envBool(get, "OTEL_SDK_DISABLED")
	if err != nil || off {
		return cfg, err
	}
	for _, sig := range []struct {
		name, path string // TRACES, /v1/traces
		dst        *Exporter
	}{
		{"TRACES", "/v1/traces", &cfg.Traces},
		{"METRICS", "/v1/metrics", &cfg.Metrics},
	} {
		exp, err := exporterFromEnv(get, sig.name, sig.path, console)
		if err != nil {
			return Config{}, err
		}
		*sig.dst = exp
	}
	return cfg, nil
}

// exporterFromEnv reads the variables of one signal (TRACES or METRICS).
func exporterFromEnv(get func(string) string, signal, path string, console io.Writer) (Exporter, error) {
	var exp Exporter
	endpointVar := "OTEL_EXPORTER_OTLP_" + signal + "_ENDPOINT" // where endpoint came from
	endpoint := get(endpointVar)
	if endpoint == "" {
		if base := get("OTEL_EXPORTER_OTLP_ENDPOINT"); base != "" {
			endpointVar, endpoint = "OTEL_EXPORTER_OTLP_ENDPOINT", strings.TrimRight(base, "/")+path
		}
	}
	listVar := "OTEL_" + signal + "_EXPORTER"
	names := get(listVar)
	if names == "" && endpoint != "" {
		names = exporterOTLP
	}
	for name := range strings.SplitSeq(names, ",") {
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "":
		case exporterNone:
			return Exporter{}, nil
		case exporterConsole:
			exp.Console = console
		case exporterOTLP:
			if endpoint == "" {
				endpoint = defaultEndpoint + path
			}
			exp.Endpoint = endpoint
		default:
			return Exporter{}, fmt.Errorf("%s=%q: want otlp, console or none", listVar, name)
		}
	}
	if exp.Endpoint == "" {
		return exp, nil
	}
	if u, err := url.Parse(exp.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Exporter{}, fmt.Errorf("%s=%q: want an http:// or https:// URL", endpointVar, get(endpointVar))
	}
	exp.Headers = headersFromEnv(get, signal)
	name, v := signalVar(get, signal, "TIMEOUT")
	if v != "" {
		ms, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return Exporter{}, fmt.Errorf("%s=%q: want a whole number of milliseconds", name, v)
		}
		exp.Timeout = time.Duration(ms) * time.Millisecond
	}
	name, v = signalVar(get, signal, "PROTOCOL")
	switch v {
	case "", ProtocolHTTPProtobuf:
		exp.Protocol = ProtocolHTTPProtobuf
	case ProtocolHTTPJSON:
		exp.Protocol = ProtocolHTTPJSON
	default:
		return Exporter{}, fmt.Errorf("%s=%q is not supported: stoke exports OTLP over http/protobuf or http/json (point it at the collector's HTTP port, usually 4318)", name, v)
	}
	return exp, nil
}

// signalVar returns the signal's own variable if set, else the general one.
func signalVar(get func(string) string, signal, suffix string) (name, value string) {
	name = "OTEL_EXPORTER_OTLP_" + signal + "_" + suffix
	if v := get(name); v != "" {
		return name, v
	}
	name = "OTEL_EXPORTER_OTLP_" + suffix
	return name, get(name)
}

// headersFromEnv parses the signal's headers variable, or else the general one: a
// comma-separated list of key=value pairs whose values are percent-decoded (as in W3C
// Baggage); a malformed pair is skipped.
func headersFromEnv(get func(string) string, signal string) map[string]string {
	_, v := signalVar(get, signal, "HEADERS")
	if v == "" {
		return nil
	}
	headers := map[string]string{}
	for pair := range strings.SplitSeq(v, ",") {
		key, value, ok := strings.Cut(pair, "=")
		if !ok {
			continue
		}
		value, err := url.PathUnescape(value)
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if err != nil || checkHeader(key, value) != nil {
			continue
		}
		headers[key] = value
	}
	if len(headers) == 0 {
		return nil
	}
	return headers
}

// envBool reads a boolean variable: true or false in any case; unset or empty is false.
func envBool(get func(string) string, name string) (bool, error) {
	switch v := strings.ToLower(get(name)); v {
	case "true":
		return true, nil
	case "false", "":
		return false, nil
	default:
		return false, fmt.Errorf("%s=%q: want true or false", name, v)
	}
}
