// Package freeport picks TCP ports for a node that another process starts
// and binds itself, as tests and benchmarks of the built binary do.
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// lowest is the lowest port picked: below it are the well-known and
// registered services a machine may run.
const lowest = 10000

var (
	mu     sync.Mutex
	handed = map[int]bool{}
)

// Port returns a port that nothing listens on, on any address, right now,
// that this process has not returned before, and that lies below the
// system's ephemeral range (where that range starts above 11,000; else
// below 32,768). Ports from that range are what listeners on port 0 and
// every outgoing connection get, so another test would take one between
// this check and the node's bind; a port below it is taken only by a
// program that names it.
func Port() (int, error) {
	mu.Lock()
	defer mu.Unlock()
	top := ephemeralLow()
	for range 1000 {
		p := lowest + rand.IntN(top-lowest)
		if handed[p] {
			continue
		}
		if !free(p) {
			continue
		}
		handed[p] = true
		return p, nil
	}
	return 0, errors.New("freeport: no free port found")
}

// free reports whether port p binds on loopback and on every address: with
// the BSDs' rules a wildcard bind succeeds beside a listener on loopback.
func free(p int) bool {
	for _, a := range []string{"127.0.0.1:", ":"} {
		l, err := net.Listen("tcp", a+strconv.Itoa(p))
		if err != nil {
			return false
		}
		l.Close()
	}
	return true
}

// Addr returns 127.0.0.1 with a port from Port.
func Addr() (string, error) {
	p, err := Port()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("127.0.0.1:%d", p), nil
}

// ephemeralLow returns the first port of Linux's ephemeral range, or that
// range's default where the system does not say (macOS's and Windows's
// ranges start higher; FreeBSD's at 10000, so there the ports picked are
// in its range, as any port would be).
func ephemeralLow() int {
	const linuxDefault = 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return linuxDefault
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return linuxDefault
	}
	low, err := strconv.Atoi(f[0])
	if err != nil || low <= lowest+1000 {
		return linuxDefault
	}
	return low
}
