package main

import (
	"flag"
	"os"
	"testing"
)

// TestTipsZeroReportsTheBuild: -tips 0 (the build and the point reads
// alone, as -batches 0 gives the tip batches alone) and -batches 0 -tips 0
// report what they ran rather than panic on the empty tip figures.
func TestTipsZeroReportsTheBuild(t *testing.T) {
	oldArgs, oldFlags := os.Args, flag.CommandLine
	defer func() { os.Args, flag.CommandLine = oldArgs, oldFlags }()
	for _, args := range [][]string{{"-batches", "1", "-tips", "0"}, {"-batches", "0", "-tips", "0"}} {
		flag.CommandLine = flag.NewFlagSet("storebench", flag.ContinueOnError)
		os.Args = append([]string{"storebench", "-store", "leveldb"}, args...)
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("storebench %v panicked instead of reporting its run: %v", args, r)
				}
			}()
			main()
		}()
	}
}
