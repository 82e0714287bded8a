package chaingen

import (
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/chaincfg/v2"
)

// coin is an unspent output the generator may spend. Its transaction is
// named by its number in the chain (coinbases included), so the plan of a
// block does not need transaction hashes.
type coin struct {
	value  int64
	txNum  uint32
	script uint32
	vout   uint32
}

// opReturnID is the script id of OP_RETURN outputs: each one is distinct and
// made up from its outpoint when the transaction is built.
const opReturnID = ^uint32(0)

// outPlan is a planned output.
type outPlan struct {
	value  int64
	script uint32
}

// txPlan is a planned transaction: ranges of its block plan's inputs and
// outputs, and its depth (1 + the largest depth of the transactions of the
// same block it spends, 0 if none); transactions of one depth are built in
// parallel.
type txPlan struct {
	in0, in1   uint32
	out0, out1 uint32
	depth      uint32
}

// blockPlan is everything needed to build a block, decided serially from
// the seeded random source.
type blockPlan struct {
	height int32
	// txNum0 is the coinbase's transaction number; the i-th other
	// transaction has number txNum0+1+i.
	txNum0 uint32
	txs    []txPlan
	ins    []coin
	outs   []outPlan
	fees   int64
	// cbScript is the script the coinbase pays to.
	cbScript uint32
	// Scripts with ids newLo..newHi-1 are first paid to in this block;
	// their output scripts are made when the block is built.
	newLo, newHi uint32
	// depths is the number of distinct transaction depths.
	depths uint32
}

// zipf picks ids with weights 1/rank using integers only.
type zipf struct {
	cum []uint64
	ids []uint32
}

func newZipf(ranks []int, ids []uint32) zipf {
	z := zipf{ids: ids}
	var sum uint64
	for _, r := range ranks {
		sum += (1 << 40) / uint64(r)
		z.cum = append(z.cum, sum)
	}
	return z
}

func (z *zipf) pick(rng *rand.Rand) uint32 {
	x := rng.Uint64N(z.cum[len(z.cum)-1])
	return z.ids[sort.Search(len(z.cum), func(i int) bool { return z.cum[i] > x })]
}

// popularKinds is the cycle of script kinds given to popular scripts by
// rank: mostly P2WPKH, then the other common kinds.
var popularKinds = []Kind{P2WPKH, P2SHP2WPKH, P2WPKH, P2PKH, P2TR, P2WPKH, P2WSH, P2PKH, P2TR, P2WPKH,
	P2SHMultisig, P2WPKH, P2TR, P2PKH, P2WPKH, P2SHP2WPKH, P2TR, P2WPKH, P2WSH, P2WPKH}

// Stats counts what the generator made.
type Stats struct {
	// Txs counts non-coinbase transactions, Coinbases coinbases (the
	// genesis block excluded).
	Txs, Coinbases int
	// Inputs counts inputs of non-coinbase transactions, SameBlockInputs
	// those spending an output of the same block.
	Inputs, SameBlockInputs int
	// Outputs counts outputs of non-coinbase transactions by kind.
	Outputs [NumKinds]int
	// FanOuts and Consolidations count transactions of those sorts.
	FanOuts, Consolidations int
	// Blocks counts generated blocks, WarmupBlocks the coinbase-only ones
	// among them.
	Blocks, WarmupBlocks int
}

// model is the generator's view of the chain: scripts, their statistics and
// the unspent outputs it may spend.
type model struct {
	s       Shape
	params  *chaincfg.Params
	rng     *rand.Rand
	seedKey [32]byte

	// Per script id: kind, output script (made when first paid to),
	// history length (transactions touching it), unspent outputs, and the
	// number+1 of the last transaction counted in its history.
	kind    []Kind
	pk      [][]byte
	hist    []uint32
	unspent []uint32
	lastTx  []uint32

	// pool holds the spendable unspent outputs, added at the end (a spend
	// moves the last into its place, so the end is mostly the newest). cold[i] holds
	// outputs of deposit script 2i left for consolidations. immature holds
	// coinbase outputs in height order, cbHeight their heights.
	pool     []coin
	cold     [][]coin
	immature []coin
	cbHeight []int32
	// outScripts is the script of every non-OP_RETURN output made so far,
	// for picking a script by its number of outputs.
	outScripts []uint32

	zAll, zDeposit, zHot zipf

	nextTx uint32
	stats  Stats
}

func newModel(s Shape, params *chaincfg.Params, seed uint64) *model {
	m := &model{s: s, params: params}
	m.rng = rand.New(rand.NewPCG(seed, 0x636861696e67656e)) // "chaingen"
	var sk [32]byte
	for i := 0; i < 4; i++ {
		v := m.rng.Uint64()
		for j := 0; j < 8; j++ {
			sk[8*i+j] = byte(v >> (8 * j))
		}
	}
	m.seedKey = sk

	// Popular scripts have ids 0..PopularScripts-1 (rank = id+1); odd ranks
	// are deposit scripts, even ranks hot wallets.
	var all, dep, hot []int
	var allIDs, depIDs, hotIDs []uint32
	for id := 0; id < s.PopularScripts; id++ {
		sid := m.newScript(popularKinds[id%len(popularKinds)])
		key := keyOf(&m.seedKey, sid)
		m.pk[sid] = appendPkScript(nil, m.kind[sid], &key)
		rank := id + 1
		all, allIDs = append(all, rank), append(allIDs, sid)
		if rank%2 == 1 {
			dep, depIDs = append(dep, rank), append(depIDs, sid)
		} else {
			hot, hotIDs = append(hot, rank), append(hotIDs, sid)
		}
	}
	m.cold = make([][]coin, len(dep))
	m.zAll, m.zDeposit, m.zHot = newZipf(all, allIDs), newZipf(dep, depIDs), newZipf(hot, hotIDs)
	return m
}

// newScript adds a script of kind k; its output script is made later.
func (m *model) newScript(k Kind) uint32 {
	id := uint32(len(m.kind))
	m.kind = append(m.kind, k)
	m.pk = append(m.pk, nil)
	m.hist = append(m.hist, 0)
	m.unspent = append(m.unspent, 0)
	m.lastTx = append(m.lastTx, 0)
	return id
}

// mixKind draws a script kind from Shape.KindPPM.
func (m *model) mixKind() Kind {
	var total uint64
	for k, w := range m.s.KindPPM {
		if Kind(k) != OpReturn {
			total += uint64(w)
		}
	}
	x := m.rng.Uint64N(total)
	for k, w := range m.s.KindPPM {
		if Kind(k) == OpReturn {
			continue
		}
		if x < uint64(w) {
			return Kind(k)
		}
		x -= uint64(w)
	}
	panic("unreachable")
}

func (m *model) chance(p uint32) bool {
	return m.rng.Uint32N(ppm) < p
}

// touch counts transaction txNum in the history of script id.
func (m *model) touch(id, txNum uint32) {
	if m.lastTx[id] != txNum+1 {
		m.lastTx[id] = txNum + 1
		m.hist[id]++
	}
}

// isDeposit reports whether script id is a deposit script (odd rank).
func (m *model) isDeposit(id uint32) bool {
	return id < uint32(m.s.PopularScripts) && id%2 == 0
}

// recipient picks the script of a payment.
func (m *model) recipient() uint32 {
	r := m.rng.Uint32N(ppm)
	switch {
	case r < m.s.NewScriptPPM || len(m.outScripts) == 0:
		return m.newScript(m.mixKind())
	case r < m.s.NewScriptPPM+m.s.PopularPPM:
		return m.zAll.pick(m.rng)
	default:
		return m.outScripts[m.rng.IntN(len(m.outScripts))]
	}
}

// distinctRecipient picks the script of a payment not among to: a batch
// pays each recipient once.
func (m *model) distinctRecipient(to []uint32) uint32 {
	id := m.recipient()
	if slices.Contains(to, id) {
		return m.newScript(m.mixKind())
	}
	return id
}

// blockBuilder holds the state of planning one block.
type blockBuilder struct {
	b *blockPlan
	// fresh holds spendable outputs created earlier in this block.
	fresh []coin
	// weight and sigOps estimate the block's weight and sig op cost.
	weight, sigOps int
	// scratch for recipients.
	to []uint32
}

// Bounds of a block, with room for one more transaction of any sort.
const (
	maxInputWeight  = 4 * (41 + 1 + 2*73 + 2 + multisig2of3Len)
	maxOutputWeight = 4 * (9 + 71)
)

func (m *model) limits() (weight, sigOps int) {
	maxIns := max(len(m.s.InputsPPM), m.s.ConsolidationMax)
	maxOuts := m.s.FanOutMax + 3
	weight = blockchain.MaxBlockWeight - 4000 - maxIns*maxInputWeight - maxOuts*maxOutputWeight
	sigOps = blockchain.MaxBlockSigOpsCost - 400 - maxIns*12 - maxOuts*4*20
	return weight, sigOps
}

// planBlock plans the block at height with up to txs transactions (fewer
// when the block fills up or no coins are left). While the pool of spendable
// coins is smaller than Shape.RampPool, fan-outs are more frequent.
func (m *model) planBlock(height int32, txs int) *blockPlan {
	b := &blockPlan{height: height, txNum0: m.nextTx, newLo: uint32(len(m.kind))}
	m.nextTx++

	// Coinbases mature.
	maturity := int32(m.params.CoinbaseMaturity)
	n := 0
	for n < len(m.immature) && height-m.cbHeight[n] >= maturity {
		n++
	}
	m.pool = append(m.pool, m.immature[:n]...)
	m.immature, m.cbHeight = m.immature[n:], m.cbHeight[n:]

	bb := &blockBuilder{b: b, weight: 4 * 1000, sigOps: 400}
	maxWeight, maxSigOps := m.limits()
	for len(b.txs) < txs && bb.weight < maxWeight && bb.sigOps < maxSigOps {
		if len(m.pool)+len(bb.fresh) == 0 {
			break
		}
		fan := m.s.FanOutPPM
		if len(m.pool) < m.s.RampPool {
			fan = m.s.RampFanOutPPM
		}
		m.planTx(bb, fan)
	}
	m.pool = append(m.pool, bb.fresh...)

	// The coinbase, paying a hot wallet.
	b.cbScript = m.zHot.pick(m.rng)
	m.touch(b.cbScript, b.txNum0)
	m.unspent[b.cbScript]++
	m.outScripts = append(m.outScripts, b.cbScript)
	m.immature = append(m.immature, coin{
		value:  blockchain.CalcBlockSubsidy(height, m.params) + b.fees,
		txNum:  b.txNum0,
		script: b.cbScript,
	})
	m.cbHeight = append(m.cbHeight, height)
	m.stats.Coinbases++
	m.stats.Blocks++
	if txs == 0 {
		m.stats.WarmupBlocks++
	}
	b.newHi = uint32(len(m.kind))
	return b
}

// planTx plans one transaction; the block has at least one coin to spend.
func (m *model) planTx(bb *blockBuilder, fanOutPPM uint32) {
	b := bb.b
	txNum := m.nextTx
	tp := txPlan{in0: uint32(len(b.ins)), out0: uint32(len(b.outs))}
	var total int64
	var baseIn, witIn, sigOps int
	spend := func(c coin) {
		m.unspent[c.script]--
		m.touch(c.script, txNum)
		b.ins = append(b.ins, c)
		total += c.value
		k := m.kind[c.script]
		baseIn += 40 + spendSize[k].sigScript
		witIn += spendSize[k].witness
		sigOps += sigOpCost[k]
		if c.txNum > b.txNum0 {
			tp.depth = max(tp.depth, b.txs[c.txNum-b.txNum0-1].depth+1)
			m.stats.SameBlockInputs++
		}
		m.stats.Inputs++
	}
	take := func() bool {
		var c coin
		switch n := len(m.pool); {
		case len(bb.fresh) > 0 && (n == 0 || m.chance(m.s.SameBlockPPM)):
			i := m.rng.IntN(len(bb.fresh))
			c = bb.fresh[i]
			bb.fresh[i] = bb.fresh[len(bb.fresh)-1]
			bb.fresh = bb.fresh[:len(bb.fresh)-1]
		case n > 0:
			i := m.rng.IntN(n)
			if m.chance(m.s.RecentPPM) {
				i = n - 1 - m.rng.IntN(min(n, m.s.RecentWindow))
			}
			c = m.pool[i]
			m.pool[i] = m.pool[n-1]
			m.pool = m.pool[:n-1]
		default:
			return false
		}
		spend(c)
		return true
	}
	nInputs := func() int {
		r := m.rng.Uint32N(ppm)
		for i, p := range m.s.InputsPPM {
			if r < p {
				return i + 1
			}
			r -= p
		}
		return len(m.s.InputsPPM)
	}

	to := bb.to[:0]
	r := m.rng.Uint32N(ppm)
	consolidated := false
	if r < m.s.ConsolidationPPM {
		dep := m.zDeposit.pick(m.rng)
		list := m.cold[dep/2]
		if len(list) >= m.s.ConsolidationMin {
			n := min(len(list), m.s.ConsolidationMin+m.rng.IntN(m.s.ConsolidationMax-m.s.ConsolidationMin+1))
			for _, c := range list[len(list)-n:] {
				spend(c)
			}
			m.cold[dep/2] = list[:len(list)-n]
			to = append(to, m.zHot.pick(m.rng))
			consolidated = true
			m.stats.Consolidations++
		}
	}
	if !consolidated {
		n := nInputs()
		for i := 0; i < n && take(); i++ {
		}
		if r >= m.s.ConsolidationPPM && r < m.s.ConsolidationPPM+fanOutPPM {
			n := m.s.FanOutMin + m.rng.IntN(m.s.FanOutMax-m.s.FanOutMin+1)
			for i := 0; i < n; i++ {
				to = append(to, m.distinctRecipient(to))
			}
			to = append(to, m.zHot.pick(m.rng)) // change
			m.stats.FanOuts++
		} else {
			to = append(to, m.recipient())
			if !m.chance(m.s.SingleOutputPPM) {
				c := b.ins[tp.in0].script
				if m.chance(m.s.NewChangePPM) {
					c = m.newScript(m.mixKind())
				}
				to = append(to, c)
				if m.rng.Uint32N(2) == 0 {
					to[0], to[1] = to[1], to[0]
				}
			}
		}
	}
	opReturn := m.chance(m.s.OpReturnPPM)

	// Weight, fee and values.
	nOut := len(to)
	base := 8 + 3 + 3 + baseIn
	outSig := 0
	for _, id := range to {
		k := m.kind[id]
		base += 9 + pkScriptLen[k]
		outSig += 4 * legacySigOps[k]
	}
	if opReturn {
		base += 9 + 2 + 40
	}
	weight := 4*base + 2 + witIn
	fee := min(int64(weight/4)*int64(1+m.rng.IntN(25)), total/4)
	remaining := total - fee
	for i, id := range to {
		v := remaining
		switch left := nOut - i; {
		case left > 1 && nOut == 2:
			v = remaining * int64(5+m.rng.IntN(91)) / 100
		case left > 1:
			v = remaining / int64(left) * int64(50+m.rng.IntN(100)) / 100
		}
		remaining -= v
		m.addOutput(bb, txNum, uint32(i), id, v)
	}
	b.fees += fee + remaining
	if opReturn {
		b.outs = append(b.outs, outPlan{script: opReturnID})
		m.stats.Outputs[OpReturn]++
	}

	tp.in1, tp.out1 = uint32(len(b.ins)), uint32(len(b.outs))
	b.txs = append(b.txs, tp)
	if tp.depth+1 > b.depths {
		b.depths = tp.depth + 1
	}
	bb.weight += weight
	bb.sigOps += sigOps + outSig
	bb.to = to
	m.nextTx++
	m.stats.Txs++
}

// addOutput records output vout of transaction txNum paying value to script
// id.
func (m *model) addOutput(bb *blockBuilder, txNum, vout, id uint32, value int64) {
	bb.b.outs = append(bb.b.outs, outPlan{value: value, script: id})
	m.touch(id, txNum)
	m.unspent[id]++
	m.outScripts = append(m.outScripts, id)
	m.stats.Outputs[m.kind[id]]++
	c := coin{value: value, txNum: txNum, script: id, vout: vout}
	if m.isDeposit(id) && m.chance(m.s.DepositColdPPM) {
		m.cold[id/2] = append(m.cold[id/2], c)
		return
	}
	bb.fresh = append(bb.fresh, c)
}
