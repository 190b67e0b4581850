package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	gp "kchaos/goprotocol"

	"github.com/IBM/sarama"
)

// A client's properties arrive under Kafka's own names (the names the Java client and librdkafka
// share), as every driver's do; each maps to the sarama setting that does the same. A name with no
// such setting is refused, naming the ones there are: the harness asks "check" before any
// container starts. Names under "kchaos." are the driver's own, not sarama's.
type setting func(c *sarama.Config, value string) error

func millis(set func(c *sarama.Config, d time.Duration)) setting {
	return func(c *sarama.Config, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("%q is not a number of milliseconds", v)
		}
		set(c, time.Duration(n)*time.Millisecond)
		return nil
	}
}

func count(set func(c *sarama.Config, n int)) setting {
	return func(c *sarama.Config, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("%q is not a count", v)
		}
		set(c, int(min(n, 1<<31-1)))
		return nil
	}
}

func flag(set func(c *sarama.Config, b bool)) setting {
	return func(c *sarama.Config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%q is not true or false", v)
		}
		set(c, b)
		return nil
	}
}

func choice[T any](choices map[string]T, set func(c *sarama.Config, t T)) setting {
	return func(c *sarama.Config, v string) error {
		t, ok := choices[strings.ToLower(v)]
		if !ok {
			return fmt.Errorf("%q is not one of %s", v, strings.Join(gp.SortedKeys(choices), ", "))
		}
		set(c, t)
		return nil
	}
}

func ignored(*sarama.Config, string) error { return nil }

var settings = map[string]setting{
	"bootstrap.servers": ignored, // the brokers: brokersOf
	"group.id":          ignored, // the group: a member's and the copier's own
	"client.id":         func(c *sarama.Config, v string) error { c.ClientID = v; return nil },
	"acks": choice(map[string]sarama.RequiredAcks{"all": sarama.WaitForAll, "-1": sarama.WaitForAll,
		"1": sarama.WaitForLocal, "0": sarama.NoResponse}, func(c *sarama.Config, a sarama.RequiredAcks) { c.Producer.RequiredAcks = a }),
	"enable.idempotence": flag(func(c *sarama.Config, b bool) { c.Producer.Idempotent = b }),
	// sarama keeps a slot per try for each partition (a slice of Retry.Max+1), so "unbounded" (Kafka's
	// 2147483647, kchaos's default) is taken as maxRetries: at the 100 ms backoff, longer than any run.
	"retries":                               count(func(c *sarama.Config, n int) { c.Producer.Retry.Max = min(n, maxRetries) }),
	"max.in.flight.requests.per.connection": count(func(c *sarama.Config, n int) { c.Net.MaxOpenRequests = n }),
	"linger.ms":                             millis(func(c *sarama.Config, d time.Duration) { c.Producer.Flush.Frequency = d }),
	// The client's wait for any answer, and the broker's for a produce request's acknowledgements.
	"request.timeout.ms":  millis(func(c *sarama.Config, d time.Duration) { c.Net.ReadTimeout, c.Producer.Timeout = d, d }),
	"metadata.max.age.ms": millis(func(c *sarama.Config, d time.Duration) { c.Metadata.RefreshFrequency = d }),
	"compression.type": choice(map[string]sarama.CompressionCodec{"none": sarama.CompressionNone,
		"gzip": sarama.CompressionGZIP, "snappy": sarama.CompressionSnappy, "lz4": sarama.CompressionLZ4,
		"zstd": sarama.CompressionZSTD}, func(c *sarama.Config, k sarama.CompressionCodec) { c.Producer.Compression = k }),
	"isolation.level": choice(map[string]sarama.IsolationLevel{"read_committed": sarama.ReadCommitted,
		"read_uncommitted": sarama.ReadUncommitted}, func(c *sarama.Config, l sarama.IsolationLevel) { c.Consumer.IsolationLevel = l }),
	"fetch.max.wait.ms": millis(func(c *sarama.Config, d time.Duration) { c.Consumer.MaxWaitTime = d }),
	"auto.offset.reset": choice(map[string]int64{"earliest": sarama.OffsetOldest, "latest": sarama.OffsetNewest},
		func(c *sarama.Config, o int64) { c.Consumer.Offsets.Initial = o }),
	"enable.auto.commit":      flag(func(c *sarama.Config, b bool) { c.Consumer.Offsets.AutoCommit.Enable = b }),
	"auto.commit.interval.ms": millis(func(c *sarama.Config, d time.Duration) { c.Consumer.Offsets.AutoCommit.Interval = d }),
	"session.timeout.ms":      millis(func(c *sarama.Config, d time.Duration) { c.Consumer.Group.Session.Timeout = d }),
	"heartbeat.interval.ms":   millis(func(c *sarama.Config, d time.Duration) { c.Consumer.Group.Heartbeat.Interval = d }),
	"max.poll.interval.ms":    millis(func(c *sarama.Config, d time.Duration) { c.Consumer.Group.Rebalance.Timeout = d }),
	"partition.assignment.strategy": choice(map[string]func() sarama.BalanceStrategy{
		"range": sarama.NewBalanceStrategyRange, "roundrobin": sarama.NewBalanceStrategyRoundRobin,
		"sticky": sarama.NewBalanceStrategySticky, "cooperative-sticky": sarama.NewBalanceStrategyCooperativeSticky},
		func(c *sarama.Config, s func() sarama.BalanceStrategy) {
			c.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{s()}
		}),
	"group.protocol":         choice(map[string]bool{"classic": true}, func(*sarama.Config, bool) {}),
	"transactional.id":       func(c *sarama.Config, v string) error { c.Producer.Transaction.ID = v; return nil },
	"transaction.timeout.ms": millis(func(c *sarama.Config, d time.Duration) { c.Producer.Transaction.Timeout = d }),
	"max.poll.records":       ignored, // the copier's batch: copier.go
	// How long the producer waits at the end of the workload for the promises still open; those
	// it did not get are recorded without one (sarama has no delivery timeout: a record is retried
	// Producer.Retry.Max times).
	"kchaos.close.timeout.ms": ignored,
	// The broker's Kafka version: the protocol versions sarama speaks (its own default is 2.8).
	"kchaos.kafka.version": func(c *sarama.Config, v string) error {
		kv, err := sarama.ParseKafkaVersion(v)
		if err != nil {
			return err
		}
		if !kv.IsAtLeast(sarama.MaxVersion) {
			c.Version = kv
		} else {
			c.Version = sarama.MaxVersion
		}
		return nil
	},
}

const maxRetries = 10000

// refused are Kafka's names sarama has no setting for that a user is likely to try, with why.
var refused = map[string]string{
	"delivery.timeout.ms": "sarama has no delivery timeout: a record is retried `retries` times (Producer.Retry.Max)",
}

// saramaConfig turns a client's properties into a sarama config, or says which property and why not.
func saramaConfig(props map[string]string) (*sarama.Config, error) {
	c := sarama.NewConfig()
	c.Version = sarama.V2_8_0_0
	c.ClientID = "kchaos-sarama"
	c.Producer.Return.Successes, c.Producer.Return.Errors, c.Consumer.Return.Errors = true, true, true
	c.Producer.Partitioner = sarama.NewManualPartitioner
	for _, name := range gp.SortedKeys(props) {
		if why, ok := refused[name]; ok {
			return nil, fmt.Errorf("%s: %s (allowed: %s)", name, why, strings.Join(gp.SortedKeys(settings), ", "))
		}
		set, ok := settings[name]
		if !ok {
			return nil, fmt.Errorf("%s: sarama has no setting for it (allowed: %s)", name, strings.Join(gp.SortedKeys(settings), ", "))
		}
		if err := set(c, props[name]); err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
	}
	if c.Producer.Idempotent { // sarama refuses an idempotent producer with more than one request in flight
		c.Net.MaxOpenRequests = 1
	}
	if c.Producer.Transaction.ID != "" { // a transactional producer is idempotent, acks=all, as Kafka's are
		c.Producer.Idempotent, c.Net.MaxOpenRequests, c.Producer.RequiredAcks = true, 1, sarama.WaitForAll
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("sarama refuses the combination: %v", err)
	}
	return c, nil
}

func brokersOf(props map[string]string) []string {
	return strings.Split(props["bootstrap.servers"], ",")
}

func closeTimeout(props map[string]string) time.Duration {
	ms, err := strconv.ParseInt(props["kchaos.close.timeout.ms"], 10, 64)
	if err != nil {
		return 30 * time.Second
	}
	return time.Duration(ms) * time.Millisecond
}

// checkProperties refuses a config whose properties sarama cannot take, before any container starts.
func checkProperties(path string) error {
	cfg, err := gp.Decode[gp.Config](path)
	if err != nil {
		return err
	}
	_, err = saramaConfig(cfg.Properties)
	return err
}
