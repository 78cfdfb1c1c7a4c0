//go:build !unix

package tailer

import (
	"errors"
	"os"
)

// pageSize is what a mapping's offset is a multiple of.
var pageSize = os.Getpagesize()

// mapFile maps nothing here: replay reads its files into buffers.
func mapFile(*os.File, int64, int64) ([]byte, error) { return nil, errors.ErrUnsupported }

func unmap([]byte) {}

func faultsPanic() func() { return func() {} }
