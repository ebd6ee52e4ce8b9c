//go:build unix

package store

import (
	"errors"
	"os"
	"syscall"
)

var errWouldBlock = syscall.EWOULDBLOCK

// tryLock takes an exclusive flock(2) on f without waiting; errWouldBlock if held.
func tryLock(f *os.File) error {
	for range 100 { // EINTR is retried, boundedly
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
	return syscall.EINTR
}

func unlock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

// tryLockShared takes a shared flock(2) on f without waiting; errWouldBlock while an
// exclusive one is held.
func tryLockShared(f *os.File) error {
	for range 100 {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
	return syscall.EINTR
}
