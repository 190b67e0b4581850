package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const unlimitedRate = 1e6

// send is one record handed to the client and what its promise said: the history's row
// [seq, partition, send_ts_ms, ack_ts_ms, offset, error], nulls where no promise came.
type send struct {
	partition int32
	sendTs    int64
	ackTs     int64 // 0: no promise yet
	offset    int64 // -1: none
	err       string
}

type producer struct {
	cfg    Config
	cl     *kgo.Client
	mu     sync.Mutex
	sends  []*send
	sent   atomic.Int64
	acked  atomic.Int64
	cmds   *Commands
	sendMs int64
}

func runProducer(path string) error {
	cfg, err := decode[Config](path)
	if err != nil {
		return err
	}
	opts, err := clientOptions(cfg.Properties)
	if err != nil {
		return err
	}
	// The harness picks each record's partition: round-robin over the partitions, as every driver does.
	opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.WithLogger(stderrLogger()))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	p := &producer{cfg: cfg, cl: cl, cmds: readCommands()}
	done := make(chan struct{})
	go progress(&p.sent, &p.acked, done)
	// Metadata and a connection before the workload, so that the first send does not wait for them.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err = cl.Ping(ctx)
	cancel()
	if err != nil {
		return fmt.Errorf("no broker answered: %w", err)
	}
	p.cmds.awaitGo()
	t0 := time.Now()
	if cfg.Quiet {
		p.quiet()
	} else {
		p.paced()
	}
	// Every promise has run: the delivery timeout bounds each record.
	if err := cl.Flush(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "flush:", err)
	}
	p.sendMs = time.Since(t0).Milliseconds()
	close(done)
	cl.Close()
	if err := p.writeHistory(); err != nil {
		return err
	}
	say(map[string]any{"t": "done", "sent": p.sent.Load(), "acked": p.acked.Load(), "sending_ms": p.sendMs})
	return nil
}

func (p *producer) paced() {
	rate := p.cfg.Rate
	unlimited := rate >= unlimitedRate
	t0 := time.Now()
	var base, seq int64
	for !p.cmds.stopping() {
		due := int64(1000)
		if !unlimited {
			due = base + int64(time.Since(t0).Seconds()*rate) - seq
			if float64(due) > rate { // fell behind by over a second (paused by a fault): do not burst
				t0, base, due = time.Now(), seq, 1
			}
		}
		if due <= 0 {
			wait := time.Duration(float64(seq+1-base)/rate*1e9) - time.Since(t0)
			time.Sleep(min(max(wait, 0), 100*time.Millisecond))
			continue
		}
		for i := int64(0); i < due && !p.cmds.stopping(); i++ {
			p.send(seq, int32(seq%int64(p.cfg.Partitions)), nil)
			seq++
		}
	}
}

func (p *producer) quiet() {
	var seq int64
	for {
		select {
		case <-p.cmds.Stop:
			return
		case step := <-p.cmds.Steps:
			part, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(step, "send ")))
			if err != nil {
				fmt.Fprintln(os.Stderr, "not a step:", step)
				continue
			}
			done := make(chan struct{})
			p.send(seq, int32(part), done)
			seq++
			<-done
			say(map[string]any{"t": "step"})
		}
	}
}

func (p *producer) send(seq int64, partition int32, done chan struct{}) {
	s := &send{partition: partition, sendTs: nowMs(), offset: -1}
	p.mu.Lock()
	p.sends = append(p.sends, s)
	p.mu.Unlock()
	p.sent.Add(1)
	rec := &kgo.Record{Topic: p.cfg.Topic, Partition: partition, Value: []byte(p.cfg.Name + "-" + strconv.FormatInt(seq, 10))}
	p.cl.Produce(context.Background(), rec, func(r *kgo.Record, err error) {
		p.mu.Lock()
		s.ackTs = nowMs()
		if err == nil {
			s.offset = r.Offset
		} else {
			s.err = errorText(err)
		}
		p.mu.Unlock()
		if err == nil {
			p.acked.Add(1)
		}
		if done != nil {
			close(done)
		}
	})
}

func (p *producer) writeHistory() error {
	f, err := os.Create(p.cfg.History)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<16)
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, s := range p.sends {
		row := []any{i, s.partition, s.sendTs, nil, nil, nil}
		if s.ackTs != 0 {
			row[3] = s.ackTs
		}
		if s.offset >= 0 {
			row[4] = s.offset
		}
		if s.err != "" {
			row[5] = s.err
		}
		b, _ := json.Marshal(row)
		w.Write(b)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}
