package goprotocol

import (
	"encoding/json"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
)

// MemberOut is a group member's JSON lines (harness/clients/groups.py reads them for every library):
// started, read, commit, commit_failed and rebalance lines, appended to the file the config names.
type MemberOut struct {
	mu  sync.Mutex
	out *os.File
}

// OpenMemberOut opens the member's file for appending (a restarted member adds to it).
func OpenMemberOut(path string) (*MemberOut, error) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	return &MemberOut{out: f}, nil
}

// Line writes one line.
func (m *MemberOut) Line(row map[string]any) {
	b, err := json.Marshal(row)
	if err != nil {
		panic(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.out.Write(append(b, '\n'))
}

// Close closes the file.
func (m *MemberOut) Close() error { return m.out.Close() }

// Started says the member's process is up.
func (m *MemberOut) Started() { m.Line(map[string]any{"t": "started", "ts_ms": NowMs()}) }

// Rebalance writes an assign, revoke or lost line; an empty assignment (a member beyond the
// partitions' count) is an empty list, never null.
func (m *MemberOut) Rebalance(kind string, partitions []int32, generation int64) {
	ps := append(make([]int32, 0, len(partitions)), partitions...)
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	m.Line(map[string]any{"t": "rebalance", "kind": kind, "partitions": ps, "generation": generation, "ts_ms": NowMs()})
}

// Commit writes a partition's commit the coordinator acknowledged.
func (m *MemberOut) Commit(topic string, partition int32, offset int64, ts int64) {
	m.Line(map[string]any{"t": "commit", "topic": topic, "partition": partition, "offset": offset, "ts_ms": ts})
}

// CommitFailed writes a commit the coordinator refused or that did not complete.
func (m *MemberOut) CommitFailed(errText string, generation int64, ts int64) {
	m.Line(map[string]any{"t": "commit_failed", "error": errText, "generation": generation, "ts_ms": ts})
}

// Read writes a record the member returned.
func (m *MemberOut) Read(cfg MemberConfig, consumer string, seq int64, topic string, partition int32, offset int64,
	value string, pollTs int64, hw any, generation int64) {
	m.Line(map[string]any{"t": "read", "consumer": consumer, "seq": seq, "topic": topic, "partition": partition,
		"offset": offset, "value": value, "poll_ts_ms": pollTs, "hw": hw, "phase": "live",
		"isolation": cfg.Conf["isolation.level"], "group": cfg.Conf["group.id"], "generation": generation})
}

// Signals is how the harness acts on a member's process: SIGTERM is a clean leave (Stopping),
// SIGUSR1 a freeze between a batch and its commit (Freeze, which the member's loop takes with
// TakeFreeze and then stops itself with FreezeNow), SIGKILL a crash.
type Signals struct {
	stopping atomic.Bool
	freezing atomic.Bool
}

// WatchSignals starts listening for SIGTERM and SIGUSR1.
func WatchSignals() *Signals {
	s := &Signals{}
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGUSR1)
	go func() {
		for sig := range ch {
			if sig == syscall.SIGTERM {
				s.stopping.Store(true)
			} else {
				s.freezing.Store(true)
			}
		}
	}()
	return s
}

// Stopping says whether SIGTERM came.
func (s *Signals) Stopping() bool { return s.stopping.Load() }

// FreezeIfAsked stops the process (SIGSTOP) if a freeze was asked since the last call: the
// client_pause fault, taken where the member has processed a batch and not yet committed it.
func (s *Signals) FreezeIfAsked() {
	if s.freezing.Swap(false) {
		syscall.Kill(os.Getpid(), syscall.SIGSTOP)
	}
}

// Readers names a member's consumer column: a new name each time an assignment gives back a
// partition this process has already returned records of, since the member then reads it again
// from the group's committed offset, which may lie behind what it returned. The name counts the
// member's assignments, not the group's generation: a session that ends and joins again without a
// rebalance (sarama's Consume after an error) keeps the generation and still starts again from
// the committed offset.
type Readers struct {
	mu          sync.Mutex
	consumer    string
	assignments int64
	returned    map[int32]bool
	name        string
}

// NewReaders starts with the member's own name.
func NewReaders(consumer string) *Readers {
	return &Readers{consumer: consumer, returned: map[int32]bool{}, name: consumer}
}

// Assigned counts an assignment and renames the reader if it gives back a partition returned from.
func (r *Readers) Assigned(partitions []int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.assignments++
	for _, p := range partitions {
		if r.returned[p] {
			r.name = r.consumer + "/" + strconv.FormatInt(r.assignments, 10)
			return
		}
	}
}

// Returned records that a record of the partition was returned, and says under which name.
func (r *Readers) Returned(partition int32) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.returned[partition] = true
	return r.name
}
