// kchaos's driver for franz-go (github.com/twmb/franz-go): one process per client, speaking the
// process protocol of docs/drivers.md, as the Java driver does.
//
//	kchaos-franz-go ROLE CONFIG.json
//
// ROLE is producer, consumer, member (a consumer group's; its lines go to the file the config
// names, as librdkafka's and Java's members write them), txn-producer or copier. The process reads commands on stdin (go,
// stop, send P), writes JSON lines of what is happening on stdout and its history to the file the
// config names; franz-go's own log goes to stderr.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
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
}

var (
	outMu sync.Mutex
	out   = bufio.NewWriter(os.Stdout)
)

// say writes one JSON line on stdout; the harness reads them as they come.
func say(line map[string]any) {
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

// nowMs is the wall clock in milliseconds, as every history timestamp is.
func nowMs() int64 { return time.Now().UnixMilli() }

// Commands reads stdin: "go" closes Go, "stop" (or the end of stdin: the harness is gone) closes
// Stop, any other line is queued on Steps.
type Commands struct {
	Go    chan struct{}
	Stop  chan struct{}
	Steps chan string
}

func readCommands() *Commands {
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

// awaitGo says ready, then waits for "go" (or "stop"): a run starts its clients before its workload.
func (c *Commands) awaitGo() {
	say(map[string]any{"t": "ready"})
	<-c.Go
}

func (c *Commands) stopping() bool {
	select {
	case <-c.Stop:
		return true
	default:
		return false
	}
}

// progress writes a progress line every 20 ms while the counts move: acked triggers count them live.
func progress(sent, acked *atomic.Int64, done <-chan struct{}) {
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
				say(map[string]any{"t": "progress", "sent": s, "acked": a})
				lastSent, lastAcked = s, a
			}
		}
	}
}

func decode[T any](path string) (T, error) {
	var v T
	b, err := os.ReadFile(path)
	if err != nil {
		return v, err
	}
	return v, json.Unmarshal(b, &v)
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: kchaos-franz-go producer|consumer|member|txn-producer|copier|check CONFIG.json")
		os.Exit(2)
	}
	role, path := os.Args[1], os.Args[2]
	var err error
	switch role {
	case "producer":
		err = runProducer(path)
	case "consumer":
		err = runConsumer(path)
	case "member":
		err = runMember(path)
	case "txn-producer":
		err = runTxnProducer(path)
	case "copier":
		err = runCopier(path)
	case "check": // kchaos-franz-go check CONFIG.json: exit 2 with the option's words if a property is refused
		err = checkProperties(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	default:
		err = fmt.Errorf("unknown role %q (allowed: producer, consumer, member, txn-producer, copier, check)", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kchaos-franz-go:", err)
		os.Exit(1)
	}
}

// stderrLogger is franz-go's own log on stderr, which the harness writes to the run's logs.
func stderrLogger() kgo.Logger {
	level := kgo.LogLevelInfo
	if os.Getenv("KCHAOS_FRANZ_GO_DEBUG") != "" {
		level = kgo.LogLevelDebug
	}
	return kgo.BasicLogger(os.Stderr, level, nil)
}
