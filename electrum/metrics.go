package electrum

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Prometheus metrics of the server (RegisterMetrics). The request path only
// touches pre-resolved children: each method of the table carries its own
// counters and histogram, so a request costs two atomic adds and one
// histogram observation, with no label lookup and no lock. Everything else
// (sessions, subscriptions, refusals, disconnections, bytes) is read from
// the server's own counters when Prometheus scrapes.

// unknownMethod is the method label of requests for methods the server
// does not have (a bounded label set whatever clients send).
const unknownMethod = "unknown"

// requestBuckets are the latency buckets of requests in seconds.
var requestBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// methodMetrics are the pre-resolved request metrics of one method.
type methodMetrics struct {
	requests prometheus.Counter
	errors   prometheus.Counter
	latency  prometheus.Observer
}

// metrics are the server's hot-path metrics.
type metrics struct {
	unknown       *methodMetrics
	fanout        prometheus.Observer
	notifications prometheus.Counter
}

// RegisterMetrics registers the server's metrics with reg. Call it once,
// before Start.
func (s *Server) RegisterMetrics(reg prometheus.Registerer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("electrum: RegisterMetrics after Start")
	}
	if s.mx != nil {
		return errors.New("electrum: metrics already registered")
	}
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "electrum_requests_total",
		Help: "Electrum requests handled, by method (unknown methods as \"unknown\").",
	}, []string{"method"})
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "electrum_request_errors_total",
		Help: "Electrum requests answered with an error, by method.",
	}, []string{"method"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "electrum_request_duration_seconds",
		Help:    "Time from reading an Electrum request to its answer (throttling delay included), by method.",
		Buckets: requestBuckets,
	}, []string{"method"})
	fanout := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "electrum_notification_fanout_seconds",
		Help:    "Time to turn a batch of chain or mempool events into queued notifications (status recomputation included).",
		Buckets: prometheus.ExponentialBuckets(0.0001, 4, 11),
	})
	notifications := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "electrum_notifications_total",
		Help: "Script hash and header notifications queued to sessions.",
	})
	cs := []prometheus.Collector{requests, errs, latency, fanout, notifications}
	cs = append(cs, s.scrapedCollectors()...)
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	resolve := func(name string) *methodMetrics {
		return &methodMetrics{
			requests: requests.WithLabelValues(name),
			errors:   errs.WithLabelValues(name),
			latency:  latency.WithLabelValues(name),
		}
	}
	for name, m := range s.methods {
		m.mx = resolve(name)
	}
	s.mx = &metrics{unknown: resolve(unknownMethod), fanout: fanout, notifications: notifications}
	return nil
}

// observe records one answered request of m (nil: unknown method).
func (mx *metrics) observe(m *method, d time.Duration, failed bool) {
	mm := mx.unknown
	if m != nil && m.mx != nil {
		mm = m.mx
	}
	mm.requests.Inc()
	if failed {
		mm.errors.Inc()
	}
	mm.latency.Observe(d.Seconds())
}

// failed counts a request observed as answered whose answer was then
// replaced by an error (a batch's answer over MaxSend).
func (mx *metrics) failed(m *method) {
	mm := mx.unknown
	if m != nil && m.mx != nil {
		mm = m.mx
	}
	mm.errors.Inc()
}

// scrapedCollectors are the metrics read from the server's state and
// counters at scrape time.
func (s *Server) scrapedCollectors() []prometheus.Collector {
	var cs []prometheus.Collector
	for t := Transport(0); t < numTransports; t++ {
		labels := prometheus.Labels{"transport": t.String()}
		cs = append(cs,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "electrum_sessions", Help: "Open Electrum sessions, by transport.", ConstLabels: labels,
			}, func() float64 { return float64(s.sessionsOn(t)) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "electrum_received_bytes_total", Help: "Electrum message bytes received, by transport.", ConstLabels: labels,
			}, func() float64 { return float64(s.counters.bytesIn[t].Load()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "electrum_sent_bytes_total", Help: "Electrum message bytes sent, by transport.", ConstLabels: labels,
			}, func() float64 { return float64(s.counters.bytesOut[t].Load()) }),
		)
	}
	for r := RefusalReason(0); r < numRefusalReasons; r++ {
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "electrum_sessions_refused_total",
			Help:        "Electrum connections refused before their session began, by reason.",
			ConstLabels: prometheus.Labels{"reason": r.String()},
		}, func() float64 { return float64(s.counters.refused[r].Load()) }))
	}
	for r := DisconnectReason(0); r < numDisconnectReasons; r++ {
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "electrum_sessions_disconnected_total",
			Help:        "Electrum sessions ended, by reason.",
			ConstLabels: prometheus.Labels{"reason": r.String()},
		}, func() float64 { return float64(s.counters.disconnected[r].Load()) }))
	}
	cs = append(cs,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "electrum_subscriptions", Help: "Script hash subscriptions held by all Electrum sessions.",
		}, func() float64 {
			s.mu.Lock()
			defer s.mu.Unlock()
			return float64(s.totalSubs)
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "electrum_subscriptions_refused_total", Help: "Script hash subscriptions refused by a subscription limit.",
		}, func() float64 { return float64(s.counters.subsRefused.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "electrum_requests_throttled_total", Help: "Electrum requests delayed because their session's (or subnet's) cost was over the soft limit.",
		}, func() float64 { return float64(s.counters.throttled.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "electrum_sessions_throttled_total", Help: "Electrum sessions whose requests were delayed at least once because their (or their subnet's) cost was over the soft limit; each is logged once.",
		}, func() float64 { return float64(s.counters.sessionsSlowed.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "electrum_cost_groups", Help: "Subnets whose sessions' cost is being accounted (open sessions or cost not yet decayed).",
		}, func() float64 { return float64(s.groups.len(time.Now(), s.cfg.groupDecay())) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "electrum_answer_cache_hits_total", Help: "Header chunks and histories answered from the answer cache.",
		}, func() float64 { return float64(s.counters.cacheHits.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "electrum_answer_cache_misses_total", Help: "Header chunks and histories built because the answer cache had no valid copy.",
		}, func() float64 { return float64(s.counters.cacheMisses.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "electrum_answer_cache_bytes", Help: "Bytes of answers held in the answer cache (--electrumanswercache).",
		}, func() float64 { _, b := s.answers.stats(); return float64(b) }),
		certCollector{s},
	)
	return cs
}

// descCertExpiry describes the TLS certificate's expiry.
var descCertExpiry = prometheus.NewDesc("electrum_tls_certificate_expiry_timestamp_seconds",
	"When the Electrum TLS/WSS certificate in use expires (Unix time); absent without a TLS or WSS listener.", nil, nil)

// certCollector reports the certificate in use, when there is one.
type certCollector struct{ s *Server }

// Describe sends the description.
func (c certCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descCertExpiry }

// Collect sends the expiry of the certificate in use.
func (c certCollector) Collect(ch chan<- prometheus.Metric) {
	if info, ok := c.s.certs.info(); ok {
		ch <- prometheus.MustNewConstMetric(descCertExpiry, prometheus.GaugeValue, float64(info.NotAfter.Unix()))
	}
}

// sessionsOn counts the open sessions of one transport.
func (s *Server) sessionsOn(t Transport) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for ss := range s.sessions {
		if ss.transport == t {
			n++
		}
	}
	return n
}
