package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	gp "kchaos/goprotocol"

	"github.com/IBM/sarama"
)

// member is a consumer-group member's process: sarama's ConsumerGroup with a handler that writes a
// JSON line per record returned and per assignment change, and commits as the group's spec says:
// "sync" marks each record and calls the session's Commit every every_records records or every_ms;
// "async" calls the same Commit without waiting for it (sarama has no asynchronous commit call:
// its offset manager is shared, so concurrent Commits race as a program's goroutines would);
// "auto" leaves it to sarama's auto-commit. sarama reports no commit's acknowledgement, so the
// member writes no commit lines: the harness takes the group's commits from the coordinator's own
// record (harness/clients/go_program.py, docs/drivers.md). SIGTERM is a clean leave, SIGUSR1 a
// freeze between a record and its commit, SIGKILL a crash.
type member struct {
	cfg         gp.MemberConfig
	out         *gp.MemberOut
	signals     *gp.Signals
	mu          sync.Mutex // the counts below, shared by the claims' goroutines
	seq         int64
	uncommitted int
	lastCommit  time.Time
	readers     *gp.Readers // the consumer column: a new name each time a partition comes back to it
}

func (m *member) Setup(s sarama.ConsumerGroupSession) error {
	g := int64(s.GenerationID())
	m.readers.Assigned(s.Claims()[m.cfg.Topic])
	m.out.Rebalance("assign", s.Claims()[m.cfg.Topic], g)
	return nil
}

// Cleanup runs when the session ends: what was marked is committed before the partitions go
// (sarama's own flush at release runs only with auto-commit).
func (m *member) Cleanup(s sarama.ConsumerGroupSession) error {
	if m.cfg.Commit != "auto" {
		s.Commit()
	}
	m.out.Rebalance("revoke", s.Claims()[m.cfg.Topic], int64(s.GenerationID()))
	return nil
}

func (m *member) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-s.Context().Done():
			return nil
		case <-tick.C: // every_ms passes with no record too
			m.maybeCommit(s)
		case msg, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			m.record(s, msg, claim.HighWaterMarkOffset())
			m.signals.FreezeIfAsked() // client_pause: the record processed and not yet committed
			m.maybeCommit(s)          // after a freeze: the zombie's commit, sent with what it last knew
		}
	}
}

func (m *member) record(s sarama.ConsumerGroupSession, msg *sarama.ConsumerMessage, hw int64) {
	ts := gp.NowMs()
	m.mu.Lock()
	seq, reader := m.seq, m.readers.Returned(msg.Partition)
	m.seq++
	m.uncommitted++
	m.mu.Unlock()
	m.out.Read(m.cfg, reader, seq, msg.Topic, msg.Partition, msg.Offset, string(msg.Value), ts, highWatermark(hw),
		int64(s.GenerationID()))
	s.MarkMessage(msg, "")
}

func (m *member) maybeCommit(s sarama.ConsumerGroupSession) {
	if m.cfg.Commit == "auto" {
		return
	}
	m.mu.Lock()
	due := m.uncommitted > 0 && (m.uncommitted >= m.cfg.EveryRecords ||
		time.Since(m.lastCommit) >= time.Duration(m.cfg.EveryMs)*time.Millisecond)
	if due {
		m.uncommitted, m.lastCommit = 0, time.Now()
	}
	m.mu.Unlock()
	switch {
	case !due:
	case m.cfg.Commit == "sync":
		s.Commit()
	default:
		go s.Commit()
	}
}

func runMember(path string) error {
	cfg, err := gp.Decode[gp.MemberConfig](path)
	if err != nil {
		return err
	}
	out, err := gp.OpenMemberOut(cfg.Out)
	if err != nil {
		return err
	}
	defer out.Close()
	cl, err := newClient(cfg.Conf, cfg.Topic)
	if err != nil {
		return err
	}
	group, err := sarama.NewConsumerGroupFromClient(cfg.Conf["group.id"], cl)
	if err != nil {
		return err
	}
	go func() { // commit and fetch errors: sarama's words on stderr, in the run's client log
		for err := range group.Errors() {
			fmt.Fprintln(os.Stderr, "group:", err)
		}
	}()
	m := &member{cfg: cfg, out: out, lastCommit: time.Now(), readers: gp.NewReaders(cfg.Consumer)}
	m.signals = gp.WatchSignals()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for !m.signals.Stopping() {
			time.Sleep(50 * time.Millisecond)
		}
		cancel()
	}()
	out.Started()
	for ctx.Err() == nil { // a session ends at each rebalance; the next begins here
		if err := group.Consume(ctx, []string{cfg.Topic}, m); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
			fmt.Fprintln(os.Stderr, "consume:", err)
			time.Sleep(100 * time.Millisecond)
		}
	}
	return group.Close() // a clean leave
}
