package indexers

import "github.com/btcsuite/btclog"

// log is the index's logger; disabled until UseLogger is called.
var log = btclog.Disabled

// UseLogger sets the logger the index writes to (subsystem "ELEC" in the node).
func UseLogger(logger btclog.Logger) { log = logger }
