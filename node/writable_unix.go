//go:build unix

package node

import "golang.org/x/sys/unix"

// checkWritableDir says why the node's user may not create files in dir,
// or nil: a directory without write or search permission, or on a
// read-only file system (systemd's ProtectSystem=strict mounts /etc and
// /usr read-only).
func checkWritableDir(dir string) error {
	return unix.Access(dir, unix.W_OK|unix.X_OK)
}
