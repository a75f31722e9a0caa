package trace

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/url"
	"os"
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

// Unsupported is an OTEL_* variable that is set, is not malformed, and that stoke does
// not act on, with the reason. The caller logs each as one warning line.
type Unsupported struct {
	Var    string
	Reason string
}

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
//   - OTEL_EXPORTER_OTLP_[{TRACES,METRICS}_]COMPRESSION: gzip, or none (the default).
//   - OTEL_EXPORTER_OTLP_[{TRACES,METRICS}_]CERTIFICATE: a PEM file of the certificates
//     that an https endpoint's chain must end in, instead of the system's roots.
//   - OTEL_EXPORTER_OTLP_[{TRACES,METRICS}_]CLIENT_KEY and _CLIENT_CERTIFICATE: PEM
//     files of the client's key and certificate chain (mutual TLS), both or neither.
//   - OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE: cumulative (default), delta or
//     lowmemory (delta for stoke's histograms and counter).
//   - OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true: prompts and completions
//     are recorded on the chat spans.
//
// The variables of the OTLP exporter specification that stoke does not act on, when set
// for a signal exported over OTLP, are returned in Config.Unsupported:
// OTEL_EXPORTER_OTLP_[{TRACES,METRICS}_]INSECURE (gRPC only: over HTTP the endpoint's
// scheme decides), a certificate variable for an http:// endpoint, and
// OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION=base2_exponential_bucket_histogram.
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
	warned := map[string]bool{}
	unsupported := func(name, reason string) {
		if !warned[name] {
			warned[name] = true
			cfg.Unsupported = append(cfg.Unsupported, Unsupported{Var: name, Reason: reason})
		}
	}
	for _, sig := range []struct {
		name, path string // TRACES, /v1/traces
		dst        *Exporter
	}{
		{"TRACES", "/v1/traces", &cfg.Traces},
		{"METRICS", "/v1/metrics", &cfg.Metrics},
	} {
		exp, err := exporterFromEnv(get, sig.name, sig.path, console, unsupported)
		if err != nil {
			return Config{}, err
		}
		*sig.dst = exp
	}
	if cfg.Metrics.enabled() {
		if cfg.DeltaMetrics, err = metricsFromEnv(get, unsupported); err != nil {
			return Config{}, err
		}
	}
	return cfg, nil
}

// exporterFromEnv reads the variables of one signal (TRACES or METRICS).
func exporterFromEnv(get func(string) string, signal, path string, console io.Writer, unsupported func(name, reason string)) (Exporter, error) {
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
	u, err := url.Parse(exp.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
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
	name, v = signalVar(get, signal, "COMPRESSION")
	switch strings.ToLower(v) {
	case "", "none":
	case CompressionGzip:
		exp.Compression = CompressionGzip
	default:
		return Exporter{}, fmt.Errorf("%s=%q: want gzip or none", name, v)
	}
	if name, v := signalVar(get, signal, "INSECURE"); v != "" {
		unsupported(name, "it applies to OTLP/gRPC only: over OTLP/HTTP the endpoint's scheme (http:// or https://) decides")
	}
	if exp.TLS, err = tlsFromEnv(get, signal, u.Scheme == "https", unsupported); err != nil {
		return Exporter{}, err
	}
	return exp, nil
}

// tlsFromEnv reads the certificate variables of one signal: the roots that the server's
// chain must end in, and the client's certificate and key. It returns nil when none is
// set, or when the endpoint is not https (each variable set then is unsupported).
func tlsFromEnv(get func(string) string, signal string, https bool, unsupported func(name, reason string)) (*tls.Config, error) {
	caVar, caFile := signalVar(get, signal, "CERTIFICATE")
	keyVar, keyFile := signalVar(get, signal, "CLIENT_KEY")
	certVar, certFile := signalVar(get, signal, "CLIENT_CERTIFICATE")
	if caFile == "" && keyFile == "" && certFile == "" {
		return nil, nil
	}
	if !https {
		for _, v := range []struct{ name, value string }{{caVar, caFile}, {keyVar, keyFile}, {certVar, certFile}} {
			if v.value != "" {
				unsupported(v.name, "the endpoint is http://, which uses no TLS")
			}
		}
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", caVar, err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s=%s: no PEM certificate in the file", caVar, caFile)
		}
	}
	switch {
	case keyFile == "" && certFile == "":
	case keyFile == "" || certFile == "":
		return nil, fmt.Errorf("%s and %s: set both (the client's key and its certificate) or neither", keyVar, certVar)
	default:
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("%s=%s, %s=%s: %w", certVar, certFile, keyVar, keyFile, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// metricsFromEnv reads the variables of the OTLP metrics exporter: whether the metrics
// are sent with delta temporality.
func metricsFromEnv(get func(string) string, unsupported func(name, reason string)) (delta bool, err error) {
	const (
		temporalityVar = "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE"
		aggregationVar = "OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION"
	)
	switch v := get(temporalityVar); strings.ToLower(v) {
	case "", "cumulative":
	case "delta", "lowmemory": // stoke's metrics are histograms and a counter: delta in both
		delta = true
	default:
		return false, fmt.Errorf("%s=%q: want cumulative, delta or lowmemory", temporalityVar, v)
	}
	switch v := get(aggregationVar); strings.ToLower(v) {
	case "", "explicit_bucket_histogram":
	case "base2_exponential_bucket_histogram":
		unsupported(aggregationVar, "stoke sends explicit bucket histograms only")
	default:
		return false, fmt.Errorf("%s=%q: want explicit_bucket_histogram or base2_exponential_bucket_histogram", aggregationVar, v)
	}
	return delta, nil
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
