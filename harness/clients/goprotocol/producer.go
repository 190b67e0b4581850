package goprotocol

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// UnlimitedRate is the rate the harness gives a producer that sends as fast as it can.
const UnlimitedRate = 1e6

// Send is one record handed to a client and what its promise said: the history's row
// [seq, partition, send_ts_ms, ack_ts_ms, offset, error], nulls where no promise came. It holds no
// pointer (an error's text is kept beside, by sequence number), so the millions a flat-out producer
// records are memory the garbage collector never scans.
type Send struct {
	seq       int64
	partition int32
	sendTs    int64
	ackTs     int64 // 0: no promise yet
	offset    int64 // -1: none
}

const chunkBits = 16 // sends per chunk: 1<<16

// SendLog is a plain producer's history: every send in order, completed by its promise. Sends are
// added by one goroutine (the workload's loop) into fixed chunks, so a send's place never moves
// while a promise may still write to it.
type SendLog struct {
	mu     sync.Mutex
	chunks []*[1 << chunkBits]Send
	errs   map[int64]string
	Sent   atomic.Int64
	Acked  atomic.Int64
	bare   bool // only counted (Config.Bare)
}

// Add records a send about to be handed to the client (from the workload's one sending goroutine).
func (l *SendLog) Add(partition int32) *Send {
	seq := l.Sent.Load()
	l.Sent.Add(1)
	if l.bare {
		return nil
	}
	if seq>>chunkBits >= int64(len(l.chunks)) {
		l.mu.Lock()
		l.chunks = append(l.chunks, new([1 << chunkBits]Send))
		l.mu.Unlock()
	}
	s := &l.chunks[seq>>chunkBits][seq&(1<<chunkBits-1)]
	*s = Send{seq: seq, partition: partition, sendTs: NowMs(), offset: -1}
	return s
}

// Done completes a send with its promise: the offset it was written at, or the error ("" for none).
func (l *SendLog) Done(s *Send, offset int64, errText string) {
	if errText == "" {
		l.Acked.Add(1)
	}
	if l.bare {
		return
	}
	now := NowMs()
	l.mu.Lock()
	s.ackTs = now
	if errText == "" {
		s.offset = offset
	} else {
		if l.errs == nil {
			l.errs = map[int64]string{}
		}
		l.errs[s.seq] = errText
	}
	l.mu.Unlock()
}

// Write writes the history as JSON lines, one row per send.
func (l *SendLog) Write(path string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := int(l.Sent.Load())
	if l.bare {
		n = 0
	}
	return writeLines(path, n, func(i int) any {
		s := &l.chunks[i>>chunkBits][i&(1<<chunkBits-1)]
		row := []any{i, s.partition, s.sendTs, nil, nil, nil}
		if s.ackTs != 0 {
			row[3] = s.ackTs
		}
		if s.offset >= 0 {
			row[4] = s.offset
		}
		if e, ok := l.errs[s.seq]; ok {
			row[5] = e
		}
		return row
	})
}

func writeLines(path string, n int, row func(int) any) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<16)
	for i := 0; i < n; i++ {
		b, err := json.Marshal(row(i))
		if err != nil {
			return err
		}
		w.Write(append(b, '\n'))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// Value is the record value of a producer's seq-th send: its name and the number.
func Value(name string, seq int64) string { return name + "-" + strconv.FormatInt(seq, 10) }

// Paced sends at cfg.Rate records a second, round-robin over the partitions (the harness picks
// each record's partition, as every driver does), until stop; a producer that fell behind by over
// a second (paused by a fault) starts again from now rather than bursting.
func Paced(cfg Config, cmds *Commands, send func(seq int64, partition int32, done chan struct{})) {
	rate := cfg.Rate
	unlimited := rate >= UnlimitedRate
	t0 := time.Now()
	var base, seq int64
	for !cmds.Stopping() {
		due := int64(1000)
		if !unlimited {
			due = base + int64(time.Since(t0).Seconds()*rate) - seq
			if float64(due) > rate {
				t0, base, due = time.Now(), seq, 1
			}
		}
		if due <= 0 {
			wait := time.Duration(float64(seq+1-base)/rate*1e9) - time.Since(t0)
			time.Sleep(min(max(wait, 0), 100*time.Millisecond))
			continue
		}
		for i := int64(0); i < due && !cmds.Stopping(); i++ {
			send(seq, int32(seq%int64(cfg.Partitions)), nil)
			seq++
		}
	}
}

// Quiet sends one record per "send P" step to partition P and says "step" once its promise has run.
func Quiet(cmds *Commands, send func(seq int64, partition int32, done chan struct{})) {
	var seq int64
	for {
		select {
		case <-cmds.Stop:
			return
		case step := <-cmds.Steps:
			part, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(step, "send ")))
			if err != nil {
				fmt.Fprintln(os.Stderr, "not a step:", step)
				continue
			}
			done := make(chan struct{})
			send(seq, int32(part), done)
			seq++
			<-done
			Say(map[string]any{"t": "step"})
		}
	}
}

// RunProducer is the plain producer's workload, whatever its library: progress lines while it
// runs; after "go", sends at the config's rate (or one per step of a quiet producer); then flush,
// which returns once every promise has run, waited for at most closeTimeout (the promises it did
// not get are recorded without one); then the history and the done line.
func RunProducer(cfg Config, cmds *Commands, log *SendLog, send func(seq int64, partition int32, done chan struct{}),
	flush func(), closeTimeout time.Duration) error {
	log.bare = cfg.Bare && !cfg.Quiet
	progressDone := make(chan struct{})
	go Progress(&log.Sent, &log.Acked, progressDone)
	cmds.AwaitGo()
	t0 := time.Now()
	if cfg.Quiet {
		Quiet(cmds, send)
	} else {
		Paced(cfg, cmds, send)
	}
	flushed := make(chan struct{})
	go func() {
		flush()
		close(flushed)
	}()
	select {
	case <-flushed:
	case <-time.After(closeTimeout):
		fmt.Fprintln(os.Stderr, "the producer's promises did not all come before the close timeout; the rest are recorded without one")
	}
	sendMs := time.Since(t0).Milliseconds()
	close(progressDone)
	if err := log.Write(cfg.History); err != nil {
		return err
	}
	Say(map[string]any{"t": "done", "sent": log.Sent.Load(), "acked": log.Acked.Load(), "sending_ms": sendMs})
	return nil
}
