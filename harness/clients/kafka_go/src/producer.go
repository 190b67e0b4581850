package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	gp "kchaos/goprotocol"

	"github.com/segmentio/kafka-go"
)

// manual is the harness's choice of partition, which every driver's producer follows: the one the
// message names.
type manual struct{}

func (manual) Balance(msg kafka.Message, _ ...int) int { return msg.Partition }

// waitForTopic reads the topic's metadata before the workload, so that the first send does not wait for it.
func waitForTopic(o *options, topic string) error {
	cl := &kafka.Client{Addr: kafka.TCP(o.brokers...), Transport: o.transport()}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		meta, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
		cancel()
		if err == nil && len(meta.Topics) == 1 && meta.Topics[0].Error == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no broker answered for topic %s: %v", topic, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func runProducer(path string) error {
	cfg, err := gp.Decode[gp.Config](path)
	if err != nil {
		return err
	}
	o, err := optionsOf(cfg.Properties)
	if err != nil {
		return err
	}
	if err := waitForTopic(o, cfg.Topic); err != nil {
		return err
	}
	log, cmds := &gp.SendLog{}, gp.ReadCommands()
	var mu sync.Mutex
	waiting := map[string]pending{} // by value: kafka-go's completion gives back the messages
	// kafka-go's asynchronous Writer queues without bound; a send waits while maxPending records
	// have no completion yet, as other clients block on a full buffer (buffer.memory), so a producer
	// driven flat out measures what kafka-go delivers rather than what it queued.
	inflight := make(chan struct{}, maxPending)
	w := &kafka.Writer{Addr: kafka.TCP(o.brokers...), Topic: cfg.Topic, Balancer: manual{}, RequiredAcks: o.acks,
		MaxAttempts: o.maxAttempts, BatchTimeout: max(o.batchTimeout, time.Millisecond), ReadTimeout: o.timeout,
		WriteTimeout: o.timeout, Compression: o.compression, Transport: o.transport(), Async: true,
		ErrorLogger: logger("[kafka-go] "),
		Completion: func(messages []kafka.Message, err error) {
			for _, m := range messages {
				mu.Lock()
				p, ok := waiting[string(m.Value)]
				delete(waiting, string(m.Value))
				mu.Unlock()
				if !ok {
					continue
				}
				if err == nil {
					log.Done(p.send, m.Offset, "")
				} else {
					log.Done(p.send, -1, errorText(err))
				}
				if p.done != nil {
					close(p.done)
				}
				<-inflight
			}
		}}
	send := func(seq int64, partition int32, sent chan struct{}) {
		inflight <- struct{}{}
		value := gp.Value(cfg.Name, seq)
		mu.Lock()
		waiting[value] = pending{log.Add(partition), sent}
		mu.Unlock()
		if err := w.WriteMessages(context.Background(), kafka.Message{Partition: int(partition), Value: []byte(value)}); err != nil {
			fmt.Fprintln(os.Stderr, "write:", err) // asynchronous: only a closed writer fails here
		}
	}
	// Close flushes what is buffered and waits for every completion.
	return gp.RunProducer(cfg, cmds, log, send, func() { w.Close() }, o.closeTimeout)
}

// maxPending bounds the records handed to kafka-go without a completion yet.
const maxPending = 100000

// pending is what a send waits for: its history row and, for a quiet producer's step, the channel
// its completion closes.
type pending struct {
	send *gp.Send
	done chan struct{}
}
