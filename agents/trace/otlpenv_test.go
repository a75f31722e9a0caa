package trace

import (
	"bytes"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/stoke-cli/stoke/agents/trace/otlptest"
)

// exportFromEnv sets up tracing from env alone, as the CLI does, plays the scenario and
// shuts down; it returns the scenario and the warning lines logged.
func exportFromEnv(t *testing.T, env map[string]string) (scenario, []string) {
	t.Helper()
	cfg, err := ConfigFromEnv(envOf(env), nil)
	if err != nil {
		t.Fatalf("ConfigFromEnv: %v", err)
	}
	logger, lines := logLines()
	cfg.Logger, cfg.ServiceName, cfg.Provider, cfg.ServerURL = logger, "stoke-env", "openai", "http://127.0.0.1:8080/v1"
	tr := mustSetup(t, cfg)
	sc := playScenario(tr.Tracer())
	shutdown(t, tr)
	var warnings []string
	for _, l := range lines() {
		if l != "" {
			warnings = append(warnings, l)
		}
	}
	return sc, warnings
}

// tracesAt decodes the trace requests a collector received (gunzipped when they say
// gzip) with the official types.
func tracesAt(t *testing.T, col *otlpCollector) []*coltracepb.ExportTraceServiceRequest {
	t.Helper()
	var reqs []*coltracepb.ExportTraceServiceRequest
	for _, r := range col.requests() {
		if r.path != "/v1/traces" {
			continue
		}
		body := r.body
		if r.header.Get("Content-Encoding") == "gzip" {
			body = otlptest.Gunzip(t, body)
		}
		reqs = append(reqs, decodeTraces(t, body, r.header.Get("Content-Type")))
	}
	return reqs
}

// checkDelivery exports the scenario configured by env alone: delivered, the collector
// decodes it and nothing is logged; else the collector gets nothing and one warning line
// says the telemetry was not exported, and why (why is in it).
func checkDelivery(t *testing.T, col *otlpCollector, env map[string]string, delivered bool, why string) {
	t.Helper()
	sc, warnings := exportFromEnv(t, env)
	if !delivered {
		if len(col.requests()) != 0 || len(warnings) != 1 || !strings.Contains(warnings[0], "telemetry not exported") || !strings.Contains(warnings[0], why) {
			t.Errorf("requests %d, warnings %q: want none delivered and one warning saying %q", len(col.requests()), warnings, why)
		}
		return
	}
	if len(warnings) != 0 {
		t.Errorf("warnings %q", warnings)
	}
	checkScenario(t, tracesAt(t, col), sc, "stoke-env")
}

// TestCompressionGzip: OTEL_EXPORTER_OTLP_COMPRESSION=gzip (or the signal's own
// variable) sends gzip bodies with Content-Encoding: gzip, in both protocols; they
// decode with the official types after gunzip. none, or nothing, sends plain bodies.
func TestCompressionGzip(t *testing.T) {
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	tests := []struct {
		name                string
		env                 map[string]string
		tracesGz, metricsGz bool
	}{
		{"general", map[string]string{"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}, true, true},
		{"traces only", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "GZIP"}, true, false},
		{"signal wins", map[string]string{"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip", "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION": "none"}, true, false},
		{"none", map[string]string{"OTEL_EXPORTER_OTLP_COMPRESSION": "none"}, false, false},
	}
	for _, tc := range protocols {
		for _, tt := range tests {
			t.Run(tc.protocol+"/"+tt.name, func(t *testing.T) {
				col := newCollector(t)
				env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": col.srv.URL, "OTEL_EXPORTER_OTLP_PROTOCOL": tc.protocol}
				for k, v := range tt.env {
					env[k] = v
				}
				sc, warnings := exportFromEnv(t, env)
				if len(warnings) != 0 {
					t.Errorf("warnings %q", warnings)
				}
				sawMetrics := false
				for _, r := range col.requests() {
					wantGz := tt.tracesGz
					if r.path == "/v1/metrics" {
						wantGz, sawMetrics = tt.metricsGz, true
					}
					if gz := r.header.Get("Content-Encoding") == "gzip"; gz != wantGz {
						t.Errorf("%s: Content-Encoding %q, want gzip %v", r.path, r.header.Get("Content-Encoding"), wantGz)
					}
					if isGzip := len(r.body) > 2 && r.body[0] == 0x1f && r.body[1] == 0x8b; isGzip != wantGz {
						t.Errorf("%s: the body is gzip %v, want %v", r.path, isGzip, wantGz)
					}
					if r.path == "/v1/metrics" {
						body := r.body
						if wantGz {
							body = otlptest.Gunzip(t, body)
						}
						if req := decodeMetrics(t, body, tc.contentType); len(req.ResourceMetrics) == 0 {
							t.Error("no metrics in the request")
						}
					}
				}
				if !sawMetrics {
					t.Error("no metrics request")
				}
				checkScenario(t, tracesAt(t, col), sc, "stoke-env")
			})
		}
	}
}

// TestPrivateCA: a collector whose certificate a private CA signed is reached with
// OTEL_EXPORTER_OTLP_CERTIFICATE naming that CA (or the signal's own variable), and not
// without it: the export fails at once, in one warning line that says why.
func TestPrivateCA(t *testing.T) {
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	ca := otlptest.NewCA(t)
	caFile := ca.CertFile(t)
	tests := []struct {
		name      string
		certVar   string // "" for none
		delivered bool
	}{
		{"OTEL_EXPORTER_OTLP_CERTIFICATE", "OTEL_EXPORTER_OTLP_CERTIFICATE", true},
		{"OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", true},
		{"no certificate", "", false},
		{"another signal's certificate", "OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			col := newTLSCollector(t, ca.ServerTLS(t, false))
			env := map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": col.srv.URL + "/v1/traces"}
			if tt.certVar != "" {
				env[tt.certVar] = caFile
			}
			checkDelivery(t, col, env, tt.delivered, "certificate")
		})
	}
}

// TestMutualTLS: a collector that wants a client certificate its CA signed gets the one
// OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and _CLIENT_KEY name; without them it refuses
// the connection and the export fails in one warning line.
func TestMutualTLS(t *testing.T) {
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	ca := otlptest.NewCA(t)
	caFile := ca.CertFile(t)
	certFile, keyFile := ca.ClientFiles(t)
	for _, withClientCert := range []bool{true, false} {
		t.Run(map[bool]string{true: "client certificate", false: "none"}[withClientCert], func(t *testing.T) {
			col := newTLSCollector(t, ca.ServerTLS(t, true))
			env := map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT": col.srv.URL, "OTEL_METRICS_EXPORTER": "none",
				"OTEL_EXPORTER_OTLP_CERTIFICATE": caFile,
			}
			if withClientCert {
				env["OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE"] = certFile
				env["OTEL_EXPORTER_OTLP_CLIENT_KEY"] = keyFile
			}
			checkDelivery(t, col, env, withClientCert, "remote error: tls: handshake failure")
		})
	}
}

// TestTLSConfigErrors: certificate variables that cannot be used are usage errors that
// name them; the same variables for an http:// endpoint, and INSECURE, are reported as
// unsupported.
func TestTLSConfigErrors(t *testing.T) {
	ca := otlptest.NewCA(t)
	caFile := ca.CertFile(t)
	certFile, keyFile := ca.ClientFiles(t)
	notPEM := filepath.Join(t.TempDir(), "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	const https = "https://collector:4318"
	tests := []struct {
		name        string
		env         map[string]string
		wantErr     string
		unsupported []string
	}{
		{"missing CA file", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": https, "OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"},
			"OTEL_EXPORTER_OTLP_CERTIFICATE: open /nonexistent/ca.pem", nil},
		{"CA file without PEM", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": https, "OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE": notPEM},
			"OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE=" + notPEM + ": no PEM certificate", nil},
		{"key without certificate", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": https, "OTEL_EXPORTER_OTLP_CLIENT_KEY": keyFile},
			"OTEL_EXPORTER_OTLP_CLIENT_KEY and OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE: set both", nil},
		{"certificate without key", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": https, "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE": certFile},
			"OTEL_EXPORTER_OTLP_CLIENT_KEY and OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE: set both", nil},
		{"mismatched pair", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": https, "OTEL_EXPORTER_OTLP_CLIENT_KEY": keyFile, "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": caFile},
			"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE=" + caFile + ", OTEL_EXPORTER_OTLP_CLIENT_KEY=" + keyFile, nil},
		{"bad compression", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": https, "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "zstd"},
			`OTEL_EXPORTER_OTLP_TRACES_COMPRESSION="zstd": want gzip or none`, nil},
		{"certificate over http", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_CERTIFICATE": caFile,
			"OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY": keyFile, "OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE": certFile},
			"", []string{"OTEL_EXPORTER_OTLP_CERTIFICATE", "OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY", "OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE"}},
		{"INSECURE, once for both signals", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": https, "OTEL_EXPORTER_OTLP_INSECURE": "true"},
			"", []string{"OTEL_EXPORTER_OTLP_INSECURE"}},
		{"INSECURE of the signal", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": https, "OTEL_EXPORTER_OTLP_METRICS_INSECURE": "false"},
			"", []string{"OTEL_EXPORTER_OTLP_METRICS_INSECURE"}},
		{"INSECURE of a signal not exported", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": https, "OTEL_EXPORTER_OTLP_METRICS_INSECURE": "true"},
			"", nil},
		{"exponential histograms", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": https,
			"OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION": "base2_exponential_bucket_histogram"},
			"", []string{"OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION"}},
		{"bad histogram aggregation", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": https,
			"OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION": "buckets"},
			`OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION="buckets": want explicit_bucket_histogram or base2_exponential_bucket_histogram`, nil},
		{"bad temporality", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": https, "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE": "deltas"},
			`OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE="deltas": want cumulative, delta or lowmemory`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, ok := configFromEnv(t, tt.env, nil, tt.wantErr)
			if !ok {
				return
			}
			var got []string
			for _, u := range cfg.Unsupported {
				if u.Reason == "" {
					t.Errorf("%s: no reason", u.Var)
				}
				got = append(got, u.Var)
			}
			if strings.Join(got, " ") != strings.Join(tt.unsupported, " ") {
				t.Errorf("unsupported %q, want %q", got, tt.unsupported)
			}
			if cfg.Traces.TLS != nil || cfg.Metrics.TLS != nil {
				if tt.env["OTEL_EXPORTER_OTLP_ENDPOINT"] != https {
					t.Error("a TLS configuration for an http:// endpoint")
				}
			}
		})
	}
}

// TestDeltaTemporality: OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE=delta (and
// lowmemory, since stoke's metrics are histograms and a counter) marks every metric
// delta, with the same values as cumulative.
func TestDeltaTemporality(t *testing.T) {
	for _, tc := range protocols {
		for pref, want := range map[string]metricspb.AggregationTemporality{
			"":          metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE,
			"Delta":     metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA,
			"lowmemory": metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA,
		} {
			t.Run(tc.protocol+"/"+pref, func(t *testing.T) {
				col := newCollector(t)
				exportFromEnv(t, map[string]string{
					"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": col.srv.URL + "/v1/metrics", "OTEL_EXPORTER_OTLP_PROTOCOL": tc.protocol,
					"OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE": pref,
				})
				reqs := col.requests()
				if len(reqs) != 1 {
					t.Fatalf("%d requests, want 1", len(reqs))
				}
				n := 0
				for _, rm := range decodeMetrics(t, reqs[0].body, tc.contentType).ResourceMetrics {
					for _, sm := range rm.ScopeMetrics {
						for _, m := range sm.Metrics {
							var got metricspb.AggregationTemporality
							switch d := m.Data.(type) {
							case *metricspb.Metric_Histogram:
								got = d.Histogram.AggregationTemporality
								if d.Histogram.DataPoints[0].Count == 0 {
									t.Errorf("%s: empty", m.Name)
								}
							case *metricspb.Metric_Sum:
								got = d.Sum.AggregationTemporality
							}
							if got != want {
								t.Errorf("%s: temporality %v, want %v", m.Name, got, want)
							}
							n++
						}
					}
				}
				if n != 3 {
					t.Errorf("%d metrics, want 3", n)
				}
			})
		}
	}
}

// TestTLSFailureNotRetried: a certificate that does not verify, or a client certificate
// the collector wants and does not get, fails the export at the first attempt: trying
// again cannot mend it.
func TestTLSFailureNotRetried(t *testing.T) {
	ca := otlptest.NewCA(t)
	for name, clientAuth := range map[string]bool{"unknown authority": false, "no client certificate": true} {
		t.Run(name, func(t *testing.T) {
			var handshakes atomic.Int32
			server := ca.ServerTLS(t, clientAuth)
			server.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
				handshakes.Add(1)
				return nil, nil
			}
			col := newTLSCollector(t, server)
			exp, reported := newTestExporter(t, col.srv.URL+"/v1/traces")
			if !clientAuth {
				exp.client.transport.TLSClientConfig = nil // the system's roots, which lack the CA
			} else {
				exp.client.transport.TLSClientConfig = &tls.Config{RootCAs: ca.Pool()}
			}
			_ = exp.ExportSpans(t.Context(), testSpans(1))
			if err := reported(); err == nil {
				t.Fatal("the export succeeded")
			}
			if n := handshakes.Load(); n != 1 {
				t.Errorf("%d handshakes, want 1", n)
			}
		})
	}
}

// TestDocsListEveryOTLPVariable: docs/observability.md gives a status for every variable
// of the OTLP exporter specification (protocol/exporter.md) and of the OTLP metrics
// exporter (metrics/sdk_exporters/otlp.md), written as the docs write them: the general
// name with [TRACES_\|METRICS_], or the signal's own name.
func TestDocsListEveryOTLPVariable(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "observability.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, opt := range []string{"PROTOCOL", "HEADERS", "TIMEOUT", "COMPRESSION", "CERTIFICATE", "CLIENT_CERTIFICATE", "CLIENT_KEY", "INSECURE"} {
		if !bytes.Contains(doc, []byte("`OTEL_EXPORTER_OTLP_[TRACES_\\|METRICS_]"+opt+"`")) &&
			!bytes.Contains(doc, []byte("`..._"+opt+"`")) {
			t.Errorf("docs/observability.md has no row for OTEL_EXPORTER_OTLP_[TRACES_|METRICS_]%s", opt)
		}
	}
	for _, name := range []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "`..._METRICS_ENDPOINT`",
		"OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION",
		"OTEL_EXPORTER_OTLP_LOGS_*",
	} {
		if !bytes.Contains(doc, []byte(name)) {
			t.Errorf("docs/observability.md does not name %s", name)
		}
	}
}
