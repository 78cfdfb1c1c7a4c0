package parser

import (
	"errors"
	"strings"
	"testing"
)

func TestSiteField(t *testing.T) {
	const both = `$host $server_name $remote_addr [$time_local] "$request" $status $body_bytes_sent`
	const bothLine = `Blog.Example.org:8080 _ 192.0.2.1 [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 5`
	tests := []struct {
		name, format, field, line, want string
	}{
		{"vhost_combined %v", "vhost_combined", "%v",
			`www.example.org:443 192.0.2.1 - - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 5 "-" "ua"`, "www.example.org"},
		{"$host of two", both, "$host", bothLine, "Blog.Example.org:8080"},
		{"$server_name of two", both, "$server_name", bothLine, "_"},
		{"host without $", both, "host", bothLine, "Blog.Example.org:8080"},
		{"%{Host}i", `%{Host}i %h %t "%r" %>s %b`,
			"%{Host}i", `shop.example.org 192.0.2.1 [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 5`, "shop.example.org"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Config{Format: tt.format, SiteField: tt.field}.Compile()
			if err != nil {
				t.Fatal(err)
			}
			var r Record
			if err := f.Parse([]byte(tt.line), &r); err != nil {
				t.Fatal(err)
			}
			if got := string(r.VHost); got != tt.want {
				t.Errorf("VHost = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSiteFieldErrors(t *testing.T) {
	tests := []struct{ format, field, want string }{
		{"combined", "$host", "does not log it"},
		{"vhost_combined", "$remote_addr", "want $host"},
		{"combined", "%{Referer}i", "want $host"},
	}
	for _, tt := range tests {
		_, err := Config{Format: tt.format, SiteField: tt.field}.Compile()
		if !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "--site-field") {
			t.Errorf("%s with --site-field %s: err = %v, want ErrBadSpec saying --site-field ... %q", tt.format, tt.field, err, tt.want)
		}
	}
}
