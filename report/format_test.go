package report

import "testing"

func TestNumAndSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := num(n); got != want {
			t.Errorf("num(%d) = %q, want %q", n, got, want)
		}
	}
	for n, want := range map[int64]string{0: "0 B", 999: "999 B", 1000: "1.0 kB", 806097: "806.1 kB", 20324698: "20.3 MB", 3e12: "3.0 TB"} {
		if got := size(n); got != want {
			t.Errorf("size(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestValidate(t *testing.T) {
	ok := DefaultConfig()
	if err := ok.Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	for name, c := range map[string]Config{
		"from":   {From: "17/05/2015", Format: Table, Pages: 10},
		"to":     {To: "2015-02-30", Format: Table, Pages: 10},
		"site":   {Site: "Blog:80", Format: Table, Pages: 10},
		"format": {Format: "xml", Pages: 10},
		"pages":  {Format: Table, Pages: 0},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%s: %+v is valid", name, c)
		}
	}
}
