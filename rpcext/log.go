package rpcext

import "github.com/btcsuite/btclog"

// log is the package logger; silent until UseLogger is called.
var log = btclog.Disabled

// UseLogger sets the logger the server writes to.
func UseLogger(logger btclog.Logger) {
	log = logger
}
