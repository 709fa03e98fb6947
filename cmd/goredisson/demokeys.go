package main

import (
	"strconv"
	"time"
)

// demoKeys names the demo's Redis keys for one product.
type demoKeys struct {
	product   string
	lock      string // the purchase lock: lock:stock:P
	stock     string // units left
	orders    string // set of recorded order ids
	releaseAt string // unix ns of the last holder's last write, to measure handoffs
	runs      string // hash: report period -> runs
	fence     string // the largest fencing token a stock write carried
}

func newDemoKeys(product string) demoKeys {
	return demoKeys{
		product:   product,
		lock:      "lock:stock:" + product,
		stock:     "demo:stock:" + product,
		orders:    "demo:orders:" + product,
		releaseAt: "demo:released-at:" + product,
		runs:      "demo:report-runs:" + product,
		fence:     "demo:fence:" + product,
	}
}

// data returns the keys the demo writes and deletes at the start and the end (not the locks).
func (k demoKeys) data() []string {
	return []string{k.stock, k.orders, k.releaseAt, k.runs, k.fence}
}

// reportLock is the lock of the report of one period: one lock per period, as a nightly job
// would lock "report:2024-06-01". Its lease is the period, so every process's tick of that
// period finds it held, and it frees itself.
func (k demoKeys) reportLock(period int64) string {
	return "lock:report:" + k.product + ":" + strconv.FormatInt(period, 10)
}

// periodOf returns the number of the period that contains t (periods of length p since the
// Unix epoch, the same in every process of the machine).
func periodOf(t time.Time, p time.Duration) int64 { return t.UnixNano() / int64(p) }

// periodStart returns the start of period n.
func periodStart(n int64, p time.Duration) time.Time { return time.Unix(0, n*int64(p)) }
