package main

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestBenchmarksDocCommandsAreWhatMakeRuns checks docs/BENCHMARKS.md's
// promise above its command block, "Commands (`make bench-e2e` and `make
// bench-load` run them, generating the chain when missing)": every flag of
// each documented `bin/e2ebench catchup|ibd|load` command is given by some
// invocation of the same subcommand in those Makefile targets (flag names
// only: counts such as -runs and -single may differ). The table's load rows
// ("wallet load, 20 sessions (`e2ebench load -restart`)", the idle memory
// of a restarted node) come from a restarted node; make bench-load runs the
// Electrum load on a restarted node, as they say.
func TestBenchmarksDocCommandsAreWhatMakeRuns(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	mk, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	// The documented block: indented lines after the sentence naming the
	// make targets, continuation lines joined.
	text := string(doc)
	i := strings.Index(text, "Commands (`make bench-e2e` and `make bench-load` run them")
	if i < 0 {
		t.Fatal("docs/BENCHMARKS.md no longer says make bench-e2e and bench-load run its commands")
	}
	var block []string
	started := false
	for _, line := range strings.Split(text[i:], "\n")[1:] {
		if strings.HasPrefix(line, "    ") {
			started = true
			block = append(block, strings.TrimSpace(line))
			continue
		}
		if started {
			break
		}
	}
	documented := joinContinued(block)

	// The Makefile's recipes of those targets.
	var recipes []string
	var in bool
	for _, line := range strings.Split(string(mk), "\n") {
		if m := regexp.MustCompile(`^([a-z0-9.-]+):`).FindStringSubmatch(line); m != nil {
			in = m[1] == "bench-e2e" || m[1] == "bench-load"
			continue
		}
		if in && strings.HasPrefix(line, "\t") {
			recipes = append(recipes, strings.TrimSpace(line))
		} else if !strings.HasPrefix(line, "\t") {
			in = false
		}
	}
	made := joinContinued(recipes)

	flagsOf := func(cmd string) (string, map[string]bool) {
		f := strings.Fields(strings.SplitN(cmd, "#", 2)[0])
		if len(f) < 2 || !strings.HasSuffix(f[0], "e2ebench") {
			return "", nil
		}
		flags := map[string]bool{}
		for _, w := range f[2:] {
			if strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "--") {
				flags[strings.SplitN(w, "=", 2)[0]] = true
			}
		}
		return f[1], flags
	}
	checked := 0
	for _, d := range documented {
		sub, want := flagsOf(d)
		if sub == "" || strings.Contains(sub, "|") {
			continue // not a command, or the "catchup|ibd|load ... -node" form
		}
		checked++
		var best []string
		found := false
		for _, m := range made {
			msub, have := flagsOf(m)
			if msub != sub || want["-esplora"] != have["-esplora"] {
				continue // -esplora loads another server: another measurement
			}
			var missing []string
			for f := range want {
				if !have[f] {
					missing = append(missing, f)
				}
			}
			sort.Strings(missing)
			if !found || len(missing) < len(best) {
				best = missing
			}
			found = true
		}
		if !found {
			t.Errorf("documented `%s`: make bench-e2e/bench-load run no `e2ebench %s`", d, sub)
		} else if len(best) > 0 {
			t.Errorf("documented `%s`: no `e2ebench %s` that make bench-e2e/bench-load run gives %v", d, sub, best)
		}
	}
	if checked == 0 {
		t.Fatal("no e2ebench command found in docs/BENCHMARKS.md's block")
	}
}

// joinContinued joins lines ending in a backslash with the next.
func joinContinued(lines []string) []string {
	var out []string
	cur := ""
	for _, l := range lines {
		if strings.HasSuffix(l, "\\") {
			cur += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		out = append(out, cur+l)
		cur = ""
	}
	if cur != "" {
		out = append(out, cur)
	}
	return out
}
