package main

// Two toxics that read Kafka's wire protocol on a link, so that a fault can lose the answers to one
// request type: the request reaches the broker and is handled, its answer never comes back, and the
// connection closes, as a network that lost an answer leaves it (the asking side sees its
// connection go and asks again).
//
// Every Kafka frame is a 4-byte big-endian size and then a header: a request's api key, api
// version and correlation id; a response's correlation id. kafka_requests sits on a link's
// upstream (what the connecting side sends) and, while armed with an api key, marks the
// correlation ids of that request type; kafka_answers sits on its downstream, drops the answer to a
// marked request and closes the connection.
//
// Both are on a link before its first byte: a reader that starts mid-stream cannot find the frames.
// Toxiproxy accepts one connection at a time per proxy and starts its upstream link, then its
// downstream link, making each toxic's per-connection state as it starts it
// (StatefulToxic.NewState). The upstream state queues itself under the pair's name and the
// downstream state takes it, so both halves of one connection share its marks.

import (
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

const (
	requestHeader = 12 // size, api key, api version, correlation id
	answerHeader  = 8  // size, correlation id
	unarmed       = -1
)

// conn is one connection's marks: the correlation ids whose answers are to be lost.
type conn struct {
	mu     sync.Mutex
	marked map[int32]struct{}
}

func (c *conn) mark(id int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.marked[id] = struct{}{}
}

// take says whether the answer id is to be lost, and forgets the mark.
func (c *conn) take(id int32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.marked[id]
	delete(c.marked, id)
	return ok
}

// pairing joins the two halves of each connection of one proxy; its tracker counts what was lost.
type pairing struct {
	mu      sync.Mutex
	waiting []*conn
	tracker *KafkaRequests
}

var pairs sync.Map // pair name -> *pairing

func pairFor(name string) *pairing {
	p, _ := pairs.LoadOrStore(name, &pairing{})
	return p.(*pairing)
}

func (p *pairing) started(t *KafkaRequests) *conn {
	c := &conn{marked: map[int32]struct{}{}}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tracker = t
	p.waiting = append(p.waiting, c)
	return c
}

// joined is the connection whose upstream started last; a downstream with none gets a connection
// of its own, which nothing marks.
func (p *pairing) joined() *conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.waiting) == 0 {
		return &conn{marked: map[int32]struct{}{}}
	}
	c := p.waiting[0]
	p.waiting = p.waiting[1:]
	return c
}

func (p *pairing) lost() {
	p.mu.Lock()
	t := p.tracker
	p.mu.Unlock()
	if t != nil {
		atomic.AddInt64(&t.Lost, 1)
	}
}

// frames follows the frame boundaries of one direction of a connection across its chunks.
type frames struct {
	header []byte // the header of the frame being read, as far as it has come
	rest   int64  // the bytes of the current frame past its header still to come
}

// between says whether the next byte begins a frame.
func (f *frames) between() bool {
	return f.rest == 0 && len(f.header) == 0
}

// next takes one step into data: bytes of the current frame's body, or of the next header. It
// returns how many bytes it consumed, and the header when that step completed one.
func (f *frames) next(data []byte, size int) (int, []byte) {
	if f.rest > 0 {
		n := int64(len(data))
		if n > f.rest {
			n = f.rest
		}
		f.rest -= n
		return int(n), nil
	}
	n := size - len(f.header)
	if n > len(data) {
		n = len(data)
	}
	f.header = append(f.header, data[:n]...)
	if len(f.header) < size {
		return n, nil
	}
	h := f.header
	f.header = nil
	f.rest = int64(int32(binary.BigEndian.Uint32(h[0:4]))) + 4 - int64(size)
	if f.rest < 0 {
		f.rest = 0
	}
	return n, h
}

// KafkaRequests marks the requests of api key APIKey (unarmed: -1) on the connections it sees.
type KafkaRequests struct {
	Pair   string `json:"pair"`
	APIKey int    `json:"api_key"`
	Marked int64  `json:"marked"` // requests marked so far (read only)
	Lost   int64  `json:"lost"`   // answers lost so far, on any connection of the pair (read only)
}

type requestState struct {
	c *conn
	f frames
}

func (t *KafkaRequests) NewState() interface{} {
	return &requestState{c: pairFor(t.Pair).started(t)}
}

func (t *KafkaRequests) Pipe(stub *toxics.ToxicStub) {
	s := stub.State.(*requestState)
	pump(stub, func(chunk *stream.StreamChunk) bool {
		t.read(s, chunk.Data)
		stub.Output <- chunk
		return true
	})
}

// pump is a toxic's loop: each chunk until the link ends, or is interrupted to change the chain,
// to each, which passes on what goes on and says whether the link goes on.
func pump(stub *toxics.ToxicStub, each func(*stream.StreamChunk) bool) {
	for {
		select {
		case <-stub.Interrupt:
			return
		case chunk := <-stub.Input:
			if chunk == nil {
				stub.Close()
				return
			}
			if !each(chunk) {
				return
			}
		}
	}
}

func (t *KafkaRequests) read(s *requestState, data []byte) {
	for len(data) > 0 {
		used, h := s.f.next(data, requestHeader)
		data = data[used:]
		if h != nil && t.APIKey != unarmed && int(int16(binary.BigEndian.Uint16(h[4:6]))) == t.APIKey {
			s.c.mark(int32(binary.BigEndian.Uint32(h[8:12])))
			atomic.AddInt64(&t.Marked, 1)
		}
	}
}

// KafkaAnswers loses the answers to the requests its pair's KafkaRequests marked.
type KafkaAnswers struct {
	Pair string `json:"pair"`
}

type answerState struct {
	c *conn
	p *pairing
	f frames
}

func (t *KafkaAnswers) NewState() interface{} {
	p := pairFor(t.Pair)
	return &answerState{c: p.joined(), p: p}
}

func (t *KafkaAnswers) Pipe(stub *toxics.ToxicStub) {
	s := stub.State.(*answerState)
	pump(stub, func(chunk *stream.StreamChunk) bool {
		out, lost := s.filter(chunk.Data)
		if len(out) > 0 {
			stub.Output <- &stream.StreamChunk{Data: out, Timestamp: chunk.Timestamp}
		}
		if lost {
			s.p.lost()
			stub.Close() // the connection goes, as it does when a network loses an answer
			drain(stub)
		}
		return !lost
	})
}

// drain takes what still comes from the toxic before this one, until the link's end reaches it, so
// that nothing before it waits on a stub that closed.
func drain(stub *toxics.ToxicStub) {
	for chunk := range stub.Input {
		if chunk == nil {
			return
		}
	}
}

// filter is what of data goes on, and whether an answer was lost in it (nothing of that answer,
// nor anything after it, goes on). A header split across chunks is held back until it is whole.
func (s *answerState) filter(data []byte) ([]byte, bool) {
	out := append([]byte(nil), s.f.header...) // a header held back from the chunk before
	start := 0                                // where in out the frame being read begins
	for len(data) > 0 {
		if s.f.between() {
			start = len(out)
		}
		used, h := s.f.next(data, answerHeader)
		out = append(out, data[:used]...)
		data = data[used:]
		if h != nil && s.c.take(int32(binary.BigEndian.Uint32(h[4:8]))) {
			return out[:start], true
		}
	}
	return out[:len(out)-len(s.f.header)], false
}

func init() {
	toxics.Register("kafka_requests", new(KafkaRequests))
	toxics.Register("kafka_answers", new(KafkaAnswers))
}
