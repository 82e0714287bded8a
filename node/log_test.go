package node

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/btcsuite/btclog"
)

// TestLogFileRotates writes more than a log file holds: the file is rotated
// to .1, .2, .3, no more are kept, and nothing written is lost from the
// files that remain.
func TestLogFileRotates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logs", "node.log")
	if err := SetLogFile(path); err != nil {
		t.Fatal(err)
	}
	defer SetLogFile("")
	SetLogStdout(false)
	defer SetLogStdout(true)

	line := append(bytes.Repeat([]byte("x"), 1023), '\n')
	total := 5 * maxLogFileSize / len(line)
	for i := 0; i < total; i++ {
		if _, err := output.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	if err := SetLogFile(""); err != nil {
		t.Fatal(err)
	}
	var kept int64
	for _, name := range []string{path, path + ".1", path + ".2", path + ".3"} {
		st, err := os.Stat(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if st.Size() > maxLogFileSize {
			t.Errorf("%s has %d bytes, more than %d", name, st.Size(), maxLogFileSize)
		}
		kept += st.Size()
	}
	if _, err := os.Stat(path + ".4"); !os.IsNotExist(err) {
		t.Errorf("a fourth old log file exists: %v", err)
	}
	// Each rotated file is full up to the last whole line.
	if want := int64(maxLogFileSize / len(line) * len(line)); kept < 3*want {
		t.Errorf("rotated files hold %d bytes, want at least %d", kept, 3*want)
	}
}

// TestDebugLevelTakesBtcdSubsystems: a btcd config file's debuglevel loads,
// whichever of btcd's subsystems it names, and BTCD sets the level of NODE,
// the logger of what btcd's main package does.
func TestDebugLevelTakesBtcdSubsystems(t *testing.T) {
	for _, sub := range []string{"ADXR", "BTCD", "DISC"} {
		conf := writeConfigFile(t, "debuglevel=SYNC=info,"+sub+"=debug\n")
		if _, _, err := LoadConfig([]string{conf, "--regtest", "--datadir=/d", "--logdir=/l"}); err != nil {
			t.Errorf("btcd's subsystem %s in a btcd config file: %v", sub, err)
		}
	}
	prev := Logger("NODE").Level()
	t.Cleanup(func() { Logger("NODE").SetLevel(prev) })
	if err := SetLogLevels("BTCD=debug"); err != nil {
		t.Fatal(err)
	}
	if got := Logger("NODE").Level(); got != btclog.LevelDebug {
		t.Errorf("BTCD=debug left NODE at %v", got)
	}
}
