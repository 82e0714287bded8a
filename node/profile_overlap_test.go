package node

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestProfilePortOverlapRefusedAtStart: --profile opens a listener
// (net/http/pprof on localhost:PORT) like the node's other listeners, so a
// port it shares with one of them is refused at start (docs/OPERATIONS.md,
// "Start-up"): one line on stderr naming --profile, exit status 1, before
// the data or log directory is created, not once the chain has loaded and
// the index caught up, blaming the other listener.
func TestProfilePortOverlapRefusedAtStart(t *testing.T) {
	bin := buildBinary(t)
	for _, tc := range []struct {
		name   string
		option string
	}{
		{"electrum listener", "--electrumlisten"},
		{"metrics listener", "--metricslisten"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := freePort(t)
			_, port, _ := net.SplitHostPort(addr)
			dir := t.TempDir()
			conf := filepath.Join(dir, "btcd-electrum.conf")
			if err := os.WriteFile(conf, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			args := []string{"--regtest", "-C", conf, "--datadir=" + filepath.Join(dir, "data"),
				"--logdir=" + filepath.Join(dir, "logs"), "--nolisten", "--electrumindex",
				"--profile=" + port, tc.option + "=" + addr}
			if tc.option != "--electrumlisten" {
				args = append(args, "--electrumlisten="+freePort(t))
			}
			// Hang guard only: a node that starts is killed.
			ctx, cancel := context.WithTimeout(context.Background(), testWait)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			msg := strings.TrimSuffix(stderr.String(), "\n")
			var ee *exec.ExitError
			if ctx.Err() != nil || !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("--profile=%s with %s=%s: not refused (exit %v, stderr %q)", port, tc.option, addr, err, msg)
			}
			for _, d := range []string{"data", "logs"} {
				if _, err := os.Stat(filepath.Join(dir, d)); err == nil {
					t.Errorf("%s was created before the overlap was refused (stderr %q)", d, msg)
				}
			}
			if !strings.Contains(msg, "--profile") {
				t.Errorf("stderr %q does not name --profile", msg)
			}
		})
	}
}
