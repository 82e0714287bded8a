package integration

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// tipHeightAt GETs /blocks/tip/height under an Esplora base URL.
func tipHeightAt(t *testing.T, base string) (int, string) {
	t.Helper()
	resp, err := http.Get(base + "/blocks/tip/height")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestEsploraURLPathFlagForms: NodeConfig.Args may give --esplorapath as
// the node's flag parser (go-flags) takes it: "--esplorapath /api" as two
// arguments, or in a --configfile. The node then serves Esplora under
// /api, and Node.EsploraURL, "http://host:port and any --esplorapath given
// in Args", includes it for a binary node as for an in-process one.
func TestEsploraURLPathFlagForms(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "node.conf")
	if err := os.WriteFile(conf, []byte("[Application Options]\nesplorapath=/api\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"separate argument", []string{"--esplorapath", "/api"}},
		{"config file", []string{"--configfile=" + conf}},
	} {
		for _, binary := range []bool{false, true} {
			n := StartNode(t, NodeConfig{Esplora: true, Binary: binary, Args: c.args})
			if _, err := n.Mine(2); err != nil {
				t.Fatal(err)
			}
			code, body := tipHeightAt(t, n.EsploraURL)
			if code != http.StatusOK || body != strconv.Itoa(2) {
				t.Errorf("%s, binary %v: GET %s/blocks/tip/height = %d %q, want 200 \"2\"", c.name, binary, n.EsploraURL, code, body)
			}
			if err := n.Stop(); err != nil {
				t.Fatal(err)
			}
		}
	}
}
