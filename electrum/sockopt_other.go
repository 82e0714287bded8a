//go:build !linux

package electrum

import "net"

// setNotSentLowat is Linux's TCP_NOTSENT_LOWAT (sockopt_linux.go); other
// systems keep the send buffer alone.
func setNotSentLowat(*net.TCPConn, int) {}
