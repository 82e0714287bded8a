package node

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	flags "github.com/jessevdk/go-flags"

	"github.com/btcd-electrum/btcd-electrum/electrum"
)

// sampleConfig is the sample config file at the repository's root.
const sampleConfig = "../sample-btcd-electrum.conf"

// TestSampleConfig checks sample-btcd-electrum.conf against the options: every option is listed, every default it states is the node's (for the Electrum limits, the server's documented constants), and with every stated value uncommented the file loads.
func TestSampleConfig(t *testing.T) {
	b, err := os.ReadFile(sampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	sample := string(b)
	stated := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^; ([a-z0-9]+)=(.*)$`).FindAllStringSubmatch(sample, -1) {
		stated[m[1]] = m[2]
	}

	defaults := flags.NewParser(DefaultConfig(), flags.None)
	var uncommented []string
	for _, o := range allOptions(defaults.Command.Group) {
		name := o.LongName
		if name == "configfile" || name == "version" || o.Hidden {
			// Command-line only, or a test knob not shown to operators.
			continue
		}
		value, ok := stated[name]
		if !ok {
			t.Errorf("option %s is not in the sample", name)
			continue
		}
		if value == "" || strings.HasPrefix(value, "<") || o.Value() != nil && reflect.TypeOf(o.Value()).Kind() == reflect.Bool {
			continue
		}
		uncommented = append(uncommented, name+"="+value)
	}

	// Every stated value loads.
	conf := filepath.Join(t.TempDir(), "all.conf")
	if err := os.WriteFile(conf, []byte(strings.Join(uncommented, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The Electrum listeners it states need the index (a flag, not stated).
	cfg, _, err := LoadConfig([]string{"-C", conf, "--electrumindex"})
	if err != nil {
		t.Fatalf("the sample's values do not load: %v", err)
	}

	// Outside the limits, and paths aside (written with ~), they are the
	// defaults.
	def := DefaultConfig()
	def.ElectrumIndex = true
	if err := def.Normalize(); err != nil {
		t.Fatal(err)
	}
	got := flags.NewParser(cfg, flags.None)
	paths := map[string]bool{"datadir": true, "logdir": true, "rpccert": true, "rpckey": true, "electrumcert": true,
		"electrumkey": true, "electrumlisten": true, "electrumtlslisten": true, "electrumwslisten": true, "electrumwsslisten": true}
	limits := map[string]any{
		"electrummaxsessions": electrum.DefaultMaxSessions, "electrummaxsessionsperip": electrum.DefaultMaxSessionsPerIP,
		"electrummaxrecv": electrum.DefaultMaxRecv, "electrummaxsend": electrum.DefaultMaxSend,
		"electrummaxsendbacklog": electrum.DefaultMaxSendBacklog, "electrumwritetimeout": electrum.DefaultWriteTimeout,
		"electrumrequesttimeout": electrum.DefaultRequestTimeout, "electrumidletimeout": electrum.DefaultIdleTimeout,
		"electrummaxbatch": electrum.DefaultMaxBatch, "electrummaxsubspersession": electrum.DefaultMaxSubsPerSession,
		"electrummaxsubsperip": electrum.DefaultMaxSubsPerIP, "electrummaxsubs": electrum.DefaultMaxSubs,
		"electrumconcurrency": electrum.DefaultConcurrency, "electrumcostsoftlimit": float64(electrum.DefaultCostSoftLimit),
		"electrumcosthardlimit": float64(electrum.DefaultCostHardLimit), "electrumrequestsleep": electrum.DefaultRequestSleep,
		"electrumbandwidthunit": electrum.DefaultBandwidthUnit, "electrumbanner": electrum.DefaultBanner,
		"electrumanswercache": electrum.DefaultAnswerCache,
	}
	want := flags.NewParser(def, flags.None)
	for _, o := range allOptions(got.Command.Group) {
		if _, set := stated[o.LongName]; !set || paths[o.LongName] || o.LongName == "electrumexemptnets" {
			continue
		}
		if l, ok := limits[o.LongName]; ok {
			if v := o.Value(); fmt.Sprint(v) != fmt.Sprint(l) {
				t.Errorf("sample states %s=%v, the server's default is %v", o.LongName, v, l)
			}
			continue
		}
		w := want.FindOptionByLongName(o.LongName)
		if !reflect.DeepEqual(o.Value(), w.Value()) {
			t.Errorf("sample states %s=%v, the default is %v", o.LongName, o.Value(), w.Value())
		}
	}
	if n := fmt.Sprint(cfg.Electrum.exemptNets); n != fmt.Sprint(def.Electrum.exemptNets) {
		t.Errorf("sample's exempt nets %s, default %s", n, fmt.Sprint(def.Electrum.exemptNets))
	}
}

// allOptions lists the options of g and its subgroups.
func allOptions(g *flags.Group) []*flags.Option {
	out := append([]*flags.Option(nil), g.Options()...)
	for _, sg := range g.Groups() {
		out = append(out, allOptions(sg)...)
	}
	return out
}
