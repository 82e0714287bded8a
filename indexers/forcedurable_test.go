package indexers

import (
	"bytes"
	"io"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/database"
	_ "github.com/btcsuite/btcd/database/ffldb"
)

// copyFiles copies the files under src to dst as they are on disk now, as
// a crash leaves them. leveldb may be compacting in the background,
// writing and deleting files: a copy is kept only when no file changed
// while it was taken, and taken again otherwise.
func copyFiles(t *testing.T, src, dst string) {
	t.Helper()
	for attempt := 0; attempt < 100; attempt++ {
		before, err := listFiles(src)
		if err == nil {
			os.RemoveAll(dst)
			err = copyTree(src, dst)
		}
		if err == nil {
			after, err := listFiles(src)
			if err == nil && maps.Equal(before, after) {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the database's files kept changing while they were copied")
}

// fileState is a file's size and modification time.
type fileState struct {
	size    int64
	modTime int64
}

// listFiles returns the state of every file under dir.
func listFiles(dir string) (map[string]fileState, error) {
	out := make(map[string]fileState)
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			out[p] = fileState{fi.Size(), fi.ModTime().UnixNano()}
		}
		return nil
	})
	return out, err
}

// copyTree copies the files under src to dst, but for leveldb's LOCK.
func copyTree(src, dst string) error {
	return filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(out, 0o700)
		}
		if fi.Name() == "LOCK" {
			return nil
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		o, err := os.Create(out)
		if err != nil {
			return err
		}
		defer o.Close()
		_, err = io.Copy(o, in)
		return err
	})
}

// TestForceDurable commits a row into an ffldb database, then copies the
// database's files without closing it, as a crash leaves them, and opens
// the copy: the row is lost without forceDurable (ffldb held it in its write
// cache) and kept with it.
func TestForceDurable(t *testing.T) {
	net := chaincfg.RegressionNetParams.Net
	for _, force := range []bool{false, true} {
		dir := t.TempDir()
		path := filepath.Join(dir, "db")
		db, err := database.Create("ffldb", path, net)
		if err != nil {
			t.Fatal(err)
		}
		key, val := []byte("Exdurable"), []byte("committed before")
		if err := db.Update(func(dbTx database.Tx) error { return dbTx.Metadata().Put(key, val) }); err != nil {
			t.Fatal(err)
		}
		if force {
			if err := forceDurable(db); err != nil {
				t.Fatal(err)
			}
		}
		crashed := filepath.Join(dir, "crashed")
		copyFiles(t, path, crashed)
		db.Close()
		cdb, err := database.Open("ffldb", crashed, net)
		if err != nil {
			t.Fatal(err)
		}
		var got, pad []byte
		_ = cdb.View(func(dbTx database.Tx) error {
			got = bytes.Clone(dbTx.Metadata().Get(key))
			pad = dbTx.Metadata().Get(padKey)
			return nil
		})
		cdb.Close()
		switch {
		case force && !bytes.Equal(got, val):
			t.Fatalf("after forceDurable the row is %q in the crash image", got)
		case !force && got != nil:
			t.Fatal("without forceDurable the row is in the crash image: the test shows nothing")
		case pad != nil:
			t.Fatal("the padding row is in the crash image")
		}
	}
}
