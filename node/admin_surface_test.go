package node

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/electrum"
	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/rpcext"
)

// certPairPEM returns a PEM certificate and key valid from notBefore to
// notAfter.
func certPairPEM(t *testing.T, cn string, notBefore, notAfter time.Time) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		DNSNames:     []string{"localhost"},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// tlsFingerprintAt dials a TLS address and returns the SHA-256 of the
// certificate it presents.
func tlsFingerprintAt(t *testing.T, addr string) string {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("TLS dial %s: %v", addr, err)
	}
	defer c.Close()
	sum := sha256.Sum256(c.ConnectionState().PeerCertificates[0].Raw)
	return hex.EncodeToString(sum[:])
}

// writeCertFiles writes a certificate and key to the node's files.
func writeCertFiles(t *testing.T, cfg *Config, cert, key []byte) {
	t.Helper()
	if err := os.WriteFile(cfg.ElectrumKey, key, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg.ElectrumCert, cert, 0o600); err != nil {
		t.Fatal(err)
	}
}

// OPERATIONS.md, TLS: "Replace the files, then send SIGHUP ... or run
// btcd-electrum-ctl reloadelectrumtls. New connections get the new
// certificate"; Options: --esploratlslisten serves "over TLS 1.2 or newer,
// with the Electrum certificate". After a successful reloadelectrumtls,
// the Electrum TLS listener presents the renewed certificate and the
// Esplora TLS listener must too.
func TestReloadTLSReachesEsploraTLS(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, true)
	cfg.ElectrumTLSListeners = []string{"127.0.0.1:0"}
	cfg.EsploraTLSListeners = []string{"127.0.0.1:0"}
	cfg.ElectrumCert = filepath.Join(dir, "e.cert")
	cfg.ElectrumKey = filepath.Join(dir, "e.key")
	n := startNode(t, cfg)
	rpc := adminClient(t, n, "user", "pass")
	electrumTLS := n.ElectrumAddrs()[electrum.TLS][0].String()
	esploraTLS := n.EsploraAddrs()[0].String()

	first := tlsFingerprintAt(t, electrumTLS)
	if got := tlsFingerprintAt(t, esploraTLS); got != first {
		t.Fatalf("at start Esplora TLS presents %s, Electrum TLS %s", got, first)
	}

	cert, key := certPairPEM(t, "renewed", time.Now().Add(-time.Hour), time.Now().Add(90*24*time.Hour))
	writeCertFiles(t, cfg, cert, key)
	raw, err := rpc.RawRequest(rpcext.ReloadElectrumTLSMethod, nil)
	if err != nil {
		t.Fatalf("reloadelectrumtls: %v", err)
	}
	var info rpcext.TLSCertificate
	if err := json.Unmarshal(raw, &info); err != nil {
		t.Fatal(err)
	}
	renewed := pemFingerprint(t, cert)
	if info.SHA256 != renewed {
		t.Fatalf("reloadelectrumtls answered %s, want %s", raw, renewed)
	}
	if got := tlsFingerprintAt(t, electrumTLS); got != renewed {
		t.Fatalf("Electrum TLS presents %s after the reload, want %s", got, renewed)
	}
	if got := tlsFingerprintAt(t, esploraTLS); got != renewed {
		t.Fatalf("Esplora TLS (\"with the Electrum certificate\") still presents %s after reloadelectrumtls "+
			"answered the renewed certificate %s", got, renewed)
	}
}

// OPERATIONS.md, TLS: "A pair that does not load (unreadable, not PEM, key
// and certificate that do not match, or already expired) is refused: the
// certificate in use stays ... the RPC returns the same as an error";
// open sessions "stay connected"; the expiry metric is "the TLS
// certificate in use".
func TestReloadTLSRefusesBrokenPairs(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, true)
	cfg.ElectrumTLSListeners = []string{"127.0.0.1:0"}
	cfg.ElectrumCert = filepath.Join(dir, "e.cert")
	cfg.ElectrumKey = filepath.Join(dir, "e.key")
	cfg.MetricsListen = "127.0.0.1:0"
	good, goodKey := certPairPEM(t, "good", time.Now().Add(-time.Hour), time.Now().Add(30*24*time.Hour))
	writeCertFiles(t, cfg, good, goodKey)
	n := startNode(t, cfg)
	rpc := adminClient(t, n, "user", "pass")
	addr := n.ElectrumAddrs()[electrum.TLS][0].String()
	goodFP := pemFingerprint(t, good)
	if got := tlsFingerprintAt(t, addr); got != goodFP {
		t.Fatalf("presents %s, want %s", got, goodFP)
	}
	goodExpiry, _ := scrape(t, n, "electrum_tls_certificate_expiry_timestamp_seconds", nil)

	// A session opened before the reloads.
	open, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	oc := &electrumClient{t: t, conn: open, r: bufio.NewReader(open)}
	oc.call("server.version", "kept", "1.4")

	other, otherKey := certPairPEM(t, "other", time.Now().Add(-time.Hour), time.Now().Add(30*24*time.Hour))
	expired, expiredKey := certPairPEM(t, "expired", time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour))
	cases := []struct {
		name      string
		cert, key []byte
	}{
		{"key of another certificate", good, otherKey},
		{"certificate of another key", other, goodKey},
		{"expired", expired, expiredKey},
		{"certificate not PEM", []byte("not pem"), goodKey},
		{"key not PEM", good, []byte("not pem")},
		{"empty files", nil, nil},
	}
	for _, tc := range cases {
		writeCertFiles(t, cfg, tc.cert, tc.key)
		_, err := rpc.RawRequest(rpcext.ReloadElectrumTLSMethod, nil)
		if err == nil || !strings.Contains(err.Error(), "still using") || !strings.Contains(err.Error(), goodFP) {
			t.Errorf("%s: reloadelectrumtls answered %v, want a refusal naming the certificate still in use", tc.name, err)
		}
		if got := tlsFingerprintAt(t, addr); got != goodFP {
			t.Errorf("%s: presents %s after a refused reload, want %s", tc.name, got, goodFP)
		}
		if exp, _ := scrape(t, n, "electrum_tls_certificate_expiry_timestamp_seconds", nil); exp != goodExpiry {
			t.Errorf("%s: expiry metric %v, want %v", tc.name, exp, goodExpiry)
		}
	}
	// Unreadable: the files removed.
	os.Remove(cfg.ElectrumCert)
	os.Remove(cfg.ElectrumKey)
	if _, err := rpc.RawRequest(rpcext.ReloadElectrumTLSMethod, nil); err == nil || !strings.Contains(err.Error(), "still using") {
		t.Errorf("missing files: %v", err)
	}
	if got := tlsFingerprintAt(t, addr); got != goodFP {
		t.Errorf("missing files: presents %s", got)
	}
	// A good renewal after all that, and the old session still works.
	renewed, renewedKey := certPairPEM(t, "renewed", time.Now().Add(-time.Hour), time.Now().Add(60*24*time.Hour))
	writeCertFiles(t, cfg, renewed, renewedKey)
	if _, err := rpc.RawRequest(rpcext.ReloadElectrumTLSMethod, nil); err != nil {
		t.Fatalf("renewal: %v", err)
	}
	if got := tlsFingerprintAt(t, addr); got != pemFingerprint(t, renewed) {
		t.Errorf("after renewal presents %s", got)
	}
	if exp, _ := scrape(t, n, "electrum_tls_certificate_expiry_timestamp_seconds", nil); exp <= goodExpiry {
		t.Errorf("expiry metric %v after renewal, want later than %v", exp, goodExpiry)
	}
	if h, _ := oc.call("blockchain.headers.subscribe").(map[string]any); h == nil {
		t.Error("the session opened before the reloads no longer answers")
	}
}

// With only --esploratlslisten ("with the Electrum certificate"), a
// renewal must still be possible: reloadelectrumtls (or SIGHUP) is the
// documented way to renew that certificate.
func TestReloadTLSWithOnlyEsploraTLS(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, true)
	cfg.EsploraTLSListeners = []string{"127.0.0.1:0"}
	cfg.ElectrumCert = filepath.Join(dir, "e.cert")
	cfg.ElectrumKey = filepath.Join(dir, "e.key")
	n := startNode(t, cfg)
	rpc := adminClient(t, n, "user", "pass")
	esploraTLS := n.EsploraAddrs()[0].String()
	cert, key := certPairPEM(t, "renewed", time.Now().Add(-time.Hour), time.Now().Add(90*24*time.Hour))
	writeCertFiles(t, cfg, cert, key)
	_, err := rpc.RawRequest(rpcext.ReloadElectrumTLSMethod, nil)
	if got := tlsFingerprintAt(t, esploraTLS); err != nil || got != pemFingerprint(t, cert) {
		t.Fatalf("reloadelectrumtls: %v; Esplora TLS presents %s, want the renewed %s", err, got, pemFingerprint(t, cert))
	}
}

// rawRPC calls method with raw JSON params over rpcclient.
func rawRPC(t *testing.T, n *Node, user, pass, method string, params ...string) (json.RawMessage, error) {
	t.Helper()
	c := adminClient(t, n, user, pass)
	ps := make([]json.RawMessage, len(params))
	for i, p := range params {
		ps[i] = json.RawMessage(p)
	}
	return c.RawRequest(method, ps)
}

// The limited RPC user may call none of the admin methods; bad
// parameters get clear errors.
func TestAdminParamsAndLimitedUser(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, true)
	cfg.RPCLimitUser, cfg.RPCLimitPass = "limited", "lpass"
	n := startNode(t, cfg)
	generate(t, n, 1)
	for _, m := range []struct{ method, params string }{
		{"getelectruminfo", ""}, {"getelectrumsessions", ""}, {"disconnectelectrumsession", "1"},
		{"getscripthashinfo", `"` + strings.Repeat("00", 32) + `"`}, {"reloadelectrumtls", ""},
		{"verifyelectrumindex", ""}, {"verifyelectrumindex", `"status"`},
	} {
		var ps []string
		if m.params != "" {
			ps = []string{m.params}
		}
		if raw, err := rawRPC(t, n, "limited", "lpass", m.method, ps...); err == nil || !strings.Contains(err.Error(), "limited user") {
			t.Errorf("limited user: %s answered %s, %v", m.method, raw, err)
		}
	}
	bad := []struct {
		method string
		params []string
		want   string
	}{
		{"disconnectelectrumsession", []string{"12345"}, "No Electrum session with id 12345"},
		{"disconnectelectrumsession", []string{"-1"}, "uint64"},
		{"disconnectelectrumsession", []string{`"abc"`}, "uint64"},
		{"disconnectelectrumsession", []string{"1.5"}, "uint64"},
		{"disconnectelectrumsession", nil, "wrong number of params"},
		{"getscripthashinfo", []string{"42"}, "string"},
		{"getscripthashinfo", []string{`"zz"`}, "Not a script hash"},
		{"getscripthashinfo", []string{`"` + strings.Repeat("g", 64) + `"`}, "Not a script hash"},
		{"getscripthashinfo", []string{`"bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"`}, "Not a script hash"},
		{"getscripthashinfo", nil, "wrong number of params"},
		{"verifyelectrumindex", []string{`"stop"`}, "action must be"},
		{"verifyelectrumindex", []string{"1"}, "string"},
		{"getelectrumsessions", []string{"1"}, "wrong number of params"},
	}
	for _, b := range bad {
		raw, err := rawRPC(t, n, "user", "pass", b.method, b.params...)
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s %v: answered %s, %v; want an error containing %q", b.method, b.params, raw, err, b.want)
		}
	}
}

// disconnectelectrumsession closes the session and releases its
// subscriptions: getscripthashinfo's subscribers, getelectruminfo's
// subscriptions, the electrum_subscriptions metric and the session list.
func TestDisconnectReleasesSubscriptions(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, true)
	cfg.MetricsListen = "127.0.0.1:0"
	n := startNode(t, cfg)
	generate(t, n, 2)
	pkScript, _ := txscript.PayToAddrScript(testMiningAddr(t))
	sh := indexers.ScriptHashFromScript(pkScript).String()

	w := dialElectrum(t, n)
	w.call("server.version", "victim", "1.4")
	w.call("blockchain.scripthash.subscribe", sh)
	w.call("blockchain.scripthash.subscribe", strings.Repeat("ab", 32))
	w.call("blockchain.headers.subscribe")
	keep := dialElectrum(t, n)
	keep.call("server.version", "bystander", "1.4")
	keep.call("blockchain.scripthash.subscribe", sh)

	var sessions []rpcext.ElectrumSession
	raw, err := rawRPC(t, n, "user", "pass", "getelectrumsessions")
	if err != nil || json.Unmarshal(raw, &sessions) != nil || len(sessions) != 2 {
		t.Fatalf("getelectrumsessions: %s %v", raw, err)
	}
	victim := sessions[0]
	if victim.ClientName != "victim" || victim.Subscriptions != 2 || !victim.HeadersSubscribed {
		t.Fatalf("session %+v", victim)
	}
	if info := (rpcBackend{n}).ElectrumInfo(); info.Subscriptions != 3 || info.Sessions != 2 {
		t.Fatalf("before: %+v", info)
	}
	id, _ := json.Marshal(victim.ID)
	if _, err := rawRPC(t, n, "user", "pass", "disconnectelectrumsession", string(id)); err != nil {
		t.Fatal(err)
	}
	w.conn.SetReadDeadline(time.Now().Add(testWait))
	if _, err := w.r.ReadByte(); err == nil {
		t.Fatal("session still open")
	}
	waitFor(t, "the session to be released", func() bool { return (rpcBackend{n}).ElectrumInfo().Sessions == 1 })
	info := (rpcBackend{n}).ElectrumInfo()
	if info.Subscriptions != 1 || info.Disconnected["admin"] != 1 {
		t.Errorf("after: subscriptions %d, disconnected %v", info.Subscriptions, info.Disconnected)
	}
	if v, _ := scrape(t, n, "electrum_subscriptions", nil); v != 1 {
		t.Errorf("electrum_subscriptions %v, want 1", v)
	}
	if v, _ := scrape(t, n, "electrum_sessions_disconnected_total", map[string]string{"reason": "admin"}); v != 1 {
		t.Errorf("electrum_sessions_disconnected_total{reason=admin} %v, want 1", v)
	}
	raw, err = rawRPC(t, n, "user", "pass", "getscripthashinfo", `"`+sh+`"`)
	var shi rpcext.ScriptHashInfo
	if err != nil || json.Unmarshal(raw, &shi) != nil || shi.Subscribers != 1 {
		t.Errorf("getscripthashinfo after the disconnection: %s %v", raw, err)
	}
	raw, err = rawRPC(t, n, "user", "pass", "getelectrumsessions")
	if err != nil || json.Unmarshal(raw, &sessions) != nil || len(sessions) != 1 || sessions[0].ClientName != "bystander" {
		t.Errorf("getelectrumsessions after: %s %v", raw, err)
	}
	// The bystander still gets notified of a new block.
	generate(t, n, 1)
	keep.notification("blockchain.scripthash.subscribe")
}

// reviewSpend signs a transaction spending outpoints (all paying to
// prevScript, to key) to outs.
func reviewSpend(t *testing.T, key *btcec.PrivateKey, prevScript []byte, ins []wire.OutPoint, outs ...*wire.TxOut) *btcutil.Tx {
	t.Helper()
	tx := wire.NewMsgTx(2)
	for i := range ins {
		tx.AddTxIn(wire.NewTxIn(&ins[i], nil, nil))
	}
	for _, o := range outs {
		tx.AddTxOut(o)
	}
	for i := range ins {
		sig, err := txscript.SignatureScript(tx, i, prevScript, txscript.SigHashAll, key, true)
		if err != nil {
			t.Fatal(err)
		}
		tx.TxIn[i].SignatureScript = sig
	}
	return btcutil.NewTx(tx)
}

// getscripthashinfo's numbers agree with what a wallet is told for the same
// script: get_history (confirmed and mempool entries), listunspent,
// get_balance and the subscription status, with confirmed outputs spent in
// the mempool, unconfirmed chains and outputs paid in the mempool.
func TestScriptHashInfoAgreesWithWalletView(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, testConfig(t, dir, true))
	generate(t, n, 101)
	scriptA, _ := txscript.PayToAddrScript(testMiningAddr(t))
	keyB, _ := btcec.PrivKeyFromBytes(bytes.Repeat([]byte{0x22}, 32))
	addrB, _ := address.NewAddressPubKeyHash(address.Hash160(keyB.PubKey().SerializeCompressed()), &chaincfg.RegressionNetParams)
	scriptB, _ := txscript.PayToAddrScript(addrB)

	cb := func(h int32) wire.OutPoint {
		b, err := n.Chain().BlockByHeight(h)
		if err != nil {
			t.Fatal(err)
		}
		return wire.OutPoint{Hash: *b.Transactions()[0].Hash(), Index: 0}
	}
	const coin = 50_0000_0000
	// Confirmed: coinbase 2 pays B 10 BTC.
	tx0 := reviewSpend(t, testKey, scriptA, []wire.OutPoint{cb(2)},
		wire.NewTxOut(10_0000_0000, scriptB), wire.NewTxOut(coin-10_0000_0000-1000, scriptA))
	if _, err := n.ProcessTx(tx0); err != nil {
		t.Fatal(err)
	}
	generate(t, n, 1)
	// Mempool: coinbase 1 pays B 20 BTC; its change is spent again
	// (an unconfirmed parent); B's confirmed output is spent to A.
	tx1 := reviewSpend(t, testKey, scriptA, []wire.OutPoint{cb(1)},
		wire.NewTxOut(20_0000_0000, scriptB), wire.NewTxOut(coin-20_0000_0000-1000, scriptA))
	tx2 := reviewSpend(t, testKey, scriptA, []wire.OutPoint{{Hash: *tx1.Hash(), Index: 1}},
		wire.NewTxOut(coin-20_0000_0000-3000, scriptA))
	tx3 := reviewSpend(t, keyB, scriptB, []wire.OutPoint{{Hash: *tx0.Hash(), Index: 0}},
		wire.NewTxOut(10_0000_0000-2000, scriptA))
	for _, tx := range []*btcutil.Tx{tx1, tx2, tx3} {
		if _, err := n.ProcessTx(tx); err != nil {
			t.Fatal(err)
		}
	}

	c := dialElectrum(t, n)
	c.call("server.version", "checker", "1.4")
	for _, script := range [][]byte{scriptA, scriptB} {
		sh := indexers.ScriptHashFromScript(script).String()
		status := c.call("blockchain.scripthash.subscribe", sh)
		hist, _ := c.call("blockchain.scripthash.get_history", sh).([]any)
		unspent, _ := c.call("blockchain.scripthash.listunspent", sh).([]any)
		bal, _ := c.call("blockchain.scripthash.get_balance", sh).(map[string]any)
		mem, _ := c.call("blockchain.scripthash.get_mempool", sh).([]any)
		confirmed := 0
		for _, h := range hist {
			if ht, _ := h.(map[string]any)["height"].(float64); ht > 0 {
				confirmed++
			}
		}
		raw, err := rawRPC(t, n, "user", "pass", "getscripthashinfo", `"`+sh+`"`)
		if err != nil {
			t.Fatal(err)
		}
		var info rpcext.ScriptHashInfo
		if err := json.Unmarshal(raw, &info); err != nil {
			t.Fatal(err)
		}
		wallet := map[string]any{"history": len(hist), "confirmed": confirmed, "mempool": len(mem),
			"unspent": len(unspent), "balance": bal, "status": status}
		if info.HistoryLength != len(hist) || info.Confirmed != confirmed || info.Mempool != len(mem) ||
			info.UnspentCount != len(unspent) || float64(info.ConfirmedBalance) != bal["confirmed"] ||
			float64(info.UnconfirmedBalance) != bal["unconfirmed"] || info.Status == nil || *info.Status != status ||
			info.Subscribers != 1 || info.TooLarge {
			t.Errorf("getscripthashinfo %s: %s\nwallet sees %v", sh, raw, wallet)
		}
	}
}

// OPERATIONS.md: getscripthashinfo tells "whether its history is too large
// for --electrummaxsend; read without the send limit, so an oversized
// script can be examined".
func TestScriptHashInfoTooLarge(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, true)
	cfg.Electrum.MaxSend = 350_000 // history limit (350000-100)/99 = 3534
	n := startNode(t, cfg)
	generate(t, n, 3540)
	pkScript, _ := txscript.PayToAddrScript(testMiningAddr(t))
	sh := indexers.ScriptHashFromScript(pkScript).String()
	raw, err := rawRPC(t, n, "user", "pass", "getscripthashinfo", `"`+sh+`"`)
	var info rpcext.ScriptHashInfo
	if err != nil || json.Unmarshal(raw, &info) != nil {
		t.Fatalf("getscripthashinfo: %s %v", raw, err)
	}
	if !info.TooLarge || info.HistoryLength != 3540 || info.Confirmed != 3540 || info.UnspentCount != 3540 ||
		info.Status == nil {
		t.Fatalf("getscripthashinfo of an oversized script: %s", raw)
	}
	c := dialElectrum(t, n)
	c.call("server.version", "x", "1.4")
	if bal, _ := c.call("blockchain.scripthash.get_balance", sh).(map[string]any); bal["confirmed"] != float64(info.ConfirmedBalance) {
		t.Fatalf("get_balance %v, getscripthashinfo %d", bal, info.ConfirmedBalance)
	}
	c.id++
	req, _ := json.Marshal(map[string]any{"id": c.id, "method": "blockchain.scripthash.get_history", "params": []any{sh}})
	c.conn.Write(append(req, '\n'))
	if msg := c.read(); msg["error"] == nil {
		t.Fatalf("get_history of an oversized script answered: %.200v", msg)
	}
}
