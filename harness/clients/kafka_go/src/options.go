package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	gp "kchaos/goprotocol"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
)

// options is what a kafka-go client is made with: kafka-go's Writer, Reader and ConsumerGroup take
// these fields.
type options struct {
	brokers      []string
	clientID     string
	acks         kafka.RequiredAcks
	maxAttempts  int
	batchTimeout time.Duration
	timeout      time.Duration
	metadataTTL  time.Duration
	compression  kafka.Compression
	isolation    kafka.IsolationLevel
	maxWait      time.Duration
	group        string
	startOffset  int64
	session      time.Duration
	heartbeat    time.Duration
	rebalance    time.Duration
	balancers    []kafka.GroupBalancer
	closeTimeout time.Duration
}

// A client's properties arrive under Kafka's own names, as every driver's do; each maps to the
// kafka-go field that does the same. A name with no such field is refused, naming the ones there
// are: the harness asks "check" before any container starts. Names under "kchaos." are the
// driver's own.
type setting func(o *options, value string) error

func millis(set func(o *options, d time.Duration)) setting {
	return func(o *options, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("%q is not a number of milliseconds", v)
		}
		set(o, time.Duration(n)*time.Millisecond)
		return nil
	}
}

func choice[T any](choices map[string]T, set func(o *options, t T)) setting {
	return func(o *options, v string) error {
		t, ok := choices[strings.ToLower(v)]
		if !ok {
			return fmt.Errorf("%q is not one of %s", v, strings.Join(gp.SortedKeys(choices), ", "))
		}
		set(o, t)
		return nil
	}
}

// only is a property kafka-go has no setting for but whose one value is what kafka-go does.
func only(value, why string) setting {
	return func(_ *options, v string) error {
		if strings.ToLower(v) != value {
			return fmt.Errorf("%q: %s (allowed: %s)", v, why, value)
		}
		return nil
	}
}

var settings = map[string]setting{
	"bootstrap.servers": func(o *options, v string) error { o.brokers = strings.Split(v, ","); return nil },
	"client.id":         func(o *options, v string) error { o.clientID = v; return nil },
	"group.id":          func(o *options, v string) error { o.group = v; return nil },
	"acks": choice(map[string]kafka.RequiredAcks{"all": kafka.RequireAll, "-1": kafka.RequireAll,
		"1": kafka.RequireOne, "0": kafka.RequireNone}, func(o *options, a kafka.RequiredAcks) { o.acks = a }),
	"enable.idempotence": only("false", "kafka-go has no idempotent producer"),
	"retries": func(o *options, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("%q is not a count", v)
		}
		o.maxAttempts = int(min(n+1, 1<<31-1)) // kafka-go counts the first try
		return nil
	},
	"linger.ms":           millis(func(o *options, d time.Duration) { o.batchTimeout = d }),
	"request.timeout.ms":  millis(func(o *options, d time.Duration) { o.timeout = d }),
	"metadata.max.age.ms": millis(func(o *options, d time.Duration) { o.metadataTTL = d }),
	"compression.type": choice(map[string]kafka.Compression{"none": 0, "gzip": compress.Gzip,
		"snappy": compress.Snappy, "lz4": compress.Lz4, "zstd": compress.Zstd}, func(o *options, c kafka.Compression) { o.compression = c }),
	"isolation.level": choice(map[string]kafka.IsolationLevel{"read_committed": kafka.ReadCommitted,
		"read_uncommitted": kafka.ReadUncommitted}, func(o *options, l kafka.IsolationLevel) { o.isolation = l }),
	"fetch.max.wait.ms": millis(func(o *options, d time.Duration) { o.maxWait = d }),
	"auto.offset.reset": choice(map[string]int64{"earliest": kafka.FirstOffset, "latest": kafka.LastOffset},
		func(o *options, s int64) { o.startOffset = s }),
	"enable.auto.commit":      only("false", "kafka-go's ConsumerGroup has no auto-commit"),
	"auto.commit.interval.ms": func(*options, string) error { return nil }, // no auto-commit: nothing to time
	"session.timeout.ms":      millis(func(o *options, d time.Duration) { o.session = d }),
	"heartbeat.interval.ms":   millis(func(o *options, d time.Duration) { o.heartbeat = d }),
	"max.poll.interval.ms":    millis(func(o *options, d time.Duration) { o.rebalance = d }),
	"partition.assignment.strategy": choice(map[string]kafka.GroupBalancer{"range": kafka.RangeGroupBalancer{},
		"roundrobin": kafka.RoundRobinGroupBalancer{}}, func(o *options, b kafka.GroupBalancer) { o.balancers = []kafka.GroupBalancer{b} }),
	"group.protocol": only("classic", "kafka-go's groups run the classic protocol"),
	// How long the producer waits at the end of the workload for the promises still open.
	"kchaos.close.timeout.ms": millis(func(o *options, d time.Duration) { o.closeTimeout = d }),
}

// refused are Kafka's names kafka-go has no setting for that a user is likely to try, with why.
var refused = map[string]string{
	"delivery.timeout.ms":                   "kafka-go has no delivery timeout: a record is tried `retries` + 1 times (Writer.MaxAttempts)",
	"max.in.flight.requests.per.connection": "kafka-go writes one batch at a time to each partition",
}

// optionsOf turns a client's properties into kafka-go's fields, or says which property and why not.
func optionsOf(props map[string]string) (*options, error) {
	o := &options{clientID: "kchaos-kafka-go", acks: kafka.RequireAll, maxAttempts: 10, timeout: 10 * time.Second,
		metadataTTL: 6 * time.Second, maxWait: 500 * time.Millisecond, startOffset: kafka.FirstOffset,
		session: 10 * time.Second, heartbeat: 3 * time.Second, rebalance: 30 * time.Second, closeTimeout: 30 * time.Second}
	for _, name := range gp.SortedKeys(props) {
		if why, ok := refused[name]; ok {
			return nil, fmt.Errorf("%s: %s (allowed: %s)", name, why, strings.Join(gp.SortedKeys(settings), ", "))
		}
		set, ok := settings[name]
		if !ok {
			return nil, fmt.Errorf("%s: kafka-go has no setting for it (allowed: %s)", name, strings.Join(gp.SortedKeys(settings), ", "))
		}
		if err := set(o, props[name]); err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
	}
	return o, nil
}

func (o *options) transport() *kafka.Transport {
	return &kafka.Transport{ClientID: o.clientID, MetadataTTL: o.metadataTTL, DialTimeout: o.timeout}
}

// checkProperties refuses a config whose properties kafka-go cannot take, before any container starts.
func checkProperties(path string) error {
	cfg, err := gp.Decode[gp.Config](path)
	if err != nil {
		return err
	}
	_, err = optionsOf(cfg.Properties)
	return err
}
