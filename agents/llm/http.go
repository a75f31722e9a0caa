package llm

import (
	"net/http"
	"time"
)

// HTTPClient returns the HTTP client the network providers share: it keeps up to maxConns
// connections to an endpoint open and reuses them, and never opens more; a call over the
// cap waits for a free connection, the oldest first, under its context. Many agents at
// once then cannot run the process out of file descriptors.
func HTTPClient(maxConns int) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxConnsPerHost = maxConns
	t.MaxIdleConnsPerHost = maxConns
	t.MaxIdleConns = maxConns
	t.IdleConnTimeout = 90 * time.Second
	return &http.Client{Transport: t}
}

// MaxConns is the cap on model calls in flight, and on connections to one endpoint, for
// this process: an eighth of its limit on open files (which Go raises to the hard limit
// at start), between 16 and 256 — 128 under `ulimit -n 1024`. More agents than that wait
// for a call (Limit), cheaply: a waiting agent holds no request, no connection and no
// buffers, where a call in flight costs some 100 KB.
func MaxConns() int {
	return min(max(openFileLimit()/8, 16), 256)
}
