package node

import (
	"errors"
	"fmt"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
)

// checkRegtestMining validates --regtestmineinterval: regtest only, and
// not negative.
func (cfg *Config) checkRegtestMining() error {
	switch {
	case cfg.RegtestMineInterval < 0:
		return fmt.Errorf("--regtestmineinterval=%v: must not be negative", cfg.RegtestMineInterval)
	case cfg.RegtestMineInterval > 0 && cfg.params.Name != chaincfg.RegressionNetParams.Name:
		return errors.New("--regtestmineinterval is only allowed with --regtest")
	}
	return nil
}

// mineEvery mines a block every interval (--regtestmineinterval) until
// the node stops: to the first --miningaddr, or to the faucet's address so
// that the faucet has coins to pay from.
func (n *Node) mineEvery(interval time.Duration) {
	defer n.intervalMiner.Done()
	var payTo address.Address
	if len(n.cfg.miningAddrs) > 0 {
		payTo = n.cfg.miningAddrs[0]
	} else {
		payTo = FaucetAddress(n.params)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-n.quit:
			return
		case <-t.C:
			if _, err := n.Generate(1, payTo); err != nil {
				log.Warnf("Interval mining: %v", err)
			}
		}
	}
}
