package node

import (
	"cmp"
	"fmt"
	"math"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/btcd-electrum/btcd-electrum/electrum"
)

// ElectrumLimits are the Electrum server's limit options. A zero value means
// the server's default (the ElectrumX value, shown in each description).
type ElectrumLimits struct {
	MaxSessions       int           `long:"electrummaxsessions" description:"Maximum Electrum sessions served at once (default 1000)"`
	MaxSessionsPerIP  int           `long:"electrummaxsessionsperip" description:"Maximum Electrum sessions from one IP address (default 12; negative disables)"`
	MaxRecv           int           `long:"electrummaxrecv" description:"Largest Electrum request in bytes (default 1000000)"`
	MaxSend           int           `long:"electrummaxsend" description:"Largest Electrum response in bytes, at least 350000 (default 8100000)"`
	MaxSendBacklog    int           `long:"electrummaxsendbacklog" description:"Response bytes that may wait for a slow Electrum client before it is disconnected (default 16000000)"`
	WriteTimeout      time.Duration `long:"electrumwritetimeout" description:"Disconnect an Electrum client that accepts no data for this long (default 20s)"`
	RequestTimeout    time.Duration `long:"electrumrequesttimeout" description:"Fail an Electrum request that takes longer than this (default 30s)"`
	IdleTimeout       time.Duration `long:"electrumidletimeout" description:"Disconnect an Electrum client that sends nothing for this long (default 10m)"`
	MaxBatch          int           `long:"electrummaxbatch" description:"Largest Electrum batch in requests (default 1000)"`
	MaxSubsPerSession int           `long:"electrummaxsubspersession" description:"Script hash subscriptions per Electrum session (default 75000)"`
	MaxSubsPerIP      int           `long:"electrummaxsubsperip" description:"Script hash subscriptions per IP address (default 75000)"`
	MaxSubs           int           `long:"electrummaxsubs" description:"Script hash subscriptions in total (default 10000000)"`
	Concurrency       int           `long:"electrumconcurrency" description:"Requests of one Electrum session processed at once (default 10)"`
	Workers           int           `long:"electrumworkers" description:"Electrum requests processed at once across all sessions, lowest session cost first; sessions at or above the soft cost limit get all but one; one spare place for a session costing less than every running request's (default cores)"`
	CostSoftLimit     float64       `long:"electrumcostsoftlimit" description:"Session cost above which Electrum requests are delayed (default 1000)"`
	CostHardLimit     float64       `long:"electrumcosthardlimit" description:"Session cost at which an Electrum client is disconnected (default 10000; negative disables throttling)"`
	RequestSleep      time.Duration `long:"electrumrequestsleep" description:"Delay of a request at the hard cost limit (default 2.5s)"`
	BandwidthUnit     int           `long:"electrumbandwidthunit" description:"Bytes sent or received that cost 1.0 (default 5000)"`
	AnswerCache       int64         `long:"electrumanswercache" description:"Bytes of header chunks and confirmed histories kept encoded for the next Electrum client asking for them (default 67108864; negative disables)"`
	Banner            string        `long:"electrumbanner" description:"Text returned by server.banner"`
	DonationAddress   string        `long:"electrumdonationaddress" description:"Address returned by server.donation_address"`

	ExemptNets     []string `long:"electrumexemptnets" description:"Networks (CIDR, comma-separated or repeated) exempt from the per-IP session and subscription limits, from per-subnet cost grouping and from cost throttling -- a reverse proxy or Tor daemon on loopback makes every client 127.0.0.1 (none for no exemption)"`
	ThrottleExempt bool     `long:"electrumthrottleexempt" description:"Charge and throttle sessions from --electrumexemptnets by cost like any other, each on its own cost (default off), as a public reverse proxy or Tor daemon forwarding from there without the client's address needs; without it the operator's own tools are never slowed"`

	// exemptNets is ExemptNets parsed by validate.
	exemptNets []*net.IPNet
}

// DefaultElectrumExemptNets are the networks exempt from per-IP limits
// unless --electrumexemptnets says otherwise: loopback, where a reverse
// proxy or a Tor daemon forwards every client from.
var DefaultElectrumExemptNets = []string{"127.0.0.0/8", "::1/128"}

// defaultElectrumLimits returns the limits with every field at "default".
func defaultElectrumLimits() ElectrumLimits {
	return ElectrumLimits{ExemptNets: append([]string(nil), DefaultElectrumExemptNets...)}
}

// parseExemptNets parses --electrumexemptnets: CIDR networks or single
// addresses, comma-separated or repeated; "none" alone exempts nothing, and
// beside a network it is refused, as the operator's intent is unclear.
func parseExemptNets(values []string) ([]*net.IPNet, error) {
	var items []string
	for _, v := range values {
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				items = append(items, item)
			}
		}
	}
	if slices.Contains(items, "none") {
		if len(items) > 1 {
			return nil, fmt.Errorf("--electrumexemptnets: none exempts nothing; it cannot be given with networks (%s)", strings.Join(items, ","))
		}
		return nil, nil
	}
	var out []*net.IPNet
	for _, item := range items {
		if !strings.Contains(item, "/") {
			ip := net.ParseIP(item)
			if ip == nil {
				return nil, fmt.Errorf("--electrumexemptnets: %q is not a network; want CIDR networks such as 127.0.0.0/8,::1/128 or none", item)
			}
			bits := 128
			if ip.To4() != nil {
				ip, bits = ip.To4(), 32
			}
			out = append(out, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
			continue
		}
		_, n, err := net.ParseCIDR(item)
		if err != nil {
			return nil, fmt.Errorf("--electrumexemptnets: %q is not a network; want CIDR networks such as 127.0.0.0/8,::1/128 or none", item)
		}
		out = append(out, n)
	}
	return out, nil
}

// validate rejects values the server cannot use and parses ExemptNets.
func (l *ElectrumLimits) validate() error {
	nets, err := parseExemptNets(l.ExemptNets)
	if err != nil {
		return err
	}
	l.exemptNets = nets
	if l.MaxSend != 0 && l.MaxSend < 350_000 {
		return fmt.Errorf("--electrummaxsend must be at least 350000, not %d", l.MaxSend)
	}
	for name, v := range map[string]int{
		"electrummaxsessions": l.MaxSessions, "electrummaxrecv": l.MaxRecv,
		"electrummaxsendbacklog": l.MaxSendBacklog, "electrummaxbatch": l.MaxBatch,
		"electrummaxsubspersession": l.MaxSubsPerSession, "electrummaxsubsperip": l.MaxSubsPerIP,
		"electrummaxsubs": l.MaxSubs, "electrumconcurrency": l.Concurrency, "electrumworkers": l.Workers,
		"electrumbandwidthunit": l.BandwidthUnit,
	} {
		if v < 0 {
			return fmt.Errorf("--%s must not be negative", name)
		}
	}
	for name, v := range map[string]float64{"electrumcostsoftlimit": l.CostSoftLimit, "electrumcosthardlimit": l.CostHardLimit} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("--%s=%v: want a number", name, v)
		}
	}
	if l.CostSoftLimit < 0 {
		return fmt.Errorf("--electrumcostsoftlimit=%v must not be negative (a negative --electrumcosthardlimit disables throttling)", l.CostSoftLimit)
	}
	if soft, hard := cmp.Or(l.CostSoftLimit, electrum.DefaultCostSoftLimit), cmp.Or(l.CostHardLimit, electrum.DefaultCostHardLimit); hard > 0 && soft > hard {
		return fmt.Errorf("--electrumcostsoftlimit (%v) must not be above --electrumcosthardlimit (%v)", soft, hard)
	}
	for name, v := range map[string]time.Duration{
		"electrumwritetimeout": l.WriteTimeout, "electrumrequesttimeout": l.RequestTimeout,
		"electrumidletimeout": l.IdleTimeout, "electrumrequestsleep": l.RequestSleep,
	} {
		if v < 0 {
			return fmt.Errorf("--%s must not be negative", name)
		}
	}
	return nil
}
