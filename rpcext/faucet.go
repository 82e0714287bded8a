package rpcext

import (
	"fmt"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/txscript/v2"
)

// FaucetCmd is the regtest-only faucet command: pay Amount (in BTC) to
// Address from the node's own coins. It is registered with btcjson, so
// btcjson.NewCmd("faucet", addr, amount) and rpcclient's RawRequest work in
// any program that imports this package.
type FaucetCmd struct {
	Address string
	Amount  float64
}

// FaucetMethod is the method name of the faucet.
const FaucetMethod = "faucet"

func init() {
	btcjson.MustRegisterCmd(FaucetMethod, (*FaucetCmd)(nil), 0)
}

// handleFaucet answers faucet with the txid of the payment.
func handleFaucet(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*FaucetCmd)
	addr, err := address.DecodeAddress(c.Address, s.cfg.Params)
	if err != nil || !addr.IsForNet(s.cfg.Params) {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidAddressOrKey,
			fmt.Sprintf("Invalid address %q for %s", truncate(c.Address), s.cfg.Params.Name))
	}
	amount, err := btcutil.NewAmount(c.Amount)
	if err != nil || amount <= 0 || amount > btcutil.MaxSatoshi {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidParameter,
			fmt.Sprintf("Invalid amount %v: a positive number of BTC", c.Amount))
	}
	pkScript, err := txscript.PayToAddrScript(addr)
	if err != nil {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidAddressOrKey, err.Error())
	}
	txid, err := s.cfg.Backend.Faucet(pkScript, amount)
	if err != nil {
		return nil, toRPCError(err)
	}
	return txid.String(), nil
}
