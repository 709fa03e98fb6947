// Package faultproxy is a TCP proxy on 127.0.0.1 for fault-injection tests: it forwards
// connections to one target and can delay traffic, stall it (blackhole), or cut
// connections, including right after a request was delivered so that its reply is lost.
package faultproxy

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy forwards every connection accepted on Addr to a target address. Its methods are
// safe for concurrent use.
type Proxy struct {
	// Addr is the proxy's listening address, 127.0.0.1:port.
	Addr   string
	target string
	ln     net.Listener

	mu        sync.Mutex
	delay     time.Duration
	jitter    func() time.Duration
	blackhole chan struct{} // closed when traffic may flow again; nil when it flows
	cutOn     []byte        // cut the connection whose next request contains this; nil: none
	conns     map[net.Conn]struct{}
	wg        sync.WaitGroup
	closed    bool
}

// Start listens on a free loopback port and forwards to target until Close.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: make(map[net.Conn]struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// SetDelay delays every chunk of data in either direction by d plus jitter() (jitter may
// be nil).
func (p *Proxy) SetDelay(d time.Duration, jitter func() time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay, p.jitter = d, jitter
}

// Blackhole stalls all traffic, in both directions, until Restore. Connections stay open.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.blackhole == nil {
		p.blackhole = make(chan struct{})
	}
}

// Restore ends a Blackhole and a pending CutAfterRequest.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.blackhole != nil {
		close(p.blackhole)
		p.blackhole = nil
	}
	p.cutOn = nil
}

// CutAfterRequest makes the proxy close the next connection whose client data contains
// match, right after forwarding that data and before any reply: the server executes the
// request and the client never learns its result. It applies once.
func (p *Proxy) CutAfterRequest(match string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutOn = []byte(match)
}

// CutAll closes every open connection; new ones are accepted.
func (p *Proxy) CutAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

// Close stops the proxy, closes every connection and waits for its goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	err := p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
	if p.blackhole != nil {
		close(p.blackhole)
		p.blackhole = nil
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		if !p.track(client, server) {
			return
		}
		p.wg.Add(2)
		cut := new(atomic.Bool)
		go p.pipe(client, server, true, cut)
		go p.pipe(server, client, false, cut)
	}
}

func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

// pipe copies src to dst chunk by chunk, applying the current faults. cut is shared by the
// two pipes of a connection: once a request matched CutAfterRequest it is set before the
// request is forwarded, and the reply pipe forwards nothing more, so that the reply is lost
// however the two goroutines are scheduled.
func (p *Proxy) pipe(src, dst net.Conn, request bool, cut *atomic.Bool) {
	defer p.wg.Done()
	defer func() {
		src.Close()
		dst.Close()
		p.mu.Lock()
		delete(p.conns, src)
		delete(p.conns, dst)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			hole, delay, jitter := p.blackhole, p.delay, p.jitter
			cutHere := request && p.cutOn != nil && bytes.Contains(buf[:n], p.cutOn)
			if cutHere {
				p.cutOn = nil
				cut.Store(true)
			}
			p.mu.Unlock()
			if hole != nil {
				<-hole
			}
			if jitter != nil {
				delay += jitter()
			}
			if delay > 0 {
				time.Sleep(delay)
			}
			if !request && cut.Load() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			if cutHere {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
