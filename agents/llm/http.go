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

// MaxConns is the cap on connections to one endpoint for this process: half its limit on
// open files (which Go raises to the hard limit at start), between 16 and 1024.
func MaxConns() int {
	return min(max(openFileLimit()/2, 16), 1024)
}
