package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// report is everything one run measured.
type report struct {
	cfg           *config
	Started       time.Time
	ServerVersion json.RawMessage
	Tip           int64
	NumScripts    int
	NumHeavy      int
	OddScripts    int
	Single        []*singleResult
	Phases        []*phaseReport
}

// phaseReport is one phase's counters and resource readings.
type phaseReport struct {
	Tip       int64
	res       *phaseResult
	RSS       *rssReport
	ServerCPU *float64 // cores busy in the window, with -pid
	ToolCPU   float64  // this tool's cores busy in the window
}

// rssReport is the server's resident memory around a phase, in KiB.
type rssReport struct {
	IdleKiB    int64   `json:"idle_kib"`
	PeakKiB    int64   `json:"peak_kib"`
	SettledKiB int64   `json:"settled_kib"`
	SettleS    float64 `json:"settled_after_s"`
}

func (p *phaseReport) reqPerS() float64 {
	if p.res.Window <= 0 {
		return 0
	}
	return float64(p.res.Answered) / p.res.Window.Seconds()
}

// cpuPerRequest is the server's CPU time per answer in the window, in
// microseconds; 0 without -pid or answers.
func (p *phaseReport) cpuPerRequest() float64 {
	rate := p.reqPerS()
	if p.ServerCPU == nil || rate <= 0 {
		return 0
	}
	return *p.ServerCPU / rate * 1e6
}

// ms formats a duration in milliseconds for the table.
func ms(d time.Duration) string {
	v := float64(d) / 1e6
	switch {
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

func mib(kib int64) string { return fmt.Sprintf("%.1f MiB", float64(kib)/1024) }

// writeTable prints the human-readable report.
func (r *report) writeTable(w io.Writer) {
	fmt.Fprintf(w, "electrum-load: server %s (%s), tip %d, %d scripts (%d heavy), mix %s, seed %d\n",
		r.cfg.where(), r.ServerVersion, r.Tip, r.NumScripts, r.NumHeavy, r.cfg.Mix, r.cfg.Seed)
	if len(r.Single) > 0 {
		fmt.Fprintf(w, "\nSingle requests on an idle session (ms; %d repetitions):\n", r.cfg.SingleRepeat)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "#\tscript\tmethod\tfirst\tbest\tmedian\tentries\tbytes\t\t")
		for _, s := range r.Single {
			entries := "-"
			if s.Entries >= 0 {
				entries = fmt.Sprint(s.Entries)
			}
			bytes := fmt.Sprint(s.Bytes)
			if !s.Result {
				entries, bytes = "-", "-"
			}
			first, best, median := "-", "-", "-"
			if len(s.Times) > 0 {
				first, best, median = ms(s.First()), ms(s.Best()), ms(s.Median())
			}
			fmt.Fprintf(tw, "%d\t%s…\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", s.Index, shortHash(s.Script), s.Method,
				first, best, median, entries, bytes, s.Error)
		}
		tw.Flush()
	}
	for i, p := range r.Phases {
		res := p.res
		fmt.Fprintf(w, "\nPhase %d: %d sessions, %.1f s measured, %d answers, %.0f req/s, %d failures (no answer)",
			i+1, res.Sessions, res.Window.Seconds(), res.Answered, p.reqPerS(), res.Failed)
		if res.Interrupted {
			fmt.Fprint(w, " (interrupted)")
		}
		fmt.Fprintf(w, "\n  connections opened %d (failed %d), lost %d (warm-up included)\n",
			res.Connects, res.ConnectErrs, res.Disconnects)
		if p.ServerCPU != nil {
			fmt.Fprintf(w, "  server CPU %.2f cores", *p.ServerCPU)
			if us := p.cpuPerRequest(); us > 0 {
				fmt.Fprintf(w, " (%.1f µs per answer)", us)
			}
			fmt.Fprint(w, ", ")
		} else {
			fmt.Fprint(w, "  ")
		}
		fmt.Fprintf(w, "electrum-load CPU %.2f cores\n", p.ToolCPU)
		if p.RSS != nil {
			fmt.Fprintf(w, "  server RSS: idle %s, peak %s, %s after %v\n", mib(p.RSS.IdleKiB),
				mib(p.RSS.PeakKiB), mib(p.RSS.SettledKiB), time.Duration(p.RSS.SettleS*float64(time.Second)))
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "method\tcount\terrors\tfailures\treq/s\tp50 ms\tp90 ms\tp99 ms\tmax ms\t")
		var kinds []string
		for _, s := range res.Stats {
			// A failure is a request counted but not answered: req/s is
			// of answers alone.
			answers := s.OK.Count() + s.Err.Count()
			rate := 0.0
			if res.Window > 0 {
				rate = float64(answers) / res.Window.Seconds()
			}
			lat := "-\t-\t-\t-"
			if s.OK.Count() > 0 {
				lat = strings.Join([]string{ms(s.OK.Quantile(.5)), ms(s.OK.Quantile(.9)),
					ms(s.OK.Quantile(.99)), ms(s.OK.Max())}, "\t")
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.0f\t%s\t\n", s.Spec.Name, answers+s.Failures.Load(), s.Err.Count(),
				s.Failures.Load(), rate, lat)
			for _, k := range sortedKinds(s) {
				kinds = append(kinds, fmt.Sprintf("    %s: %d × %s", s.Spec.Name, k.n, k.kind))
			}
		}
		tw.Flush()
		if len(kinds) > 0 {
			fmt.Fprintln(w, "  error answers and failures (latencies above are of result answers only):")
			for _, k := range kinds {
				fmt.Fprintln(w, k)
			}
		}
	}
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

type kindCount struct {
	kind string
	n    uint64
}

// sortedKinds returns a method's error kinds, most frequent first.
func sortedKinds(s *methodStats) []kindCount {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]kindCount, 0, len(s.kinds))
	for k, n := range s.kinds {
		out = append(out, kindCount{k, n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].n != out[j].n {
			return out[i].n > out[j].n
		}
		return out[i].kind < out[j].kind
	})
	return out
}

// JSON shapes. Latencies are in milliseconds.
type (
	jsonReport struct {
		Tool          string          `json:"tool"`
		Server        string          `json:"server"`
		TLS           bool            `json:"tls"`
		ServerVersion json.RawMessage `json:"server_version"`
		Started       time.Time       `json:"started"`
		Tip           int64           `json:"tip"`
		Scripts       int             `json:"scripts"`
		Heavy         int             `json:"heavy"`
		OddScripts    int             `json:"odd_scripts"`
		Mix           string          `json:"mix"`
		Seed          uint64          `json:"seed"`
		WarmupS       float64         `json:"warmup_s"`
		DurationS     float64         `json:"duration_s"`
		Requests      uint64          `json:"requests,omitempty"`
		TimeoutS      float64         `json:"timeout_s"`
		PID           int             `json:"pid,omitempty"`
		Single        []jsonSingle    `json:"single"`
		Phases        []jsonPhase     `json:"phases"`
	}
	jsonSingle struct {
		Index    int       `json:"index"`
		Script   string    `json:"script"`
		Method   string    `json:"method"`
		TimesMs  []float64 `json:"times_ms"`
		FirstMs  *float64  `json:"first_ms"` // null when no repetition was answered
		BestMs   *float64  `json:"best_ms"`
		MedianMs *float64  `json:"median_ms"`
		Entries  *int      `json:"entries"`
		Bytes    int       `json:"bytes"`
		Error    string    `json:"error,omitempty"`
	}
	jsonPhase struct {
		Sessions             int          `json:"sessions"`
		Tip                  int64        `json:"tip"`
		WindowS              float64      `json:"window_s"`
		Answered             uint64       `json:"answered"`
		Failed               uint64       `json:"failed"`
		ReqPerS              float64      `json:"req_per_s"`
		Connects             uint64       `json:"connects"`
		ConnectErrors        uint64       `json:"connect_errors"`
		LostConns            uint64       `json:"lost_connections"`
		Interrupted          bool         `json:"interrupted,omitempty"`
		ServerCPUCores       *float64     `json:"server_cpu_cores,omitempty"`
		ServerCPUPerAnswerUS float64      `json:"server_cpu_per_answer_us,omitempty"`
		ToolCPUCores         float64      `json:"tool_cpu_cores"`
		RSS                  *rssReport   `json:"rss,omitempty"`
		Methods              []jsonMethod `json:"methods"`
	}
	jsonMethod struct {
		Method       string            `json:"method"`
		RPC          string            `json:"rpc"`
		Weight       int               `json:"weight"`
		Count        uint64            `json:"count"`
		OK           uint64            `json:"ok"`
		Errors       uint64            `json:"errors"`
		Failures     uint64            `json:"failures"`
		ReqPerS      float64           `json:"req_per_s"`
		Latency      *jsonLatency      `json:"latency_ms"`
		ErrorLatency *jsonLatency      `json:"error_latency_ms,omitempty"`
		ErrorKinds   map[string]uint64 `json:"error_kinds,omitempty"`
	}
	jsonLatency struct {
		Min  float64 `json:"min"`
		Mean float64 `json:"mean"`
		P50  float64 `json:"p50"`
		P90  float64 `json:"p90"`
		P99  float64 `json:"p99"`
		P999 float64 `json:"p999"`
		Max  float64 `json:"max"`
	}
)

func msf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func latencyOf(h *histogram) *jsonLatency {
	if h.Count() == 0 {
		return nil
	}
	return &jsonLatency{Min: msf(h.Min()), Mean: msf(h.Mean()), P50: msf(h.Quantile(.5)),
		P90: msf(h.Quantile(.9)), P99: msf(h.Quantile(.99)), P999: msf(h.Quantile(.999)), Max: msf(h.Max())}
}

// toJSON builds the machine-readable report.
func (r *report) toJSON() *jsonReport {
	c := r.cfg
	j := &jsonReport{Tool: clientName, Server: c.where(), TLS: c.TLS, ServerVersion: r.ServerVersion,
		Started: r.Started, Tip: r.Tip, Scripts: r.NumScripts, Heavy: r.NumHeavy, OddScripts: r.OddScripts,
		Mix: c.Mix.String(), Seed: c.Seed, WarmupS: c.Warmup.Seconds(), DurationS: c.Duration.Seconds(),
		Requests: c.Requests, TimeoutS: c.Timeout.Seconds(), PID: c.PID,
		Single: []jsonSingle{}, Phases: []jsonPhase{}}
	if len(j.ServerVersion) == 0 {
		j.ServerVersion = json.RawMessage("null")
	}
	for _, s := range r.Single {
		js := jsonSingle{Index: s.Index, Script: s.Script, Method: s.Method, Bytes: s.Bytes, Error: s.Error}
		if len(s.Times) > 0 {
			first, best, median := msf(s.First()), msf(s.Best()), msf(s.Median())
			js.FirstMs, js.BestMs, js.MedianMs = &first, &best, &median
		}
		for _, t := range s.Times {
			js.TimesMs = append(js.TimesMs, msf(t))
		}
		if s.Entries >= 0 && s.Result {
			e := s.Entries
			js.Entries = &e
		}
		j.Single = append(j.Single, js)
	}
	for _, p := range r.Phases {
		res := p.res
		jp := jsonPhase{Sessions: res.Sessions, Tip: p.Tip, WindowS: res.Window.Seconds(), Answered: res.Answered,
			Failed: res.Failed, ReqPerS: p.reqPerS(), Connects: res.Connects, ConnectErrors: res.ConnectErrs,
			LostConns: res.Disconnects, Interrupted: res.Interrupted, ServerCPUCores: p.ServerCPU,
			ServerCPUPerAnswerUS: p.cpuPerRequest(),
			ToolCPUCores:         p.ToolCPU, RSS: p.RSS, Methods: []jsonMethod{}}
		for i, s := range res.Stats {
			jm := jsonMethod{Method: s.Spec.Name, RPC: s.Spec.RPC, Weight: c.Mix.Entries[i].Weight,
				OK: s.OK.Count(), Errors: s.Err.Count(), Failures: s.Failures.Load(),
				Latency: latencyOf(&s.OK), ErrorLatency: latencyOf(&s.Err)}
			jm.Count = jm.OK + jm.Errors + jm.Failures
			if res.Window > 0 {
				jm.ReqPerS = float64(jm.OK+jm.Errors) / res.Window.Seconds()
			}
			if kinds := sortedKinds(s); len(kinds) > 0 {
				jm.ErrorKinds = map[string]uint64{}
				for _, k := range kinds {
					jm.ErrorKinds[k.kind] = k.n
				}
			}
			jp.Methods = append(jp.Methods, jm)
		}
		j.Phases = append(j.Phases, jp)
	}
	return j
}

// writeJSONFile writes the JSON report to path.
func (r *report) writeJSONFile(path string) error {
	b, err := json.MarshalIndent(r.toJSON(), "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
