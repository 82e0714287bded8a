package esplora

import (
	"errors"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the server's Prometheus series, nil until RegisterMetrics.
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// RegisterMetrics adds the server's series to reg: requests by endpoint and
// status, and their duration by endpoint. Call it before Start.
func (s *Server) RegisterMetrics(reg prometheus.Registerer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return errors.New("esplora: RegisterMetrics after Start")
	}
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "esplora_requests_total",
			Help: "Esplora HTTP requests answered, by endpoint (its path pattern, \"unknown\" for no endpoint) and status code (\"gone\": the client left before the answer).",
		}, []string{"endpoint", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "esplora_request_duration_seconds",
			Help:    "Time from reading an Esplora request to its answer, by endpoint.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}, []string{"endpoint"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	s.mx = m
	return nil
}

// observe records one answered request.
func (m *metrics) observe(endpoint string, code int, gone bool, d time.Duration) {
	if m == nil {
		return
	}
	ep := endpoint
	if ep == "" {
		ep = "unknown"
	}
	c := strconv.Itoa(code)
	if gone {
		c = "gone"
	}
	m.requests.WithLabelValues(ep, c).Inc()
	m.latency.WithLabelValues(ep).Observe(d.Seconds())
}
