package electrum

import (
	"encoding/json"
	"math"
	"math/rand"
	"reflect"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcsuite/btcd/chainhash/v2"
)

// historyItem is one get_history / get_mempool entry as a client decodes it.
type historyItem struct {
	TxHash string `json:"tx_hash"`
	Height int32  `json:"height"`
	Fee    *int64 `json:"fee,omitempty"`
}

// unspentItem is one listunspent entry as a client decodes it.
type unspentItem struct {
	TxHash string `json:"tx_hash"`
	TxPos  uint32 `json:"tx_pos"`
	Height int32  `json:"height"`
	Value  int64  `json:"value"`
}

// The hand-written encoders must produce exactly what encoding/json makes
// of the item structs, byte for byte, at the edges of every field.
func TestListEncodersMatchEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	randHash := func() chainhash.Hash {
		var h chainhash.Hash
		rng.Read(h[:])
		return h
	}
	heights := []int32{0, -1, 1, 9, 10, 840000, math.MaxInt32}
	values := []int64{0, 1, 546, 2_100_000_000_000_000, math.MaxInt64}
	vouts := []uint32{0, 1, 65535, math.MaxUint32}

	for _, n := range []int{0, 1, 2, 57} {
		var (
			hist     []indexers.HistoryEntry
			mem      []MempoolEntry
			wantHist []historyItem
			wantMem  []historyItem
		)
		for i := 0; i < n; i++ {
			h := randHash()
			height := heights[i%len(heights)]
			hist = append(hist, indexers.HistoryEntry{TxHash: h, Height: height})
			wantHist = append(wantHist, historyItem{TxHash: h.String(), Height: height})
		}
		for i := 0; i < n/2+1; i++ {
			h := randHash()
			fee := values[i%len(values)]
			mem = append(mem, MempoolEntry{TxHash: h, Height: int32(-(i % 2)), Fee: fee})
			wantMem = append(wantMem, historyItem{TxHash: h.String(), Height: int32(-(i % 2)), Fee: &fee})
		}
		check(t, "mempool", mempoolItems(mem), wantMem)
		check(t, "history", historyItems(hist, mem), append(append([]historyItem{}, wantHist...), wantMem...))
		check(t, "history without mempool", historyItems(hist, nil), wantHist)

		var got []byte
		var want []unspentItem
		got = append(got, '[')
		for i := 0; i < n; i++ {
			h := randHash()
			u := unspentItem{TxHash: h.String(), TxPos: vouts[i%len(vouts)], Height: heights[i%len(heights)], Value: values[i%len(values)]}
			if i > 0 {
				got = append(got, ',')
			}
			got = appendUnspentItem(got, &h, u.TxPos, u.Height, u.Value)
			want = append(want, u)
		}
		check(t, "unspent", append(got, ']'), want)
	}
}

// check compares an encoded list with encoding/json's encoding of want.
func check[T any](t *testing.T, what string, got []byte, want []T) {
	t.Helper()
	if want == nil {
		want = []T{}
	}
	exp, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(exp) {
		t.Fatalf("%s:\n got %s\nwant %s", what, got, exp)
	}
	var back []T
	if err := json.Unmarshal(got, &back); err != nil || !reflect.DeepEqual(back, want) {
		t.Fatalf("%s: does not decode back (%v)", what, err)
	}
}
