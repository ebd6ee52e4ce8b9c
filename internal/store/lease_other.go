//go:build !unix

package store

import (
	"errors"
	"os"
)

var errWouldBlock = errors.New("lock held")

// tryLock: this platform has no flock(2); the lease is not exclusive here.
func tryLock(*os.File) error { return nil }

func unlock(*os.File) error { return nil }

func tryLockShared(*os.File) error { return nil }
