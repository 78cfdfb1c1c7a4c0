package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
)

// envName is the environment variable that sets a flag: --max-skew is
// LOGTALLY_MAX_SKEW. Every flag of every command has one, so that a
// service manager's environment file can hold the whole configuration.
func envName(flagName string) string {
	return "LOGTALLY_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// applyEnv sets every flag that has an environment variable. It runs before
// the command line is parsed, so a flag given there wins. A value that does
// not parse names the variable, the flag and what the value must look like.
func applyEnv(fs *flag.FlagSet, lookup func(string) (string, bool)) error {
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if v, ok := lookup(envName(f.Name)); ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("$%s=%q (--%s): %w", envName(f.Name), v, f.Name, err))
			}
		}
	})
	return errors.Join(errs...)
}
