// Package sandboxtest helps the sandbox's tests (agents/sandbox's and the e2e scripts'):
// listeners on loopback that tell whether a command reached them.
package sandboxtest

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"time"
)

// Loopback listens on a TCP and a UDP port of 127.0.0.1 and queues what reaches them,
// in order: a connection's first byte ("" for none), a datagram's content. Close ends
// it.
type Loopback struct {
	tcp   net.Listener
	udp   net.PacketConn
	conns chan string
	grams chan string
	done  chan struct{}
}

// Listen starts the listeners.
func Listen() (*Loopback, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	u, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		_ = l.Close()
		return nil, err
	}
	lb := &Loopback{tcp: l, udp: u, conns: make(chan string, 64), grams: make(chan string, 64), done: make(chan struct{}, 2)}
	go func() {
		defer func() { lb.done <- struct{}{} }()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			b := make([]byte, 1)
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, _ := c.Read(b)
			_ = c.Close()
			lb.conns <- string(b[:n])
		}
	}()
	go func() {
		defer func() { lb.done <- struct{}{} }()
		buf := make([]byte, 64)
		for {
			n, _, err := u.ReadFrom(buf)
			if err != nil {
				return
			}
			lb.grams <- strings.TrimSpace(string(buf[:n]))
		}
	}()
	return lb, nil
}

// Close stops the listeners and waits for their goroutines.
func (lb *Loopback) Close() {
	_ = lb.tcp.Close()
	_ = lb.udp.Close()
	<-lb.done
	<-lb.done
}

// Env is the listeners' ports as a command sees them: TCP_PORT and UDP_PORT.
func (lb *Loopback) Env() []string {
	return []string{
		"TCP_PORT=" + strconv.Itoa(lb.tcp.Addr().(*net.TCPAddr).Port),
		"UDP_PORT=" + strconv.Itoa(lb.udp.LocalAddr().(*net.UDPAddr).Port),
	}
}

// Reached reports whether something reached the network's listener ("tcp" or "udp")
// since the last call: it sends a sentinel itself, after the command ended, and what the
// command sent was queued before it.
func (lb *Loopback) Reached(network string) (bool, error) {
	addr, ch := lb.tcp.Addr().String(), lb.conns
	switch network {
	case "tcp":
	case "udp":
		addr, ch = lb.udp.LocalAddr().String(), lb.grams
	default:
		return false, errors.New("sandboxtest: the network is tcp or udp")
	}
	c, err := net.Dial(network, addr)
	if err != nil {
		return false, err
	}
	_, err = c.Write([]byte("S"))
	_ = c.Close()
	if err != nil {
		return false, err
	}
	got := false
	for m := range ch {
		if m == "S" {
			break
		}
		got = true
	}
	return got, nil
}
