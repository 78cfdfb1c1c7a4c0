//go:build !unix

package tailer

import (
	"errors"
	"os"
)

// mapFile maps nothing here: replay reads its files into buffers.
func mapFile(*os.File, int64) ([]byte, error) { return nil, errors.ErrUnsupported }

func unmap([]byte) {}

func faultsPanic() func() { return func() {} }
