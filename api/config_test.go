package api

import (
	"flag"
	"io"
	"slices"
	"testing"
	"time"
)

func TestConfigFlags(t *testing.T) {
	tests := []struct {
		args    []string
		want    Config
		invalid bool
	}{
		{nil, DefaultConfig(), false},
		{[]string{"--cache-max-age", "0", "--cors-origin", "https://a.example, https://b.example", "--cors-origin", "*"},
			Config{CORSOrigins: []string{"https://a.example", "https://b.example", "*"}}, false},
		{[]string{"--cache-max-age", "-1s"}, Config{CacheMaxAge: -time.Second}, true},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("api", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var c Config
		c.RegisterFlags(fs)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatalf("%q: %v", tt.args, err)
		}
		if c.CacheMaxAge != tt.want.CacheMaxAge || !slices.Equal(c.CORSOrigins, tt.want.CORSOrigins) {
			t.Errorf("%q: config %+v, want %+v", tt.args, c, tt.want)
		}
		if err := c.Validate(); (err != nil) != tt.invalid {
			t.Errorf("%q: Validate() = %v, want an error: %t", tt.args, err, tt.invalid)
		}
	}
}
