package main

import (
	"fmt"
	"time"

	gp "kchaos/goprotocol"

	"github.com/IBM/sarama"
)

// pending is what a message carries to its promise: the history's row and, for a quiet producer's
// step, the channel its promise closes.
type pending struct {
	send *gp.Send
	done chan struct{}
}

// newClient connects to the cluster and reads the topic's metadata before the workload, so that the
// first send does not wait for them.
func newClient(props map[string]string, topic string) (sarama.Client, error) {
	c, err := saramaConfig(props)
	if err != nil {
		return nil, err
	}
	var cl sarama.Client
	deadline := time.Now().Add(30 * time.Second)
	for {
		if cl, err = sarama.NewClient(brokersOf(props), c); err == nil {
			if topic == "" {
				return cl, nil
			}
			if err = cl.RefreshMetadata(topic); err == nil {
				return cl, nil
			}
			cl.Close()
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no broker answered: %w", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func runProducer(path string) error {
	cfg, err := gp.Decode[gp.Config](path)
	if err != nil {
		return err
	}
	cl, err := newClient(cfg.Properties, cfg.Topic)
	if err != nil {
		return err
	}
	p, err := sarama.NewAsyncProducerFromClient(cl)
	if err != nil {
		return err
	}
	log, cmds := &gp.SendLog{}, gp.ReadCommands()
	promised := make(chan struct{})
	go func() {
		eachPromise(p, func(m *sarama.ProducerMessage, offset int64, errText string) {
			w := m.Metadata.(pending)
			log.Done(w.send, offset, errText)
			if w.done != nil {
				close(w.done)
			}
		})
		close(promised)
	}()
	send := func(seq int64, partition int32, sent chan struct{}) {
		p.Input() <- &sarama.ProducerMessage{Topic: cfg.Topic, Partition: partition,
			Value: sarama.StringEncoder(gp.Value(cfg.Name, seq)), Metadata: pending{log.Add(partition), sent}}
	}
	// Close flushes what is buffered; the promises end when every retry has.
	return gp.RunProducer(cfg, cmds, log, send, func() {
		p.AsyncClose()
		<-promised
	}, closeTimeout(cfg.Properties))
}

// eachPromise calls done with each message's outcome as sarama returns it (its offset, or the
// error's text), until the producer is closed.
func eachPromise(p sarama.AsyncProducer, done func(m *sarama.ProducerMessage, offset int64, errText string)) {
	successes, errs := p.Successes(), p.Errors()
	for successes != nil || errs != nil {
		select {
		case m, ok := <-successes:
			if ok {
				done(m, m.Offset, "")
			} else {
				successes = nil
			}
		case e, ok := <-errs:
			if ok {
				done(e.Msg, -1, errorText(e.Err))
			} else {
				errs = nil
			}
		}
	}
}
