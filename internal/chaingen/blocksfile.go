package chaingen

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/btcsuite/btcd/btcutil/v2"
)

// ReadBlocks calls fn with every block of a blocks.dat file, in order. The
// file holds the blocks after genesis, each as its length (4 bytes, little
// endian) followed by the block serialized as on the wire (with witnesses).
// Block heights are set: the n-th block of the file has height n.
func ReadBlocks(path string, fn func(*btcutil.Block) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 4<<20)
	var n [4]byte
	for height := int32(1); ; height++ {
		if _, err := io.ReadFull(r, n[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("%s: block %d: %w", path, height, err)
		}
		raw := make([]byte, binary.LittleEndian.Uint32(n[:]))
		if _, err := io.ReadFull(r, raw); err != nil {
			return fmt.Errorf("%s: block %d: %w", path, height, err)
		}
		b, err := btcutil.NewBlockFromBytes(raw)
		if err != nil {
			return fmt.Errorf("%s: block %d: %w", path, height, err)
		}
		b.SetHeight(height)
		if err := fn(b); err != nil {
			return err
		}
	}
}
