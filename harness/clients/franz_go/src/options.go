package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	gp "kchaos/goprotocol"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A client's properties arrive under Kafka's own names (the names the Java client and librdkafka
// share), as every driver's do; each maps to the franz-go option that does the same. A name with no
// such option is refused, naming the ones there are: the harness asks "check" before any container
// starts.
type option func(value string) (kgo.Opt, error)

func millis[O kgo.Opt](f func(time.Duration) O) option {
	return func(v string) (kgo.Opt, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q is not a number of milliseconds", v)
		}
		return f(time.Duration(n) * time.Millisecond), nil
	}
}

func count[O kgo.Opt](f func(int) O) option {
	return func(v string) (kgo.Opt, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q is not a count", v)
		}
		return f(n), nil
	}
}

func choice(choices map[string]kgo.Opt) option {
	return func(v string) (kgo.Opt, error) {
		if o, ok := choices[strings.ToLower(v)]; ok {
			return o, nil
		}
		return nil, fmt.Errorf("%q is not one of %s", v, strings.Join(gp.SortedKeys(choices), ", "))
	}
}

func flag(whenTrue, whenFalse kgo.Opt) option {
	return func(v string) (kgo.Opt, error) {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("%q is not true or false", v)
		}
		if b {
			return whenTrue, nil
		}
		return whenFalse, nil
	}
}

var options = map[string]option{
	"bootstrap.servers": func(v string) (kgo.Opt, error) { return kgo.SeedBrokers(strings.Split(v, ",")...), nil },
	"client.id":         func(v string) (kgo.Opt, error) { return kgo.ClientID(v), nil },
	"acks": choice(map[string]kgo.Opt{"all": kgo.RequiredAcks(kgo.AllISRAcks()), "-1": kgo.RequiredAcks(kgo.AllISRAcks()),
		"1": kgo.RequiredAcks(kgo.LeaderAck()), "0": kgo.RequiredAcks(kgo.NoAck())}),
	"enable.idempotence":                    flag(nil, kgo.DisableIdempotentWrite()),
	"retries":                               count(kgo.RecordRetries),
	"max.in.flight.requests.per.connection": count(kgo.MaxProduceRequestsInflightPerBroker),
	"linger.ms":                             millis(kgo.ProducerLinger),
	"delivery.timeout.ms":                   millis(kgo.RecordDeliveryTimeout),
	"request.timeout.ms":                    millis(kgo.ProduceRequestTimeout),
	"metadata.max.age.ms":                   millis(kgo.MetadataMaxAge),
	"compression.type": choice(map[string]kgo.Opt{
		"none": kgo.ProducerBatchCompression(kgo.NoCompression()), "gzip": kgo.ProducerBatchCompression(kgo.GzipCompression()),
		"snappy": kgo.ProducerBatchCompression(kgo.SnappyCompression()), "lz4": kgo.ProducerBatchCompression(kgo.Lz4Compression()),
		"zstd": kgo.ProducerBatchCompression(kgo.ZstdCompression())}),
	"isolation.level": choice(map[string]kgo.Opt{"read_committed": kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		"read_uncommitted": kgo.FetchIsolationLevel(kgo.ReadUncommitted())}),
	"fetch.max.wait.ms":       millis(kgo.FetchMaxWait),
	"group.id":                func(v string) (kgo.Opt, error) { return kgo.ConsumerGroup(v), nil },
	"auto.offset.reset":       choice(map[string]kgo.Opt{"earliest": kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), "latest": kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd())}),
	"enable.auto.commit":      flag(nil, kgo.DisableAutoCommit()),
	"auto.commit.interval.ms": millis(kgo.AutoCommitInterval),
	"session.timeout.ms":      millis(kgo.SessionTimeout),
	"heartbeat.interval.ms":   millis(kgo.HeartbeatInterval),
	"max.poll.interval.ms":    millis(kgo.RebalanceTimeout),
	"partition.assignment.strategy": choice(map[string]kgo.Opt{"range": kgo.Balancers(kgo.RangeBalancer()),
		"roundrobin": kgo.Balancers(kgo.RoundRobinBalancer()), "cooperative-sticky": kgo.Balancers(kgo.CooperativeStickyBalancer())}),
	// consumer: KIP-848, the broker's coordinator assigns (kgo.ServerSideBalancer; franz-go needs the
	// range or sticky balancer for it, which the harness gives such a member)
	"group.protocol": choice(map[string]kgo.Opt{"classic": nil, "consumer": kgo.ServerSideBalancer()}),
}

// clientOptions turns a client's properties into franz-go options, or says which property and why not.
func clientOptions(props map[string]string) ([]kgo.Opt, error) {
	var opts []kgo.Opt
	for _, name := range gp.SortedKeys(props) {
		make, ok := options[name]
		if !ok {
			return nil, fmt.Errorf("%s: franz-go has no option for it (allowed: %s)", name, strings.Join(gp.SortedKeys(options), ", "))
		}
		o, err := make(props[name])
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		if o != nil {
			opts = append(opts, o)
		}
	}
	// franz-go also keeps a minimum age between metadata refreshes (5 s by default), which must not
	// exceed the maximum: lowered to at most a second.
	if v, ok := props["metadata.max.age.ms"]; ok {
		ms, _ := strconv.ParseInt(v, 10, 64)
		opts = append(opts, kgo.MetadataMinAge(min(time.Duration(ms)*time.Millisecond, time.Second)))
	}
	return opts, nil
}

// checkProperties refuses a config whose properties franz-go cannot take, before any container starts.
func checkProperties(path string) error {
	cfg, err := gp.Decode[gp.Config](path)
	if err != nil {
		return err
	}
	_, err = clientOptions(cfg.Properties)
	return err
}
