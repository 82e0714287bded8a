package hostile

import (
	"bufio"
	"context"
	"net"
	"time"
)

// ServeEcho answers every line read on l's connections with the same line
// until l is closed. Measured with Floor beside the wallet, at the same
// pace and in the same windows, it is the machine's floor: what a request
// over loopback to a process that does no work takes on this machine at
// that moment (the scheduler, the loopback device, a virtual CPU waking
// up). A wallet's p99 close to the floor's is the machine's, not the
// server's.
func ServeEcho(l net.Listener) error {
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			r := bufio.NewReader(c)
			for {
				line, err := r.ReadSlice('\n')
				if err != nil {
					return
				}
				if _, err := c.Write(line); err != nil {
					return
				}
			}
		}()
	}
}

// floorLine is the probe's request: the size of a wallet's small request.
const floorLine = `{"jsonrpc":"2.0","id":1,"method":"blockchain.scripthash.get_balance","params":["0000000000000000000000000000000000000000000000000000000000000000"]}` + "\n"

// Floor measures the echo server at addr (ServeEcho) as GoodClient.Run
// measures a wallet: a line every interval, each timed from its write to
// its echo, until ctx is done. A request that fails counts in Errors and
// the probe connects again.
func Floor(ctx context.Context, addr string, interval time.Duration) Result {
	var res Result
	var c net.Conn
	var r *bufio.Reader
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	next := time.Now()
	for ctx.Err() == nil {
		if d := time.Until(next); d > 0 && !sleepCtx(ctx, d) {
			break
		}
		next = time.Now().Add(interval)
		if c == nil {
			var d net.Dialer
			var err error
			if c, err = d.DialContext(ctx, "tcp", addr); err != nil {
				c = nil
				res.Errors++
				continue
			}
			r = bufio.NewReader(c)
		}
		t0 := time.Now()
		c.SetDeadline(t0.Add(10 * time.Second))
		_, err := c.Write([]byte(floorLine))
		if err == nil {
			var line []byte
			line, err = r.ReadSlice('\n')
			if err == nil && string(line) != floorLine {
				res.Wrong++
			}
		}
		res.Requests++
		if err != nil {
			res.Errors++
			c.Close()
			c = nil
			continue
		}
		res.Latencies = append(res.Latencies, time.Since(t0))
	}
	res.percentiles()
	return res
}
