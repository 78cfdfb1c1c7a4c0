package counter_test

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/logtally/logtally/counter"
)

func Example() {
	cfg := counter.DefaultConfig()
	cfg.AddCounter("show=GET /thumb/{id}.jpg status=2xx,304")
	cfg.AddCounter("click=GET /watch/{id:[0-9]+}")
	cfg.AddCounter("read=GET /forum/{topic}/{msg:[0-9]+}")
	cfg.AddCounter("cart=POST /shop/{shop}/cart/add/{product} status=2xx")
	cfg.AddCounter("api=* /api/**")
	cfg.AddRatio("ctr=click/show")
	m, err := counter.New(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	counters := m.Counters()
	var dst []counter.Match // reused for every line
	for _, line := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/thumb/123.jpg", 200},
		{"GET", "/thumb/123.jpg", 404},
		{"GET", "/watch/123", 200},
		{"GET", "/watch/about", 200},
		{"GET", "/forum/golang/98765", 200},
		{"POST", "/shop/paris/cart/add/sku-42", 201},
		{"DELETE", "/api/v1/sessions/7", 204},
		{"GET", "/static/app.css", 200},
	} {
		dst = m.Match([]byte(line.method), []byte(line.path), line.status, dst[:0])
		for _, mt := range dst {
			fmt.Printf("%s %s %d: %s %q\n", line.method, line.path, line.status, counters[mt.Counter].Name, mt.Key)
		}
	}
	// Output:
	// GET /thumb/123.jpg 200: show "123"
	// GET /watch/123 200: click "123"
	// GET /forum/golang/98765 200: read "golang/98765"
	// POST /shop/paris/cart/add/sku-42 201: cart "paris/sku-42"
	// DELETE /api/v1/sessions/7 204: api ""
}

func ExampleConfig_Validate() {
	cfg := counter.DefaultConfig()
	cfg.Counters = []counter.Declaration{{Text: "show=GET /thumb/{id", Source: "--counter"}}
	cfg.Ratios = []counter.Declaration{{Text: "ctr=click/show", Source: "--ratio"}}
	fmt.Println(cfg.Validate())
	// Output:
	// --counter "show=GET /thumb/{id": bad pattern: unclosed "{" at column 17; want {name} or {name:regex}
	// --ratio "ctr=click/show": bad ratio: "click" is not a declared counter; declare it with --counter 'click=METHOD PATTERN'
}

func ExampleRank() {
	items := []counter.Item{
		{Key: "101", Numerator: 1, Denominator: 1},
		{Key: "102", Numerator: 30, Denominator: 100},
		{Key: "103", Numerator: 60, Denominator: 200},
		{Key: "104", Numerator: 50, Denominator: 1000},
		{Key: "105", Numerator: 12, Denominator: 150},
	}
	enc := json.NewEncoder(os.Stdout)
	enc.Encode(struct {
		Ratio string         `json:"ratio"`
		Items []counter.Item `json:"items"`
	}{"ctr", counter.Rank(items, 100, 3)})
	// Output:
	// {"ratio":"ctr","items":[{"key":"103","numerator":60,"denominator":200,"ratio":0.3},{"key":"102","numerator":30,"denominator":100,"ratio":0.3},{"key":"105","numerator":12,"denominator":150,"ratio":0.08}]}
}
