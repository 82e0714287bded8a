package rpcext

import "github.com/btcsuite/btcd/btcjson"

// GetElectrumInfoCmd is the getelectruminfo command (no parameters). It is
// registered with btcjson, so btcjson.NewCmd("getelectruminfo") and
// rpcclient's RawRequest work in any program that imports this package.
type GetElectrumInfoCmd struct{}

// GetElectrumInfoMethod is the method name of the extension.
const GetElectrumInfoMethod = "getelectruminfo"

func init() {
	btcjson.MustRegisterCmd(GetElectrumInfoMethod, (*GetElectrumInfoCmd)(nil), 0)
}

// handleGetElectrumInfo answers getelectruminfo with the backend's
// ElectrumInfo.
func handleGetElectrumInfo(s *Server, _ interface{}) (interface{}, error) {
	info := s.cfg.Backend.ElectrumInfo()
	if info.Listeners == nil {
		info.Listeners = []string{}
	}
	return info, nil
}
