package listflag

import (
	"flag"
	"slices"
	"testing"
)

func TestList(t *testing.T) {
	for _, tt := range []struct {
		arg  string
		want []string
	}{
		{"a,b", []string{"a", "b"}},
		{" a , ,b ", []string{"a", "b"}},
		{"", nil},
	} {
		l := List{"default"}
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.Var(&l, "list", "")
		if err := fs.Parse([]string{"--list", tt.arg}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(l, tt.want) {
			t.Errorf("--list %q = %q, want %q (the default replaced)", tt.arg, l, tt.want)
		}
		if got := l.String(); got != fs.Lookup("list").Value.String() {
			t.Errorf("String = %q", got)
		}
	}
}
