package node

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDashboardPlotsEveryDocumentedMetric: docs/grafana-dashboard.json is
// "a Grafana dashboard of all of them", the metrics of docs/OPERATIONS.md's
// table (TestMetricsEndpoint checks the other way: what it plots is
// served).
func TestDashboardPlotsEveryDocumentedMetric(t *testing.T) {
	ops, err := os.ReadFile("../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	dashboard, err := os.ReadFile("../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(ops)
	start := strings.Index(doc, "| metric | what to look at |")
	if start < 0 {
		t.Fatal("no metrics table in docs/OPERATIONS.md")
	}
	table := doc[start:]
	table = table[:strings.Index(table, "\n\n")]
	var missing []string
	seen := map[string]bool{}
	for _, row := range strings.Split(table, "\n")[2:] {
		cell := strings.SplitN(strings.Trim(row, "|"), "|", 2)[0]
		for _, m := range regexp.MustCompile("`([a-z_]+)").FindAllStringSubmatch(cell, -1) {
			name := m[1]
			if strings.HasPrefix(name, "_catchup") {
				name = "electrum_index" + name // `_catchup_height{of}` abbreviates the row's first name
			}
			if !regexp.MustCompile(`^(btcd|electrum|esplora)_`).MatchString(name) || seen[name] {
				continue
			}
			seen[name] = true
			if !strings.Contains(string(dashboard), name) {
				missing = append(missing, name)
			}
		}
	}
	if len(seen) < 30 {
		t.Fatalf("only %d metrics read from the table", len(seen))
	}
	if len(missing) > 0 {
		t.Fatalf("documented metrics the dashboard \"of all of them\" does not plot: %v", missing)
	}
}

// TestElectrumErrorsNotAtInfo: the Electrum server's failure lines (a
// handler's panic, a failed index read, a certificate that did not
// reload) are logged at error level, so an operator who quiets ESRV to
// warnings (--debuglevel=ESRV=warn) still sees them.
func TestElectrumErrorsNotAtInfo(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), true)
	ec, err := electrumConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	output.mu.Lock()
	saved := output.stdout
	output.stdout = &buf
	output.mu.Unlock()
	defer func() {
		output.mu.Lock()
		output.stdout = saved
		output.mu.Unlock()
		SetLogLevels("info")
	}()
	if err := SetLogLevels("ESRV=warn"); err != nil {
		t.Fatal(err)
	}
	// The line session.go logs when a method's handler panics.
	ec.Errorf("electrum: panic in %s: %v", "blockchain.scripthash.get_history", "runtime error: index out of range")
	if !strings.Contains(buf.String(), "panic in") {
		t.Fatalf("a handler's panic is not logged with ESRV at warn (logged at info): %q", buf.String())
	}
}
