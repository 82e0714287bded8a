package node

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	flags "github.com/jessevdk/go-flags"

	"github.com/btcd-electrum/btcd-electrum/rpcext"
)

// The parity tables: every flag of btcd v0.26.2, every RPC method it
// answers (HTTP and websocket) and every P2P message it handles must be
// ours too, or be listed in docs/OPERATIONS.md's "Parity with btcd" section
// as "not supported, because ...". btcd's lists are read from its own
// source in the module cache (its main package cannot be imported) and,
// when bin/btcd-v0.26.2/btcd was built (make btcd-v0.26.2), checked against
// the binary's -h.

// btcdSourceDir returns the directory of the btcd v0.26.2 module.
func btcdSourceDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/btcsuite/btcd").Output()
	if err != nil {
		t.Fatalf("go list btcd: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	if !strings.HasSuffix(dir, "@v0.26.2") {
		t.Fatalf("btcd module at %s, want v0.26.2", dir)
	}
	return dir
}

// parseGo parses one file of btcd's main package.
func parseGo(t *testing.T, dir, name string) *ast.File {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, name), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// btcdFlags returns the long option names of btcd's config struct.
func btcdFlags(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	ast.Inspect(parseGo(t, dir, "config.go"), func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != "config" {
			return true
		}
		for _, f := range ts.Type.(*ast.StructType).Fields.List {
			if f.Tag == nil {
				continue
			}
			tag, _ := strconv.Unquote(f.Tag.Value)
			if long := reflect.StructTag(tag).Get("long"); long != "" {
				out = append(out, long)
			}
		}
		return false
	})
	if len(out) < 50 {
		t.Fatalf("found only %d btcd flags", len(out))
	}
	sort.Strings(out)
	return out
}

// btcdHelpFlags returns the long options btcd's -h lists.
func btcdHelpFlags(t *testing.T, bin string) []string {
	t.Helper()
	out, _ := exec.Command(bin, "-h").CombinedOutput()
	re := regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z0-9]+)`)
	set := map[string]bool{}
	for _, m := range re.FindAllStringSubmatch(string(out), -1) {
		if m[1] != "help" {
			set[m[1]] = true
		}
	}
	return sortedKeys(set)
}

// mapKeys returns the string keys of the map literal assigned to varName.
func mapKeys(t *testing.T, f *ast.File, varName string) []string {
	t.Helper()
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || vs.Names[0].Name != varName || len(vs.Values) != 1 {
			return true
		}
		for _, e := range vs.Values[0].(*ast.CompositeLit).Elts {
			if lit, ok := e.(*ast.KeyValueExpr).Key.(*ast.BasicLit); ok {
				s, _ := strconv.Unquote(lit.Value)
				out = append(out, s)
			}
		}
		return false
	})
	if len(out) == 0 {
		t.Fatalf("no keys in %s", varName)
	}
	return out
}

// btcdMethods returns the RPC methods btcd answers over HTTP and
// websockets.
func btcdMethods(t *testing.T, dir string) []string {
	t.Helper()
	set := map[string]bool{}
	for _, m := range mapKeys(t, parseGo(t, dir, "rpcserver.go"), "rpcHandlersBeforeInit") {
		set[m] = true
	}
	for _, m := range mapKeys(t, parseGo(t, dir, "rpcwebsocket.go"), "wsHandlersBeforeInit") {
		set[m] = true
	}
	return sortedKeys(set)
}

// btcdMessages returns the P2P messages btcd's peers handle: the listeners
// of peer.MessageListeners its newPeerConfig sets, as message names.
func btcdMessages(t *testing.T, dir string) []string {
	t.Helper()
	set := map[string]bool{}
	ast.Inspect(parseGo(t, dir, "server.go"), func(n ast.Node) bool {
		cl, ok := n.(*ast.CompositeLit)
		if !ok {
			return true
		}
		sel, ok := cl.Type.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "MessageListeners" {
			return true
		}
		for _, e := range cl.Elts {
			name := e.(*ast.KeyValueExpr).Key.(*ast.Ident).Name
			if name == "OnRead" || name == "OnWrite" {
				continue // byte counters, not messages
			}
			set[listenerMessage(name)] = true
		}
		return false
	})
	if len(set) < 10 {
		t.Fatalf("found only %d btcd message listeners", len(set))
	}
	return sortedKeys(set)
}

// listenerMessage turns a listener name (OnGetCFilters) into its message
// (getcfilters).
func listenerMessage(listener string) string {
	return strings.ToLower(strings.TrimPrefix(listener, "On"))
}

// sortedKeys returns a set's members, sorted.
func sortedKeys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ourFlags returns the node's long option names.
func ourFlags(t *testing.T) map[string]bool {
	t.Helper()
	p := flags.NewParser(DefaultConfig(), flags.Default)
	set := map[string]bool{}
	var walk func(g *flags.Group)
	walk = func(g *flags.Group) {
		for _, o := range g.Options() {
			if o.LongName != "" {
				set[o.LongName] = true
			}
		}
		for _, sub := range g.Groups() {
			walk(sub)
		}
	}
	walk(p.Group)
	return set
}

// ourMessages returns the P2P messages the node's peers handle.
func ourMessages(t *testing.T) map[string]bool {
	t.Helper()
	cfg := DefaultConfig()
	cfg.RegressionTest = true
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	n := &Node{cfg: cfg, params: cfg.params}
	l := reflect.ValueOf(n.newPeerConfig(newServerPeer(n, false)).Listeners)
	set := map[string]bool{}
	for i := 0; i < l.NumField(); i++ {
		if !l.Field(i).IsNil() {
			set[listenerMessage(l.Type().Field(i).Name)] = true
		}
	}
	return set
}

// unsupported reads the "not supported, because" entries of a subsection
// of docs/OPERATIONS.md's parity section: the first `quoted` name of each
// such line, with the reason.
func unsupported(t *testing.T, subsection string) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "docs", "OPERATIONS.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	re := regexp.MustCompile("^- `([^`]+)`.*not supported, because (.{10,})")
	out := map[string]string{}
	inParity, inSub := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			inParity = strings.HasPrefix(line, "## Parity with btcd")
			inSub = false
		case strings.HasPrefix(line, "### "):
			inSub = inParity && strings.TrimSpace(line[4:]) == subsection
		case inSub:
			if m := re.FindStringSubmatch(line); m != nil {
				out[strings.TrimPrefix(m[1], "--")] = m[2]
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkParity fails for every btcd item we lack without a documented
// reason, and for every documented item we do have (the document would be
// stale).
func checkParity(t *testing.T, kind, subsection string, btcd []string, ours map[string]bool) {
	t.Helper()
	doc := unsupported(t, subsection)
	for _, name := range btcd {
		if !ours[name] && doc[name] == "" {
			t.Errorf("%s %q of btcd v0.26.2 is missing, and docs/OPERATIONS.md (### %s) gives no \"not supported, because ...\"",
				kind, name, subsection)
		}
	}
	inBtcd := map[string]bool{}
	for _, name := range btcd {
		inBtcd[name] = true
	}
	for name := range doc {
		if ours[name] {
			t.Errorf("%s %q is documented as not supported but the node has it", kind, name)
		}
		if !inBtcd[name] {
			t.Errorf("%s %q is documented as not supported but btcd v0.26.2 has no such %s", kind, name, kind)
		}
	}
}

// TestParityFlags walks btcd v0.26.2's flags.
func TestParityFlags(t *testing.T) {
	dir := btcdSourceDir(t)
	btcd := btcdFlags(t, dir)
	if bin := filepath.Join("..", "bin", "btcd-v0.26.2", "btcd"); fileExists(bin) {
		if help := btcdHelpFlags(t, bin); !reflect.DeepEqual(help, btcd) {
			t.Fatalf("btcd -h lists %v,\nits config struct %v", help, btcd)
		}
	} else {
		t.Logf("%s not built (make btcd-v0.26.2): flags read from btcd's config.go only", bin)
	}
	checkParity(t, "flag", "Flags", btcd, ourFlags(t))
}

// TestParityRPCMethods walks btcd v0.26.2's RPC methods.
func TestParityRPCMethods(t *testing.T) {
	ours := map[string]bool{}
	for _, m := range rpcext.MethodNames() {
		ours[m] = true
	}
	checkParity(t, "RPC method", "RPC methods", btcdMethods(t, btcdSourceDir(t)), ours)
}

// TestParityP2PMessages walks the P2P messages btcd v0.26.2 handles.
func TestParityP2PMessages(t *testing.T) {
	checkParity(t, "P2P message", "P2P messages", btcdMessages(t, btcdSourceDir(t)), ourMessages(t))
}

// fileExists reports whether path exists.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
