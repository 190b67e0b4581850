// Package goprotocol is the harness's side of the process protocol (docs/drivers.md) for driver
// programs written in Go: the configs the harness writes, the JSON lines a client says on stdout,
// the commands it reads on stdin, and the histories it writes. Each Go client library's driver
// (franz-go, sarama) is a program of its own that imports this package and adds only what its
// library does differently.
package goprotocol

import (
	"bufio"
	"encoding/json"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Config is what the harness writes for a client: the process protocol's fields.
type Config struct {
	Name       string            `json:"name"`
	Topic      string            `json:"topic"`
	Partitions int32             `json:"partitions"`
	History    string            `json:"history"`
	Properties map[string]string `json:"properties"`
	Rate       float64           `json:"rate"`
	Quiet      bool              `json:"quiet"`
	// Bare: a plain producer counts its promises and records no send, a consumer counts what it read,
	// the library driven flat out with the same settings and nothing of kchaos's recording
	// (benchmarks/producer.py's and consumer.py's reference)
	Bare bool `json:"bare"`
}

// TxnConfig is what the harness writes for a transactional producer or the copier.
type TxnConfig struct {
	Config
	TxnRecords         int               `json:"txn_records"`
	AbortRatio         float64           `json:"abort_ratio"`
	Seed               string            `json:"seed"`
	TransactionTimeout int64             `json:"transaction_timeout_ms"`
	ConsumerProperties map[string]string `json:"consumer_properties"`
	Group              string            `json:"group"`
	InputTopic         string            `json:"input_topic"`
	OutputTopic        string            `json:"output_topic"`
	OutputPartitions   int32             `json:"output_partitions"`
}

// MemberConfig is what harness/clients/groups.py writes for a group member, whatever its library.
type MemberConfig struct {
	Consumer     string            `json:"consumer"`
	Topic        string            `json:"topic"`
	Conf         map[string]string `json:"conf"`
	Commit       string            `json:"commit"` // sync | async | auto
	EveryRecords int               `json:"every_records"`
	EveryMs      int64             `json:"every_ms"`
	Out          string            `json:"out"`
}

var (
	outMu sync.Mutex
	out   = bufio.NewWriter(os.Stdout)
)

// Say writes one JSON line on stdout; the harness reads them as they come.
func Say(line map[string]any) {
	b, err := json.Marshal(line)
	if err != nil {
		panic(err)
	}
	outMu.Lock()
	defer outMu.Unlock()
	out.Write(b)
	out.WriteByte('\n')
	out.Flush()
}

// NowMs is the wall clock in milliseconds, as every history timestamp is.
func NowMs() int64 { return time.Now().UnixMilli() }

// Decode reads a config the harness wrote.
func Decode[T any](path string) (T, error) {
	var v T
	b, err := os.ReadFile(path)
	if err != nil {
		return v, err
	}
	return v, json.Unmarshal(b, &v)
}

// Commands reads stdin: "go" closes Go, "stop" (or the end of stdin: the harness is gone) closes
// Stop, any other line is queued on Steps.
type Commands struct {
	Go    chan struct{}
	Stop  chan struct{}
	Steps chan string
}

// ReadCommands starts reading stdin.
func ReadCommands() *Commands {
	c := &Commands{Go: make(chan struct{}), Stop: make(chan struct{}), Steps: make(chan string, 1024)}
	go func() {
		var once sync.Once
		started := func() { once.Do(func() { close(c.Go) }) }
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			line := in.Text()
			if line == "stop" {
				break
			}
			if line == "go" {
				started()
				continue
			}
			c.Steps <- line
		}
		close(c.Stop)
		started()
	}()
	return c
}

// AwaitGo says ready, then waits for "go" (or "stop"): a run starts its clients before its workload.
func (c *Commands) AwaitGo() {
	Say(map[string]any{"t": "ready"})
	<-c.Go
}

// Stopping says whether "stop" came.
func (c *Commands) Stopping() bool {
	select {
	case <-c.Stop:
		return true
	default:
		return false
	}
}

// Progress writes a progress line every 20 ms while the counts move (acked triggers count them
// live), until done closes.
func Progress(sent, acked *atomic.Int64, done <-chan struct{}) {
	var lastSent, lastAcked int64 = -1, -1
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			s, a := sent.Load(), acked.Load()
			if s != lastSent || a != lastAcked {
				Say(map[string]any{"t": "progress", "sent": s, "acked": a})
				lastSent, lastAcked = s, a
			}
		}
	}
}
