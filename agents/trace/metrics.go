package trace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/price"
)

// Metric names and units: the GenAI client metrics of the semantic conventions
// (gen-ai-metrics.md), and stoke's estimated cost.
const (
	MetricTokenUsage        = "gen_ai.client.token.usage"
	MetricOperationDuration = "gen_ai.client.operation.duration"
	// MetricCost is the estimated cost of model calls in USD, priced as total_cost_usd is
	// (agents/llm/price); the conventions have no cost metric.
	MetricCost = "stoke.client.cost"

	// AttrTokenType is input or output on MetricTokenUsage.
	AttrTokenType attribute.Key = "gen_ai.token.type"
)

// tokenBounds are the bucket boundaries the conventions advise for token counts.
func tokenBounds() []float64 {
	return []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
}

// durationBounds are the bucket boundaries the conventions advise for durations (s).
func durationBounds() []float64 {
	return []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
}

// metricSink receives the encoded metrics: an OTLP endpoint or a console.
type metricSink interface {
	exportMetrics(ctx context.Context, req *metricsRequest) error
}

// metricsProcessor derives the GenAI client metrics from the chat spans as they end, so
// that the runtime records each model call once, as a span. It aggregates cumulatively
// over the process and exports at Shutdown (a run is one process), to every sink.
type metricsProcessor struct {
	prices price.Table
	sinks  []metricSink
	report func(error)
	start  time.Time
	scope  string // the scope version
	delta  bool   // delta temporality (Config.DeltaMetrics)

	mu       sync.Mutex
	res      *resource.Resource
	tokens   map[attribute.Distinct]*histogram
	duration map[attribute.Distinct]*histogram
	cost     map[attribute.Distinct]*counter
	done     bool
}

type histogram struct {
	attrs    attribute.Set
	bounds   []float64
	counts   []uint64
	count    uint64
	sum      float64
	min, max float64
}

func (h *histogram) record(v float64) {
	if h.count == 0 || v < h.min {
		h.min = v
	}
	if h.count == 0 || v > h.max {
		h.max = v
	}
	h.count++
	h.sum += v
	i, _ := slices.BinarySearch(h.bounds, v) // buckets are (bound[i-1], bound[i]]
	h.counts[i]++
}

type counter struct {
	attrs attribute.Set
	value float64
}

func newMetricsProcessor(prices price.Table, sinks []metricSink, report func(error), version string, delta bool) *metricsProcessor {
	return &metricsProcessor{
		prices: prices, sinks: sinks, report: report, start: time.Now(), scope: version, delta: delta,
		tokens:   map[attribute.Distinct]*histogram{},
		duration: map[attribute.Distinct]*histogram{},
		cost:     map[attribute.Distinct]*counter{},
	}
}

func (p *metricsProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd records a chat span's duration, tokens and cost.
func (p *metricsProcessor) OnEnd(s sdktrace.ReadOnlySpan) {
	a := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		a[kv.Key] = kv.Value
	}
	if a[AttrOperationName].AsString() != OpChat {
		return
	}
	common := []attribute.KeyValue{AttrOperationName.String(OpChat)}
	for _, k := range []attribute.Key{AttrProviderName, AttrRequestModel, AttrResponseModel, AttrServerAddress, AttrServerPort} {
		if v, ok := a[k]; ok {
			common = append(common, attribute.KeyValue{Key: k, Value: v})
		}
	}
	durAttrs := common
	if v, ok := a[AttrErrorType]; ok {
		durAttrs = append(slices.Clip(common), attribute.KeyValue{Key: AttrErrorType, Value: v})
	}
	model := a[AttrResponseModel].AsString()
	if model == "" {
		model = a[AttrRequestModel].AsString()
	}
	cacheRead, cacheWrite := a[AttrCacheReadTokens].AsInt64(), a[AttrCacheCreationTokens].AsInt64()
	input, output := a[AttrInputTokens].AsInt64(), a[AttrOutputTokens].AsInt64()
	usage := llm.Usage{
		InputTokens: input - cacheRead - cacheWrite, OutputTokens: output,
		CacheReadInputTokens: cacheRead, CacheCreationInputTokens: cacheWrite,
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return
	}
	if p.res == nil {
		p.res = s.Resource()
	}
	p.histogram(p.duration, durAttrs, durationBounds()).record(s.EndTime().Sub(s.StartTime()).Seconds())
	if _, ok := a[AttrInputTokens]; ok && (input > 0 || output > 0) {
		p.histogram(p.tokens, append(slices.Clip(common), AttrTokenType.String("input")), tokenBounds()).record(float64(input))
		p.histogram(p.tokens, append(slices.Clip(common), AttrTokenType.String("output")), tokenBounds()).record(float64(output))
		set := attribute.NewSet(common...)
		c := p.cost[set.Equivalent()]
		if c == nil {
			c = &counter{attrs: set}
			p.cost[set.Equivalent()] = c
		}
		c.value += p.prices.Cost(model, usage)
	}
}

func (p *metricsProcessor) histogram(m map[attribute.Distinct]*histogram, kvs []attribute.KeyValue, bounds []float64) *histogram {
	set := attribute.NewSet(kvs...)
	h := m[set.Equivalent()]
	if h == nil {
		h = &histogram{attrs: set, bounds: bounds, counts: make([]uint64, len(bounds)+1)}
		m[set.Equivalent()] = h
	}
	return h
}

// Shutdown exports the metrics once to every sink; a failure goes to report.
func (p *metricsProcessor) Shutdown(ctx context.Context) error {
	p.mu.Lock()
	if p.done {
		p.mu.Unlock()
		return nil
	}
	p.done = true
	req := p.request(time.Now())
	p.mu.Unlock()
	if req == nil {
		return nil
	}
	var errs []error
	for _, s := range p.sinks {
		if err := s.exportMetrics(ctx, req); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		p.report(fmt.Errorf("%w (metrics dropped)", err))
	}
	return nil
}

func (p *metricsProcessor) ForceFlush(context.Context) error { return nil }

// metricsRequest is the content of one ExportMetricsServiceRequest: one resource, one scope.
type metricsRequest struct {
	res          *resource.Resource
	scopeVersion string
	start, now   uint64
	temporality  int // temporalityCumulative or temporalityDelta
	tokens       []*histogram
	duration     []*histogram
	cost         []*counter
}

// request snapshots the aggregates; nil when nothing was recorded. p.mu is held.
func (p *metricsProcessor) request(now time.Time) *metricsRequest {
	if len(p.duration) == 0 {
		return nil
	}
	byKey := func(a, b attribute.Set) int {
		return stringsCompare(a.Encoded(attribute.DefaultEncoder()), b.Encoded(attribute.DefaultEncoder()))
	}
	req := &metricsRequest{res: p.res, scopeVersion: p.scope, start: protoTime(p.start.UnixNano()), now: protoTime(now.UnixNano()), temporality: temporalityCumulative}
	if p.delta {
		req.temporality = temporalityDelta // one export covers the whole run: the same values
	}
	for _, h := range p.tokens {
		req.tokens = append(req.tokens, h)
	}
	for _, h := range p.duration {
		req.duration = append(req.duration, h)
	}
	for _, c := range p.cost {
		req.cost = append(req.cost, c)
	}
	slices.SortFunc(req.tokens, func(a, b *histogram) int { return byKey(a.attrs, b.attrs) })
	slices.SortFunc(req.duration, func(a, b *histogram) int { return byKey(a.attrs, b.attrs) })
	slices.SortFunc(req.cost, func(a, b *counter) int { return byKey(a.attrs, b.attrs) })
	return req
}

func stringsCompare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// AggregationTemporality values of OTLP.
const (
	temporalityDelta      = 1
	temporalityCumulative = 2
)

// The OTLP JSON encoding of an ExportMetricsServiceRequest.
type (
	otlpMetricsRequest struct {
		ResourceMetrics []otlpResourceMetrics `json:"resourceMetrics"`
	}
	otlpResourceMetrics struct {
		Resource     otlpResource       `json:"resource"`
		ScopeMetrics []otlpScopeMetrics `json:"scopeMetrics"`
		SchemaURL    string             `json:"schemaUrl,omitempty"`
	}
	otlpScopeMetrics struct {
		Scope   otlpScope    `json:"scope"`
		Metrics []otlpMetric `json:"metrics"`
	}
	otlpMetric struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitempty"`
		Unit        string         `json:"unit,omitempty"`
		Histogram   *otlpHistogram `json:"histogram,omitempty"`
		Sum         *otlpSum       `json:"sum,omitempty"`
	}
	otlpHistogram struct {
		DataPoints             []otlpHistogramPoint `json:"dataPoints"`
		AggregationTemporality int                  `json:"aggregationTemporality"`
	}
	otlpHistogramPoint struct {
		Attributes        []otlpKeyValue `json:"attributes,omitempty"`
		StartTimeUnixNano string         `json:"startTimeUnixNano"`
		TimeUnixNano      string         `json:"timeUnixNano"`
		Count             string         `json:"count"`
		Sum               float64        `json:"sum"`
		BucketCounts      []string       `json:"bucketCounts"`
		ExplicitBounds    []float64      `json:"explicitBounds"`
		Min               float64        `json:"min"`
		Max               float64        `json:"max"`
	}
	otlpSum struct {
		DataPoints             []otlpNumberPoint `json:"dataPoints"`
		AggregationTemporality int               `json:"aggregationTemporality"`
		IsMonotonic            bool              `json:"isMonotonic"`
	}
	otlpNumberPoint struct {
		Attributes        []otlpKeyValue `json:"attributes,omitempty"`
		StartTimeUnixNano string         `json:"startTimeUnixNano"`
		TimeUnixNano      string         `json:"timeUnixNano"`
		AsDouble          float64        `json:"asDouble"`
	}
)

// metricDescriptions of the three metrics.
const (
	descTokens   = "Number of input and output tokens used."
	descDuration = "GenAI operation duration."
	descCost     = "Estimated cost of model calls in US dollars, from list prices."
)

func (r *metricsRequest) json() ([]byte, error) {
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	hist := func(hs []*histogram) *otlpHistogram {
		out := &otlpHistogram{AggregationTemporality: r.temporality}
		for _, h := range hs {
			counts := make([]string, len(h.counts))
			for i, c := range h.counts {
				counts[i] = u(c)
			}
			out.DataPoints = append(out.DataPoints, otlpHistogramPoint{
				Attributes: encodeAttrs(h.attrs.ToSlice()), StartTimeUnixNano: u(r.start), TimeUnixNano: u(r.now),
				Count: u(h.count), Sum: h.sum, BucketCounts: counts, ExplicitBounds: h.bounds, Min: h.min, Max: h.max,
			})
		}
		return out
	}
	metrics := []otlpMetric{{Name: MetricOperationDuration, Description: descDuration, Unit: "s", Histogram: hist(r.duration)}}
	if len(r.tokens) > 0 {
		metrics = append(metrics, otlpMetric{Name: MetricTokenUsage, Description: descTokens, Unit: "{token}", Histogram: hist(r.tokens)})
		sum := &otlpSum{AggregationTemporality: r.temporality, IsMonotonic: true}
		for _, c := range r.cost {
			sum.DataPoints = append(sum.DataPoints, otlpNumberPoint{
				Attributes: encodeAttrs(c.attrs.ToSlice()), StartTimeUnixNano: u(r.start), TimeUnixNano: u(r.now), AsDouble: c.value,
			})
		}
		metrics = append(metrics, otlpMetric{Name: MetricCost, Description: descCost, Unit: "USD", Sum: sum})
	}
	return json.Marshal(otlpMetricsRequest{ResourceMetrics: []otlpResourceMetrics{{
		Resource:     otlpResource{Attributes: encodeAttrs(r.res.Attributes())},
		SchemaURL:    r.res.SchemaURL(),
		ScopeMetrics: []otlpScopeMetrics{{Scope: otlpScope{Name: ScopeName, Version: r.scopeVersion}, Metrics: metrics}},
	}}})
}

func (r *metricsRequest) proto() []byte {
	hist := func(b *pb, hs []*histogram) {
		b.message(9, func(hb *pb) {
			for _, h := range hs {
				hb.message(1, func(dp *pb) {
					dp.fixed64(2, r.start)
					dp.fixed64(3, r.now)
					dp.fixed64(4, h.count)
					dp.tag(5, wireFixed64) // optional: written even when 0
					*dp = appendDouble(*dp, h.sum)
					dp.message(6, func(p *pb) {
						for _, c := range h.counts {
							*p = appendFixed64(*p, c)
						}
					})
					dp.message(7, func(p *pb) {
						for _, f := range h.bounds {
							*p = appendDouble(*p, f)
						}
					})
					protoAttrs(dp, 9, h.attrs.ToSlice())
					dp.tag(11, wireFixed64)
					*dp = appendDouble(*dp, h.min)
					dp.tag(12, wireFixed64)
					*dp = appendDouble(*dp, h.max)
				})
			}
			hb.uvarint(2, uint64(r.temporality))
		})
	}
	var out pb
	out.message(1, func(rm *pb) {
		rm.message(1, func(res *pb) { protoAttrs(res, 1, r.res.Attributes()) })
		rm.message(2, func(sm *pb) {
			sm.message(1, func(sc *pb) {
				sc.string(1, ScopeName)
				sc.string(2, r.scopeVersion)
			})
			sm.message(2, func(m *pb) {
				m.string(1, MetricOperationDuration)
				m.string(2, descDuration)
				m.string(3, "s")
				hist(m, r.duration)
			})
			if len(r.tokens) > 0 {
				sm.message(2, func(m *pb) {
					m.string(1, MetricTokenUsage)
					m.string(2, descTokens)
					m.string(3, "{token}")
					hist(m, r.tokens)
				})
				sm.message(2, func(m *pb) {
					m.string(1, MetricCost)
					m.string(2, descCost)
					m.string(3, "USD")
					m.message(7, func(s *pb) {
						for _, c := range r.cost {
							s.message(1, func(dp *pb) {
								dp.fixed64(2, r.start)
								dp.fixed64(3, r.now)
								dp.tag(4, wireFixed64)
								*dp = appendDouble(*dp, c.value)
								protoAttrs(dp, 7, c.attrs.ToSlice())
							})
						}
						s.uvarint(2, uint64(r.temporality))
						s.uvarint(3, 1)
					})
				})
			}
		})
		rm.string(3, r.res.SchemaURL())
	})
	return out
}

// otlpMetricSink sends metrics to an OTLP/HTTP endpoint.
type otlpMetricSink struct{ client *otlpClient }

func (s otlpMetricSink) exportMetrics(ctx context.Context, req *metricsRequest) error {
	defer s.client.close()
	if s.client.protobuf {
		return s.client.send(ctx, req.proto(), "data points")
	}
	body, err := req.json()
	if err != nil {
		return fmt.Errorf("OTLP metrics: %w", err)
	}
	return s.client.send(ctx, body, "data points")
}

// linesMetricSink writes metrics as one OTLP JSON line (OTEL_METRICS_EXPORTER=console).
type linesMetricSink struct{ lines *linesExporter }

func (s linesMetricSink) exportMetrics(_ context.Context, req *metricsRequest) error {
	body, err := req.json()
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return s.lines.writeLine(body)
}
