package parser

import "testing"

// TestHasRequestTime: a format says whether it logs how long a request
// took, in any of nginx's or Apache's ways, so that a RequestTime of 0
// is not read as a fast request.
func TestHasRequestTime(t *testing.T) {
	for _, tt := range []struct {
		format string
		want   bool
	}{
		{Combined, false},
		{VhostCombined, false},
		{Combined + ` $request_time`, true},
		{`$remote_addr [$time_local] "$request" $status $request_time_us`, true},
		{`%h %l %u %t "%r" %>s %b %D`, true},
	} {
		f, err := New(tt.format)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.HasRequestTime(); got != tt.want {
			t.Errorf("%q: HasRequestTime = %v, want %v", tt.format, got, tt.want)
		}
	}
}
