package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	gp "kchaos/goprotocol"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// member is the loop of a consumer-group member's process: poll, write a JSON line per record
// returned, per commit acknowledged or refused and per assignment change, and commit as the group's
// spec says. SIGTERM is a clean leave, SIGUSR1 a freeze between a batch and its commit, SIGKILL a crash.
type member struct {
	cfg         gp.MemberConfig
	cl          *kgo.Client
	out         *gp.MemberOut
	signals     *gp.Signals
	seq         int64
	generation  atomic.Int64
	readers     *gp.Readers // the consumer column: a new name each time a partition comes back to it
	uncommitted int
	lastCommit  time.Time
}

func (m *member) onAssigned(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
	g := m.generation.Add(1)
	m.readers.Assigned(assigned[m.cfg.Topic])
	m.out.Rebalance("assign", assigned[m.cfg.Topic], g)
}

func (m *member) onRevoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	if m.cfg.Commit != "auto" { // what was processed is committed before the partitions go
		m.commit(ctx, true)
	}
	m.out.Rebalance("revoke", revoked[m.cfg.Topic], m.generation.Load())
}

func (m *member) onLost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	m.out.Rebalance("lost", lost[m.cfg.Topic], m.generation.Load())
}

// acknowledged writes a commit line per partition the coordinator took, or a commit_failed line.
func (m *member) acknowledged(req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
	ts := gp.NowMs()
	if err != nil {
		m.out.CommitFailed(errorText(err), m.generation.Load(), ts)
		return
	}
	if req == nil || resp == nil {
		return // nothing new to commit
	}
	sent := map[string]map[int32]int64{}
	for _, t := range req.Topics {
		sent[t.Topic] = map[int32]int64{}
		for _, p := range t.Partitions {
			sent[t.Topic][p.Partition] = p.Offset
		}
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if e := kerr.ErrorForCode(p.ErrorCode); e != nil {
				m.out.CommitFailed(errorText(e), m.generation.Load(), ts)
				continue
			}
			m.out.Commit(t.Topic, p.Partition, sent[t.Topic][p.Partition], ts)
		}
	}
}

// commit commits what this member returned and has not committed, synchronously or not.
func (m *member) commit(ctx context.Context, sync bool) {
	offsets := m.cl.UncommittedOffsets()
	if len(offsets) == 0 {
		return
	}
	done := func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		m.acknowledged(req, resp, err)
	}
	if sync {
		m.cl.CommitOffsetsSync(ctx, offsets, done)
	} else {
		m.cl.CommitOffsets(ctx, offsets, done)
	}
	m.uncommitted, m.lastCommit = 0, time.Now()
}

func (m *member) maybeCommit() {
	if m.cfg.Commit == "auto" || m.uncommitted == 0 {
		return
	}
	if m.uncommitted < m.cfg.EveryRecords && time.Since(m.lastCommit) < time.Duration(m.cfg.EveryMs)*time.Millisecond {
		return
	}
	m.commit(context.Background(), m.cfg.Commit == "sync")
}

func (m *member) record(r *kgo.Record, hw any, ts int64) {
	m.out.Read(m.cfg, m.readers.Returned(r.Partition), m.seq, r.Topic, r.Partition, r.Offset, string(r.Value), ts, hw,
		m.generation.Load())
	m.seq++
}

func (m *member) run() {
	for !m.signals.Stopping() {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		fetches := m.cl.PollRecords(ctx, 100)
		cancel()
		ts := gp.NowMs()
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, kgo.ErrClientClosed) {
				fmt.Fprintf(os.Stderr, "fetch %s[%d]: %v\n", t, p, err)
			}
		})
		readCommitted := m.cfg.Conf["isolation.level"] == "read_committed"
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			hw := highWatermark(p.FetchPartition, readCommitted)
			for _, r := range p.Records {
				m.record(r, hw, ts)
				m.uncommitted++
			}
		})
		m.signals.FreezeIfAsked() // client_pause: records processed and not yet committed
		m.maybeCommit()           // after a freeze: the zombie's commit, sent with what it last knew
		m.cl.AllowRebalance()
	}
	if m.cfg.Commit != "auto" {
		m.commit(context.Background(), true)
	}
	m.cl.CloseAllowingRebalance() // a clean leave (rebalances are blocked between polls)
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
	m := &member{cfg: cfg, out: out, lastCommit: time.Now(), readers: gp.NewReaders(cfg.Consumer)}
	opts, err := clientOptions(cfg.Conf)
	if err != nil {
		return err
	}
	opts = append(opts, kgo.ConsumeTopics(cfg.Topic), kgo.OnPartitionsAssigned(m.onAssigned),
		kgo.OnPartitionsRevoked(m.onRevoked), kgo.OnPartitionsLost(m.onLost), kgo.WithLogger(stderrLogger()),
		// Rebalance callbacks run between polls, never beside the loop that counts and commits.
		kgo.BlockRebalanceOnPoll())
	if cfg.Commit == "auto" { // acknowledgements of the client's own commits arrive here
		opts = append(opts, kgo.AutoCommitCallback(func(_ *kgo.Client, req *kmsg.OffsetCommitRequest,
			resp *kmsg.OffsetCommitResponse, err error) {
			m.acknowledged(req, resp, err)
		}))
	}
	m.cl, err = kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	m.signals = gp.WatchSignals()
	out.Started()
	m.run()
	return nil
}
